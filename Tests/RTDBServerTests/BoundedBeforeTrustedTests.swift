import Foundation
import Testing
import RTDBRules
@testable import RTDBNet
@testable import RTDBServer

/// A raw client of an in-process server: what an attacker sends, byte by byte.
private final class RawClient {
    let stream: TCPStream
    private(set) var sent = 0
    private(set) var received: [UInt8] = []
    /// The server closed the connection.
    private(set) var ended = false

    init(_ server: Server) throws {
        stream = try TCPStream.connect(host: "127.0.0.1", port: server.port, timeoutMillis: 5_000)
    }

    deinit { stream.close() }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try stream.write($0, timeoutMillis: 5_000) }
        sent += bytes.count
    }

    /// Reads what arrives within `millis` (nothing: a timeout, which is no error here); false
    /// once the server has closed the connection.
    @discardableResult
    func read(millis: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        do {
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: millis) }
            if n == 0 { ended = true; return false }
            received += buffer[0..<n]
            return true
        } catch let e as NetError {
            if case .timeout = e { return true }
            ended = true
            return false
        } catch {
            ended = true
            return false
        }
    }

    /// Reads until the server closes the connection or `seconds` pass; whether it closed.
    func closes(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !ended && Date() < deadline { read(millis: 100) }
        return ended
    }

    var text: String { String(decoding: received, as: UTF8.self) }

    /// Reads until `text` holds `needle` or `seconds` pass.
    func read(until needle: String, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !text.contains(needle) && Date() < deadline {
            if !read(millis: 100) { break }
        }
        return text.contains(needle)
    }
}

private func withServer(_ configure: (inout Server.Options) -> Void, security: SecurityOptions = SecurityOptions(),
                        _ body: (Server) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-bounded-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var options = Server.Options()
    options.port = 0
    configure(&options)
    let server = try Server(options: options, namespaces: ServerNamespaces(file: dir + "/a.db", timeoutSeconds: 5), watchFolder: nil,
                            security: security)
    try whileRunning(server) { try body(server) }
}

/// Requests are bounded before they are trusted: a credential is judged from the head, before
/// the body is read; bodies in flight have a total across connections; a client that trickles
/// is dropped; listens have a total across connections.
@Suite(.serialized) struct BoundedBeforeTrustedTests {
    static let fiftyMB = 52_428_800

    @Test func anUnauthorisedFiftyMegabytePutIsRefusedBeforeItsBodyIsSent() throws {
        try withServer({ $0.secret = "s3cret" }) { server in
            let c = try RawClient(server)
            try c.send("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: \(Self.fiftyMB)\r\n\r\n")
            // The body is sent in 64 KiB pieces until the answer comes.
            let piece = [UInt8](repeating: 0x31, count: 65_536)
            while c.sent < Self.fiftyMB && !c.text.contains("\r\n\r\n") {
                do { try c.send(piece) } catch { break }   // (the server may close while we send)
                c.read(millis: 1)
            }
            #expect(c.read(until: "Unauthorized") || c.text.contains("Permission denied"))
            #expect(c.text.hasPrefix("HTTP/1.1 401"), "\(c.text.prefix(200))")
            #expect(c.text.lowercased().contains("connection: close"))
            // The answer came after at most the head and a few pieces: nowhere near 50 MB.
            #expect(c.sent < 2 << 20, "sent \(c.sent) bytes before the answer")
            print("unauthorised 50 MB PUT: answered after \(c.sent) bytes sent")
        }
    }

