import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command's JSON input (`-`, `--file`): read whole when it is small, or left open to be
/// streamed into a database that can take it so (the embedded file: no size limit, bounded
/// memory) when it is larger than `streamAbove`.
enum JSONInput {
    case whole([UInt8])
    case large(LargeInput)

    /// Inputs larger than this are streamed where the target can take a stream. Below it the
    /// input is parsed whole (a value costs a few times its text in memory).
    static let streamAbove = 16 << 20

    /// Opens the input of `source` (nil for sources that are not JSON text); stdin and files
    /// larger than `streamAbove` bytes are left open as a stream.
    static func open(_ source: ValueInput.ValueSource, streamAbove: Int = JSONInput.streamAbove) throws -> JSONInput? {
        switch source {
        case .json(let text):
            if text.utf8.count > Limits.maxWriteBytes { throw RTDBError(.tooLarge, "the value is larger than the write limit") }
            return .whole(Array(text.utf8))
        case .stdin:
            return try open(fd: 0, what: "stdin", owned: false, streamAbove: streamAbove)
        case .file(let f):
            let fd = openForReading(f)
            if fd < 0 {
                let e = errno
                throw RTDBError(e == EACCES ? .permissionDenied : .ioError, "cannot read \(f): \(String(cString: strerror(e)))")
            }
            do { return try open(fd: fd, what: f, owned: true, streamAbove: streamAbove) } catch { close(fd); throw error }
        case .string, .serverTimestamp:
            return nil
        }
    }

    private static func open(fd: Int32, what: String, owned: Bool, streamAbove: Int) throws -> JSONInput {
        var st = stat()
        if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG {
            let remaining = Int64(st.st_size) - Int64(max(lseek(fd, 0, SEEK_CUR), 0))
            if remaining > Int64(streamAbove) {
                return .large(LargeInput(fd: fd, what: what, prefix: [], size: remaining, owned: owned))
            }
            defer { if owned { close(fd) } }
            return .whole(try readAll(fd: fd, limit: Limits.maxWriteBytes, what: what))
        }
        // A pipe: read up to the threshold to learn which it is.
        var prefix: [UInt8] = []
        prefix.reserveCapacity(1 << 16)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while prefix.count <= streamAbove {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RTDBError(.ioError, "cannot read \(what): \(String(cString: strerror(errno)))")
            }
            if n == 0 {
                if owned { close(fd) }
                if prefix.starts(with: [0xEF, 0xBB, 0xBF]) { prefix.removeFirst(3) }
                return .whole(prefix)
            }
            prefix.append(contentsOf: chunk[0..<n])
        }
        return .large(LargeInput(fd: fd, what: what, prefix: prefix, size: nil, owned: owned))
    }
}

/// An input too large to read whole by default, still open.
final class LargeInput {
    let fd: Int32
    let what: String
    let prefix: [UInt8]
    /// The size when known (a regular file).
    let size: Int64?
    private let owned: Bool

    init(fd: Int32, what: String, prefix: [UInt8], size: Int64?, owned: Bool) {
        self.fd = fd
        self.what = what
        self.prefix = prefix
        self.size = size
        self.owned = owned
    }

    deinit { if owned { close(fd) } }

    /// The input as a stream.
    func source() -> DescriptorSource {
        DescriptorSource(fd: fd, what: what, prefix: prefix, size: size)
    }

    /// The whole input, for a target that takes one request (a remote server): refused past
    /// the write limit, as it always was.
    func whole() throws -> [UInt8] {
        try readAll(fd: fd, limit: Limits.maxWriteBytes, what: what, prefix: prefix)
    }
}

/// open(2) for reading, named apart from `JSONInput.open`.
private func openForReading(_ path: String) -> Int32 {
    open(path, O_RDONLY)
}
