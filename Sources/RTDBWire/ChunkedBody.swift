/// The chunked transfer coding of an HTTP/1.1 body (RFC 9112 §7.1), decoded incrementally from
/// a parser's receive buffer: requests (`HTTPRequestParser`) and responses (`HTTPResponseParser`)
/// share this one decoder and differ only in how they report its failures.
///
/// Invariant: `buffer[start...]` (the caller's) holds bytes not yet consumed; `decode` consumes
/// chunk-size lines, chunk data and the line ends after the data, appending the data to the
/// caller's body, and stops when it needs more bytes or when the trailer section is complete.
/// Everything it keeps is bounded: a chunk-size line by `maxSizeLineBytes`, the decoded body by
/// `maxBodyBytes` (checked at each chunk size, before its data arrives), the trailer section by
/// `maxTrailerBytes`.
///
/// Decisions where the RFC leaves a choice: a bare LF ends a line like CRLF; a chunk size may be
/// followed by spaces or tabs and then only by extensions (`;…`, printable text), which are
/// ignored; trailer fields are handed back as raw bytes for the caller to read or skip.
struct ChunkedDecoder: Equatable, Sendable {
    /// Longest chunk-size line (size, extensions, line end) accepted.
    static let maxSizeLineBytes = 4096

    enum State: Equatable, Sendable {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers(scanned: Int)
        case done
    }

    /// Why a chunked body cannot be read; the connection must then be closed.
    enum Failure: Error, Equatable, Sendable {
        /// A chunk-size line did not end within `maxSizeLineBytes`.
        case sizeLineTooLong(limit: Int)
        /// A chunk size that is not hexadecimal digits, or is followed by something other than
        /// spaces, tabs and an extension.
        case invalidSize
        /// A control character in a chunk extension.
        case invalidExtension
        /// The body would be longer than the limit.
        case bodyTooLarge(limit: Int)
        /// A CR after chunk data not followed by LF.
        case dataNotFollowedByCRLF
        /// More data than the chunk size announced.
        case dataLongerThanSize
        /// The trailer section is longer than the limit.
        case trailersTooLong(limit: Int)
    }

    /// Where decoding stopped.
    enum Progress: Equatable, Sendable {
        /// More bytes are needed.
        case needMore
        /// The body is complete; `trailers` are the bytes of the trailer section without its
        /// final empty line (empty when there are none).
        case complete(trailers: Range<Int>)
    }

    let maxBodyBytes: Int
    let maxTrailerBytes: Int
    private(set) var state = State.size
    /// Body bytes decoded so far.
    private(set) var decodedBytes = 0

    init(maxBodyBytes: Int, maxTrailerBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
        self.maxTrailerBytes = maxTrailerBytes
    }

    /// Consumes what it can of `buffer[start...]`, appending chunk data to `body`.
    mutating func decode(_ buffer: [UInt8], from start: inout Int, into body: inout [UInt8]) throws(Failure) -> Progress {
        while true {
            switch state {
            case .size:
                guard let line = try sizeLine(buffer, &start) else { return .needMore }
                let size = try chunkSize(buffer[line])
                state = size == 0 ? .trailers(scanned: 0) : .data(remaining: size)
            case .data(let remaining):
                let n = min(remaining, buffer.count - start)
                if n > 0 {
                    body.append(contentsOf: buffer[start..<(start + n)])
                    start += n
                    decodedBytes += n
                }
                if n < remaining {
                    state = .data(remaining: remaining - n)
                    return .needMore
                }
                state = .dataEnd
            case .dataEnd:
                guard start < buffer.count else { return .needMore }
                if buffer[start] == 0x0A {
                    start += 1
                } else if buffer[start] == 0x0D {
                    guard start + 1 < buffer.count else { return .needMore }
                    guard buffer[start + 1] == 0x0A else { throw .dataNotFollowedByCRLF }
                    start += 2
                } else {
                    throw .dataLongerThanSize
                }
                state = .size
            case .trailers(let scanned):
                guard let (fields, end) = try trailerSection(buffer, start, scanned) else { return .needMore }
                start = end
                state = .done
                return .complete(trailers: fields)
            case .done:
                return .complete(trailers: start..<start)
            }
        }
    }

    /// The next chunk-size line without its line end, consumed; nil until it is complete.
    private func sizeLine(_ buffer: [UInt8], _ start: inout Int) throws(Failure) -> Range<Int>? {
        let limit = min(buffer.count, start + ChunkedDecoder.maxSizeLineBytes)
        var i = start
        while i < limit, buffer[i] != 0x0A { i += 1 }
        guard i < limit else {
            if buffer.count - start >= ChunkedDecoder.maxSizeLineBytes { throw .sizeLineTooLong(limit: ChunkedDecoder.maxSizeLineBytes) }
            return nil
        }
        let end = i > start && buffer[i - 1] == 0x0D ? i - 1 : i
        let line = start..<end
        start = i + 1
        return line
    }

    /// Parses `HEX [ws] [; extensions]` and checks the running body size against the limit.
    private func chunkSize(_ line: ArraySlice<UInt8>) throws(Failure) -> Int {
        var size = 0
        var digits = 0
        var i = line.startIndex
        while i < line.endIndex, let v = PercentCoding.hexValue(line[i]) {
            digits += 1
            if size > (Int.max >> 4) || (size << 4 | Int(v)) > maxBodyBytes { throw .bodyTooLarge(limit: maxBodyBytes) }
            size = size << 4 | Int(v)
            i += 1
        }
        if digits == 0 { throw .invalidSize }
        while i < line.endIndex, line[i] == 0x20 || line[i] == 0x09 { i += 1 }
        if i < line.endIndex {
            guard line[i] == UInt8(ascii: ";") else { throw .invalidSize }
            for b in line[i...] where (b < 0x20 && b != 0x09) || b == 0x7F { throw .invalidExtension }
        }
        if size > maxBodyBytes - decodedBytes { throw .bodyTooLarge(limit: maxBodyBytes) }
        return size
    }

    /// The trailer section from `start`: its field lines and the index just past its final empty
    /// line, or nil while it has not all arrived (`scanned` bytes were already looked at).
    private mutating func trailerSection(_ buffer: [UInt8], _ start: Int, _ scanned: Int) throws(Failure) -> (Range<Int>, Int)? {
        // No trailer fields: the section is just an empty line.
        if start < buffer.count, buffer[start] == 0x0A { return (start..<start, start + 1) }
        if start + 1 < buffer.count, buffer[start] == 0x0D, buffer[start + 1] == 0x0A { return (start..<start, start + 2) }
        var i = start + scanned
        while i < buffer.count {
            if buffer[i] == 0x0A {
                if i + 1 >= buffer.count { break }
                if buffer[i + 1] == 0x0A { return try within(start, i + 1, i + 2) }
                if buffer[i + 1] == 0x0D {
                    if i + 2 >= buffer.count { break }
                    if buffer[i + 2] == 0x0A { return try within(start, i + 1, i + 3) }
                }
            }
            i += 1
        }
        if buffer.count - start > maxTrailerBytes { throw .trailersTooLong(limit: maxTrailerBytes) }
        state = .trailers(scanned: i - start)
        return nil
    }

    private func within(_ start: Int, _ fieldsEnd: Int, _ end: Int) throws(Failure) -> (Range<Int>, Int) {
        if end - start > maxTrailerBytes { throw .trailersTooLong(limit: maxTrailerBytes) }
        return (start..<fieldsEnd, end)
    }
}