    @Test func aWrongSecretIsRefusedBeforeTheBodyAndTheRightOneIsServed() throws {
        try withServer({ $0.secret = "s3cret" }) { server in
            let wrong = try RawClient(server)
            try wrong.send("PUT /a.json?auth=guess HTTP/1.1\r\nHost: x\r\nContent-Length: \(Self.fiftyMB)\r\n\r\n")
            #expect(wrong.read(until: "\r\n\r\n"))
            #expect(wrong.text.hasPrefix("HTTP/1.1 401"))
            #expect(wrong.sent < 200)

            // A GET pipelined before the refused write is answered first.
            let piped = try RawClient(server)
            try piped.send("GET /a.json?auth=s3cret HTTP/1.1\r\nHost: x\r\n\r\nPUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: \(Self.fiftyMB)\r\n\r\n")
            #expect(piped.read(until: "HTTP/1.1 401"))
            #expect(piped.text.hasPrefix("HTTP/1.1 200"))

            let right = try RawClient(server)
            try right.send("PUT /a.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nContent-Length: 2\r\n\r\n42")
            #expect(right.read(until: "42"))
            #expect(right.text.hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test func aWriteRulesMightAllowIsReadAsUsual() throws {
        var security = SecurityOptions()
        security.rules = try RuleSet(#"{"rules":{"open":{".read":true,".write":true}}}"#)
        try withServer({ $0.secret = "s3cret" }, security: security) { server in
            // Anonymous, under rules that let anyone write /open: not refused from its head.
            let open = try RawClient(server)
            try open.send("PUT /open.json HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n")
            usleep(100_000)
            try open.send("42")
            #expect(open.read(until: "42"))
            #expect(open.text.hasPrefix("HTTP/1.1 200"), "\(open.text.prefix(200))")
            // A bearer that is not the secret is refused under rules whatever the path: at once.
            let bearer = try RawClient(server)
            try bearer.send("PUT /open.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer guess\r\nContent-Length: \(Self.fiftyMB)\r\n\r\n")
            #expect(bearer.read(until: "\r\n\r\n"))
            #expect(bearer.text.hasPrefix("HTTP/1.1 401"))
            #expect(bearer.closes(within: 5))
        }
    }

    @Test func aChunkedBodyPastTheTotalIsAnswered503() throws {
        try withServer({ $0.maxBodyBytesInFlight = 100_000 }) { server in
            let c = try RawClient(server)
            try c.send("PUT /a.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = "8000\r\n" + String(repeating: "a", count: 0x8000) + "\r\n"
            for _ in 0..<4 where !c.text.contains("\r\n\r\n") {
                do { try c.send(chunk) } catch { break }
                c.read(millis: 50)
            }
            #expect(c.read(until: "too many request bodies"))
            #expect(c.text.hasPrefix("HTTP/1.1 503"))
        }
    }

    @Test func bodiesInFlightPastTheTotalAreAnswered503() throws {
        try withServer({ $0.maxBodyBytesInFlight = 1_000_000 }) { server in
            let first = try RawClient(server)
            try first.send("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 600002\r\n\r\n\"")
            first.read(millis: 200)
            let second = try RawClient(server)
            try second.send("PUT /b.json HTTP/1.1\r\nHost: x\r\nContent-Length: 600002\r\n\r\n")
            #expect(second.read(until: "\r\n\r\n"))
            #expect(second.text.hasPrefix("HTTP/1.1 503"), "\(second.text.prefix(200))")
            #expect(second.read(until: "too many request bodies"))
            #expect(second.closes(within: 5))
            // The first finishes; its bytes are given back, and a third fits again.
            try first.send(Array(repeating: 0x61, count: 600_000) + Array("\"".utf8))
            #expect(first.read(until: "HTTP/1.1 200"))
            let third = try RawClient(server)
            try third.send("PUT /c.json HTTP/1.1\r\nHost: x\r\nContent-Length: 600002\r\n\r\n\"" + String(repeating: "b", count: 600_000) + "\"")
            #expect(third.read(until: "HTTP/1.1 200"))
        }
    }

    @Test func aTricklingClientIsDroppedWithinTheDocumentedTime() throws {
        try withServer({ _ in }) { server in
            let c = try RawClient(server)
            let started = Date()
            try c.send("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n\"")
            // One byte a second: the idle timeout alone would never end it.
            var open = true
            while open && Date().timeIntervalSince(started) < 20 {
                do { try c.send("a") } catch { break }
                open = c.read(millis: 1_000)
                if c.text.contains("\r\n\r\n") { break }
            }
            let elapsed = Date().timeIntervalSince(started)
            #expect(c.read(until: "too slowly"))
            #expect(c.text.hasPrefix("HTTP/1.1 408"), "\(c.text.prefix(200))")
            // The window is 10 s; the server looks once a second.
            #expect(elapsed >= 9 && elapsed < 13, "dropped after \(elapsed) s")
            print("trickling client dropped after \(elapsed) s")
        }
    }

    @Test func aSteadyClientSendingAboveTheMinimumIsNotDropped() throws {
        try withServer({ _ in }) { server in
            let c = try RawClient(server)
            let total = 12 * 4_096 * 3 + 2
            try c.send("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: \(total)\r\n\r\n\"")
            // 12 KiB a second for 12 s: slow, but above 1 KiB/s.
            for _ in 0..<36 {
                try c.send(Array(repeating: 0x61, count: 4_096))
                c.read(millis: 333)
            }
            try c.send("\"")
            #expect(c.read(until: "HTTP/1.1 200"), "\(c.text.prefix(200))")
        }
    }

    @Test func streamsPastTheTotalOfListensAreAnswered503() throws {
        try withServer({ $0.maxListens = 3 }) { server in
            var streams: [RawClient] = []
            for i in 0..<3 {
                let c = try RawClient(server)
                try c.send("GET /s\(i).json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
                #expect(c.read(until: "event: put"))
                #expect(c.text.hasPrefix("HTTP/1.1 200"))
                streams.append(c)
            }
            let past = try RawClient(server)
            try past.send("GET /s9.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
            #expect(past.read(until: "too many listens on this server"))
            #expect(past.text.hasPrefix("HTTP/1.1 503"), "\(past.text.prefix(200))")
            #expect(past.text.contains(#"{"error":"#))
            // One closes: its place is free again.
            streams.removeFirst()
            var opened = false
            for _ in 0..<50 where !opened {
                let again = try RawClient(server)
                try again.send("GET /s9.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
                _ = again.read(until: "\r\n\r\n", seconds: 2)
                opened = again.text.hasPrefix("HTTP/1.1 200")
                if opened { streams.append(again) } else { usleep(50_000) }
            }
            #expect(opened)
        }
    }

    @Test func realtimeListensPastTheTotalAreAnsweredWithAFailure() throws {
        let bench = try RealtimeBench()
        bench.handler.budget = StreamBudget(maxListens: 2)
        let first = bench.answer(#"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/a","h":""}}}"#)
        let second = bench.answer(#"{"t":"d","d":{"r":2,"a":"q","b":{"p":"/b","h":""}}}"#)
        #expect(first.last?.contains(#""s":"ok""#) == true)
        #expect(second.last?.contains(#""s":"ok""#) == true)
        let third = bench.answer(#"{"t":"d","d":{"r":3,"a":"q","b":{"p":"/c","h":""}}}"#)
        #expect(third.count == 1)
        #expect(third.first?.contains(#""s":"failure""#) == true, "\(third)")
        #expect(third.first?.contains("too many listens on this server (at most 2)") == true)
        #expect(bench.session.listens.count == 2)
        // Listening again where it already listens takes no new place.
        let again = bench.answer(#"{"t":"d","d":{"r":4,"a":"q","b":{"p":"/a","h":""}}}"#)
        #expect(again.last?.contains(#""s":"ok""#) == true)
    }
}
