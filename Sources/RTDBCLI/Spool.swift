import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A temporary file without a name for bytes a command must keep until later but not in
/// memory (the lines `push --lines` prints once its write has committed): made in `$TMPDIR`
/// (else `/tmp`) and unlinked at once, so it goes away with the process however that ends.
final class Spool {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let folder: String
    /// The bytes appended so far.
    private(set) var size: Int64 = 0
    static let chunk = 1 << 16

    init() throws {
        folder = Invocation.env("TMPDIR").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array((folder + "/rtdb-spool.XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if made < 0 { throw Spool.failure("cannot make a temporary file in \(folder)") }
        fd = made
        _ = template.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        buffer.reserveCapacity(Spool.chunk)
    }

    deinit { close(fd) }

    func append(_ bytes: [UInt8]) throws {
        buffer += bytes
        size += Int64(bytes.count)
        if buffer.count >= Spool.chunk { try writeOut() }
    }

    /// The descriptor, positioned at the start of everything appended, for reading it back
    /// (nothing may be appended after).
    func rewound() throws -> Int32 {
        try writeOut()
        if lseek(fd, 0, SEEK_SET) < 0 { throw Spool.failure("cannot read back a temporary file in \(folder)") }
        return fd
    }

    /// Hands everything appended, from the start, to `body` in pieces of about 64 KiB.
    func replay(_ body: ([UInt8]) throws -> Void) throws {
        try writeOut()
        var offset: off_t = 0
        var piece = [UInt8](repeating: 0, count: Spool.chunk)
        while true {
            let n = piece.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Spool.failure("cannot read back a temporary file in \(folder)")
            }
            if n == 0 { return }
            offset += off_t(n)
            try body(Array(piece[0..<n]))
        }
    }

    private func writeOut() throws {
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Spool.failure("cannot write a temporary file in \(folder)")
            }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    private static func failure(_ what: String) -> RTDBError {
        RTDBError(.ioError, "\(what): \(String(cString: strerror(errno)))")
    }
}
