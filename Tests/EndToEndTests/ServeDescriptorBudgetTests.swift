import Foundation
import Testing
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One request on a connection of its own (or on `stream`), read until its head and `needle`.
private final class Raw {
    let stream: TCPStream
    var text = ""

    init(port: Int) throws {
        stream = try TCPStream.connect(host: "127.0.0.1", port: port, timeoutMillis: 5_000)
    }

    deinit { stream.close() }

    func send(_ request: String) throws {
        try Array(request.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 5_000) }
    }

    /// Reads until `text` holds `needle` (true), the connection ends or `seconds` pass.
    func read(until needle: String, seconds: Double = 10) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let deadline = Date().addingTimeInterval(seconds)
        while !text.contains(needle) && Date() < deadline {
            do {
                let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 200) }
                if n == 0 { break }
                text += String(decoding: buffer[0..<n], as: UTF8.self)
            } catch let e as NetError {
                if case .timeout = e { continue }
                break
            } catch {
                break
            }
        }
        return text.contains(needle)
    }
}

/// Under a low descriptor limit, streams on many namespaces (each following a file of its own,
/// `--data-dir`) cannot take the descriptors the server needs: every request is answered, the
/// streams past the budget of followed files with a 503 saying so, and the process stays under
/// its limit.
@Suite(.serialized) struct ServeDescriptorBudgetTests {
    @Test func aHundredStreamsOnAHundredNamespacesUnderUlimit256AreAllAnswered() throws {
        guard FileManager.default.fileExists(atPath: "/proc/self/fd") else { return }   // (counts descriptors through /proc)
        let s = Sandbox()
        let data = s.dir + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let child = try #require(s.background(["sh", "-c", "ulimit -n 256 && exec \"$RTDB\" serve --port 0 --data-dir \"$0\"", data],
                                              name: "serve"))
        defer { if child.isRunning { child.killGroup() } }
        var port = 0
        #expect(eventually(15) {
            guard let line = child.stdout.split(separator: "\n").first, let url = object(String(line))?["url"] as? String,
                  let p = url.split(separator: ":").last.flatMap({ Int($0) }) else { return false }
            port = p
            return true
        })
        try #require(port > 0, "serve did not start: \(child.stderr)")

        var streams: [Raw] = []
        var opened = 0
        var refused = 0
        for i in 0..<100 {
            let c = try Raw(port: port)
            try c.send("GET /live.json?ns=ns\(i) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
            #expect(c.read(until: "\r\n\r\n"), "stream \(i) was not answered")
            if c.text.hasPrefix("HTTP/1.1 200") {
                opened += 1
            } else if c.text.hasPrefix("HTTP/1.1 503") {
                #expect(c.read(until: "too many databases followed at once"), "\(c.text)")
                refused += 1
            }
            streams.append(c)
        }
        #expect(opened + refused == 100)
        #expect(opened >= 8, "only \(opened) streams opened")
        #expect(refused > 0, "a limit of 256 cannot follow 100 files")

        // A PUT on each namespace, on one connection: every one answered 200.
        let writer = try Raw(port: port)
        for i in 0..<100 {
            writer.text = ""
            try writer.send("PUT /live.json?ns=ns\(i) HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n1")
            #expect(writer.read(until: "\r\n\r\n1") && writer.text.hasPrefix("HTTP/1.1 200"), "PUT \(i): \(writer.text.prefix(200))")
        }
        // The streams that opened got their PUT.
        for c in streams where c.text.hasPrefix("HTTP/1.1 200") {
            #expect(c.read(until: "\"data\":1"), "a stream missed its write")
        }
        // A new client is answered at once, and the process is under its limit.
        let late = try Raw(port: port)
        try late.send("GET /live.json?ns=ns5 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(late.read(until: "\r\n\r\n1", seconds: 5) && late.text.hasPrefix("HTTP/1.1 200"), "\(late.text)")
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(child.pid)/fd").count) ?? 0
        #expect(fds > 0 && fds < 256, "\(fds) descriptors in use")
        print("ulimit -n 256: \(opened) streams opened, \(refused) refused with 503, \(fds) descriptors in use")
    }

    @Test func aConnectionPastMaxConnectionsIsToldSo() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, ["--max-connections", "2"]))
        let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
        var held: [Raw] = []
        for _ in 0..<2 {
            let c = try Raw(port: port)
            try c.send("GET /x.json HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(c.read(until: "null"))
            held.append(c)
        }
        let extra = try Raw(port: port)
        #expect(extra.read(until: "too many connections", seconds: 5), "\(extra.text)")
        #expect(extra.text.hasPrefix("HTTP/1.1 503"))
        // The two held are unharmed.
        held[0].text = ""
        try held[0].send("GET /x.json HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(held[0].read(until: "null") && held[0].text.hasPrefix("HTTP/1.1 200"))
    }
}
