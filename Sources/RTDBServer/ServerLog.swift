import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's stderr lines, one JSON object each: a line per request with `--log`, and the
/// events worth telling whatever the options (errors, refused onDisconnect writes).
struct ServerLog {
    /// Whether requests are logged (`--log`).
    let requests: Bool

    /// `{"method":…,"path":…,"status":…,"ms":…}`; the path only, since query strings can carry
    /// credentials, and its first 200 characters at most (a client's input is never logged at
    /// length). `started` is when the request began to be served (monotonic nanoseconds).
    func request(_ req: HTTPRequest, status: Int, started: UInt64) {
        guard requests else { return }
        let ms = Double(monotonicNanos() - started) / 1e6
        line(#"{"method":"# + ServerLog.quoted(Limits.cut(req.method, 200)) + #","path":"# + ServerLog.quoted(Limits.cut(req.rawPath, 200))
             + #","status":\#(status),"ms":"# + JSONWriter.format((ms * 1000).rounded() / 1000) + "}")
    }

    /// `{"event":NAME,…}` with string members, in order.
    func event(_ name: String, _ members: [(String, String)] = []) {
        var s = #"{"event":"# + ServerLog.quoted(name)
        for (k, v) in members { s += "," + ServerLog.quoted(k) + ":" + ServerLog.quoted(v) }
        line(s + "}")
    }

    /// `{"event":"error","message":…}`.
    func error(_ message: String) { event("error", [("message", message)]) }

    /// A TLS failure, with `--log` only (clients that do not speak TLS are common).
    func tlsFailure(_ why: String) {
        guard requests else { return }
        event("tls_error", [("message", why)])
    }

    func line(_ s: String) {
        var bytes = Array(s.utf8)
        bytes.append(10)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { p in write(2, p.baseAddress.map { $0 + off }, p.count - off) }
            if n <= 0 { break }
            off += n
        }
    }

    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        JSONWriter.appendString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
