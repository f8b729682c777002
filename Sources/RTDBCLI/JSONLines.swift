import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The values of JSON lines read from a descriptor (`push --lines`), one at a time, each
/// checked as a value written at `sample`: memory holds one line and one read buffer, however
/// long the input. Blank lines are skipped; a line that is not a valid value is an error that
/// names it (line numbers count from 1, blank lines included); a line longer than the write
/// limit is refused as it is read, and so is a line with a raw control character (never valid
/// in JSON text: 300 MB of zero bytes is invalid JSON at its first byte), without reading the
/// rest of it.
final class JSONLines {
    private let fd: Int32
    private let what: String
    let sample: Path
    private var buffer: [UInt8] = []
    /// One read's worth.
    private var piece = [UInt8](repeating: 0, count: JSONLines.chunk)
    /// Where the next line starts in `buffer`.
    private var start = 0
    /// How far `buffer` was searched for a line end.
    private var scanned = 0
    private var atEnd = false
    /// The number of the last line read.
    private(set) var lineNumber = 0
    /// Bytes read from the descriptor so far.
    private(set) var bytesRead: Int64 = 0
    static let chunk = 1 << 16

    init(fd: Int32, what: String, sample: Path) {
        self.fd = fd
        self.what = what
        self.sample = sample
    }

    /// The size of the input when it is a regular file (for a progress line), else nil.
    var size: Int64? {
        var st = stat()
        guard fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(st.st_size) - Int64(max(lseek(fd, 0, SEEK_CUR), 0))
    }

    /// The next value and its line's text, nil at the end of the input. (The text shares the
    /// read buffer: let it go before the next call, or reading on copies the buffer.)
    func next() throws -> (value: Node, text: ArraySlice<UInt8>)? {
        while let line = try nextLine() {
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            do {
                let value = try line.withUnsafeBufferPointer { try JSONReader.parse($0) }
                try WriteCheck.value(value, at: sample)
                return (value, line)
            } catch let e as RTDBError {
                throw RTDBError(e.code, "line \(lineNumber): \(e.message)")
            }
        }
        return nil
    }

    /// The next line without its line end, nil at the end of the input.
    private func nextLine() throws -> ArraySlice<UInt8>? {
        while true {
            if let end = lineEnd(from: scanned) {
                let line = buffer[start..<end]
                start = end + 1
                scanned = start
                return counted(line)
            }
            try refuseControlBytes(from: scanned)
            scanned = buffer.count
            if atEnd {
                if start >= buffer.count { return nil }
                let line = buffer[start...]
                start = buffer.count
                scanned = start
                return counted(line)
            }
            try fill()
        }
    }

    /// The line so far (from `start`) holds a control character after `from`: it is invalid
    /// JSON there, or before; the error is the one the whole line would give.
    private func refuseControlBytes(from: Int) throws {
        let found: Int? = buffer.withUnsafeBufferPointer { all in
            var i = from
            while i < all.count {
                let b = all[i]
                if b < 0x20 && b != 0x09 && b != 0x0D { return i }
                i += 1
            }
            return nil
        }
        guard let bad = found else { return }
        let number = lineNumber + 1
        let line = buffer[start...bad]
        do {
            _ = try line.withUnsafeBufferPointer { try JSONReader.parse($0) }
        } catch let e as RTDBError {
            throw RTDBError(e.code, "line \(number): \(e.message)")
        }
        throw RTDBError(.invalidJSON, "line \(number): invalid JSON at byte \(bad - start): a control character")
    }

    /// Where the next line end is in `buffer` after `from` (memchr: a long line is scanned at
    /// memory speed).
    private func lineEnd(from: Int) -> Int? {
        buffer.withUnsafeBufferPointer { all in
            guard from < all.count, let base = all.baseAddress,
                  let hit = memchr(base + from, 0x0A, all.count - from) else { return nil }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        }
    }

    private func counted(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        lineNumber += 1
        // A byte-order mark before the first line is not part of it.
        if lineNumber == 1 && line.starts(with: [0xEF, 0xBB, 0xBF]) { return line.dropFirst(3) }
        return line
    }

    /// Reads more input after what is buffered, dropping the lines already handed out.
    private func fill() throws {
        if start > 0 {
            buffer.removeSubrange(..<start)
            scanned -= start
            start = 0
        }
        if buffer.count > Limits.maxWriteBytes {
            throw RTDBError(.tooLarge, "line \(lineNumber + 1) of \(what) is larger than the write limit of \(Limits.maxWriteBytes) bytes")
        }
        // A long line grows the buffer once to the limit, not by doublings (each a copy).
        if buffer.count >= 16 << 20 && buffer.capacity < Limits.maxWriteBytes + JSONLines.chunk {
            buffer.reserveCapacity(Limits.maxWriteBytes + JSONLines.chunk + 1)
        }
        while true {
            let n = piece.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RTDBError(.ioError, "cannot read \(what): \(String(cString: strerror(errno)))")
            }
            buffer.append(contentsOf: piece[0..<n])
            bytesRead += Int64(n)
            if n == 0 { atEnd = true }
            return
        }
    }
}
