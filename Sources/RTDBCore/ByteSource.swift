#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a streamed input comes from: a file or stdin read piece by piece, so that an input of
/// any size costs only the reader's window in memory (JSONStreamReader.swift).
public protocol ByteSource: AnyObject {
    /// Reads up to `count` bytes into `buffer`; 0 at the end of the input.
    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws -> Int
    /// The size of the whole input when it is known in advance (a regular file), for progress.
    var size: Int64? { get }
}

/// A file descriptor as a byte source, after bytes already read from it (`prefix`: what a
/// caller read to decide that the input is large). A UTF-8 byte order mark at the start is
/// skipped, as the whole-input readers skip it.
public final class DescriptorSource: ByteSource {
    let fd: Int32
    let what: String
    public let size: Int64?
    private var prefix: [UInt8]
    private var prefixUsed = 0
    private var started = false

    /// `what` names the input in errors ("stdin", a file name).
    public init(fd: Int32, what: String, prefix: [UInt8] = [], size: Int64? = nil) {
        self.fd = fd
        self.what = what
        self.prefix = prefix
        self.size = size
    }

    public func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws -> Int {
        var n = try readRaw(into: buffer, count: count)
        if !started && n > 0 {
            started = true
            // A byte order mark is three bytes; read until they are all here or the input ends.
            while n < 3 && n < count {
                let more = try readRaw(into: buffer + n, count: count - n)
                if more == 0 { break }
                n += more
            }
            if n >= 3 && buffer[0] == 0xEF && buffer[1] == 0xBB && buffer[2] == 0xBF {
                memmove(buffer, buffer + 3, n - 3)
                n -= 3
                if n == 0 { return try read(into: buffer, count: count) }
            }
        }
        return n
    }

    private func readRaw(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws -> Int {
        if prefixUsed < prefix.count {
            let n = min(count, prefix.count - prefixUsed)
            prefix.withUnsafeBufferPointer { p in
                buffer.update(from: p.baseAddress! + prefixUsed, count: n)
            }
            prefixUsed += n
            if prefixUsed == prefix.count { prefix = []; prefixUsed = 0 }
            return n
        }
        while true {
            let n = systemRead(fd, buffer, count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw RTDBError(.ioError, "cannot read \(what): \(String(cString: strerror(errno)))")
        }
    }
}

/// read(2), named apart from the protocol's `read` that the classes here define.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ count: Int) -> Int {
    read(fd, buffer, count)
}

/// Bytes in memory as a byte source (tests, and inputs already read whole).
public final class BytesSource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0
    public var size: Int64? { Int64(bytes.count) }

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The bytes in place, for a reader that need not copy them (`JSONStreamReader(borrowing:)`).
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer(body)
    }

    public func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws -> Int {
        let n = min(count, bytes.count - offset)
        if n > 0 {
            bytes.withUnsafeBufferPointer { p in buffer.update(from: p.baseAddress! + offset, count: n) }
            offset += n
        }
        return n
    }
}
