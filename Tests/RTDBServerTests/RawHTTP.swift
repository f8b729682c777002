import Foundation
import RTDBNet
@testable import RTDBServer

/// A connection to `server`, as any client makes one.
func connect(_ server: Server) throws -> TCPStream {
    try TCPStream.connect(host: "127.0.0.1", port: server.port, timeoutMillis: 5_000)
}

/// One HTTP/1.1 exchange on a kept-alive connection: the status and the body.
func exchange(_ stream: TCPStream, _ method: String, _ path: String, _ body: String = "",
              headers: [(String, String)] = []) throws -> (Int, String) {
    let extra = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
    let text = "\(method) \(path) HTTP/1.1\r\nHost: x\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    try Array(text.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 30_000) }
    var got: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 30_000) }
        if n == 0 { throw NetError.system("read", 0) }
        got += buffer[0..<n]
        let all = String(decoding: got, as: UTF8.self)
        guard let headEnd = all.range(of: "\r\n\r\n") else { continue }
        let head = all[..<headEnd.lowerBound]
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        let rest = all[headEnd.upperBound...]
        if rest.utf8.count < length { continue }
        return (Int(head.split(separator: " ")[1]) ?? 0, String(rest))
    }
}

/// An SSE stream on `path` of `server`, read event by event (keep-alives skipped).
final class SSEClient {
    let stream: TCPStream
    private var pending: [UInt8] = []

    init(_ server: Server, _ path: String) throws {
        stream = try connect(server)
        let text = "GET \(path) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
        try Array(text.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 5_000) }
    }

    deinit { stream.close() }

    /// The next event as `name data`, or nil when none came within `seconds`.
    func next(within seconds: Double = 30) throws -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let text = String(decoding: pending, as: UTF8.self)
            if let end = text.range(of: "\n\n") {
                let block = String(text[..<end.lowerBound])
                pending = Array(text[end.upperBound...].utf8)
                var name = "", data = ""
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                }
                if name == "keep-alive" || name.isEmpty { continue }
                return "\(name) \(data)"
            }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return nil }
            let n: Int
            do {
                n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: Int(left * 1000) + 1) }
            } catch NetError.timeout { return nil }
            if n == 0 { return nil }
            pending += buffer[0..<n]
            // The response head comes first: drop it.
            if let head = String(decoding: pending, as: UTF8.self).range(of: "\r\n\r\n"),
               String(decoding: pending.prefix(5), as: UTF8.self) == "HTTP/" {
                pending = Array(String(decoding: pending, as: UTF8.self)[head.upperBound...].utf8)
            }
        }
    }
}

/// Reads from `stream` until what arrived holds `needle` (or five seconds pass).
func receive(_ stream: TCPStream, until needle: String) throws -> String {
    try receive(stream) { $0.contains(needle) }
}

/// Reads from `stream` until what arrived satisfies `done` (or five seconds pass).
func receive(_ stream: TCPStream, until done: (String) -> Bool) throws -> String {
    var got: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    let deadline = Date().addingTimeInterval(5)
    while !done(String(decoding: got, as: UTF8.self)) && Date() < deadline {
        let n: Int
        do { n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 200) } } catch NetError.timeout {
            continue
        }
        if n == 0 { break }
        got += buffer[0..<n]
    }
    return String(decoding: got, as: UTF8.self)
}
