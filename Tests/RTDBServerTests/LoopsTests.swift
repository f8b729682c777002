import Foundation
import Testing
import RTDBEngine
@testable import RTDBNet
@testable import RTDBServer

/// `rtdb serve` on more than one loop (FrontLoop.swift): the writer's loop accepts and keeps
/// every other connection; the others go to a front loop, which answers their reads, sends
/// their writes to the writer's group commit, and moves to the writer a connection that opens
/// a stream or a realtime session or asks for a large read or write. Whatever loop serves a
/// client, it sees the same data, the same rules and the same order of answers.
@Suite(.serialized) struct LoopsTests {
    /// A server with two loops on a fresh file, for `body`.
    func withTwoLoops(_ configure: (inout Server.Options) -> Void = { _ in }, _ body: (Server) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-loops-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = Server.Options()
        options.port = 0
        options.loops = 2
        configure(&options)
        let server = try Server(options: options, namespaces: ServerNamespaces(file: dir + "/a.db", timeoutSeconds: 5),
                                watchFolder: nil)
        try whileRunning(server) { try body(server) }
    }

    /// Connections made one after the other: the writer keeps the first, the front loop gets
    /// the second, and so on in turn.
    func connections(_ server: Server, _ n: Int) throws -> [TCPStream] {
        var made: [TCPStream] = []
        for _ in 0..<n {
            made.append(try connect(server))
            // Served (and so placed) before the next one connects.
            #expect(try exchange(made.last!, "GET", "/.json").0 == 200)
        }
        return made
    }

    @Test func everyLoopSeesTheWritesOfTheOthersOnceTheyAreAnswered() throws {
        try withTwoLoops { server in
            let clients = try connections(server, 4)
            #expect(server.core.open.toFronts == 2)
            for (i, c) in clients.enumerated() {
                #expect(try exchange(c, "PUT", "/k/\(i).json", "\(i)") == (200, "\(i)"))
            }
            for c in clients {
                #expect(try exchange(c, "GET", "/k.json") == (200, "[0,1,2,3]"))
            }
            // A write answered on one loop is read on the other at once, over and over.
            for n in 0..<50 {
                #expect(try exchange(clients[n % 2], "PUT", "/n.json", "\(n)").0 == 200)
                #expect(try exchange(clients[(n + 1) % 2], "GET", "/n.json") == (200, "\(n)"))
            }
            #expect(server.core.open.toWriter == 0)
        }
    }

    @Test func pipelinedRequestsOnAFrontLoopAreAnsweredInOrder() throws {
        try withTwoLoops { server in
            let clients = try connections(server, 2)
            var text = ""
            for i in 1...5 {
                text += "PUT /p.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n\(i)"
                text += "GET /p.json HTTP/1.1\r\nHost: x\r\n\r\n"
            }
            try Array(text.utf8).withUnsafeBytes { try clients[1].write($0, timeoutMillis: 5_000) }
            let got = try receive(clients[1]) { $0.components(separatedBy: "HTTP/1.1 ").count == 11 && $0.hasSuffix("\r\n\r\n5") }
            // Ten answers, each read after the write before it: 1 1 2 2 … 5 5.
            let bodies = got.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.components(separatedBy: "\r\n\r\n").last ?? "" }
            #expect(bodies == ["1", "1", "2", "2", "3", "3", "4", "4", "5", "5"])
            #expect(got.components(separatedBy: "HTTP/1.1 200").count == 11)
        }
    }

    @Test func aStreamOpenedOnAFrontLoopMovesToTheWriterAndGetsLaterWrites() throws {
        try withTwoLoops { server in
            let clients = try connections(server, 2)
            #expect(try exchange(clients[0], "PUT", "/s.json", "1").0 == 200)
            // The front loop's client asks for a stream on the connection it has used already,
            // in a second Accept header (as rtdb's own client does).
            let ask = "GET /s.json HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nAccept: text/event-stream\r\n\r\n"
            try Array(ask.utf8).withUnsafeBytes { try clients[1].write($0, timeoutMillis: 5_000) }
            let opening = try receive(clients[1], until: "\"data\":1}")
            #expect(opening.hasPrefix("HTTP/1.1 200"), "\(opening.prefix(200))")
            #expect(opening.contains("event: put\ndata: {\"path\":\"/\",\"data\":1}"))
            #expect(server.core.open.toWriter == 1)
            // A write on another loop's connection reaches it.
            #expect(try exchange(clients[0], "PUT", "/s.json", "2").0 == 200)
            #expect(try receive(clients[1], until: "\"data\":2}").contains("event: put\ndata: {\"path\":\"/\",\"data\":2}"))
        }
    }

    @Test func aRealtimeSessionOpenedOnAFrontLoopMovesToTheWriter() throws {
        try withTwoLoops { server in
            let clients = try connections(server, 2)
            let ask = "GET /.ws?v=5&ns=fake-server HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            try Array(ask.utf8).withUnsafeBytes { try clients[1].write($0, timeoutMillis: 5_000) }
            let hello = try receive(clients[1], until: "\"h\":")
            #expect(hello.hasPrefix("HTTP/1.1 101"), "\(hello.prefix(200))")
            // The server's hello frame names the session.
            #expect(hello.contains("\"t\":\"h\""))
            #expect(server.core.open.toWriter == 1)
        }
    }

    @Test func aLargeWriteAndALargeReadOnAFrontLoopAreServedByTheWriter() throws {
        try withTwoLoops { server in
            let clients = try connections(server, 2)
            let big = "\"" + String(repeating: "x", count: DetachedWrites.threshold + 10) + "\""
            #expect(try exchange(clients[1], "PUT", "/big.json", big).0 == 200)
            #expect(server.core.open.toWriter == 1)
            // The connection stays with the writer: its next large read is the writer's too.
            let (status, body) = try exchange(clients[1], "GET", "/big.json")
            #expect(status == 200 && body == big)
            #expect(server.core.open.toWriter == 1)
            // A large read on another front connection moves that one.
            let more = try connections(server, 2)
            #expect(try exchange(more[1], "GET", "/big.json") == (200, big))
            #expect(server.core.open.toWriter == 2)
        }
    }

    @Test func rulesPutOnOneLoopGovernTheOtherAtOnce() throws {
        try withTwoLoops { server in
            let clients = try connections(server, 2)
            #expect(try exchange(clients[1], "PUT", "/secret.json", "1").0 == 200)
            #expect(try exchange(clients[1], "GET", "/secret.json") == (200, "1"))
            let rules = #"{"rules":{"open":{".read":true},"secret":{".read":"auth != null"}}}"#
            // (Without a secret, the emulator's `Authorization: Bearer owner` is the admin.)
            #expect(try exchange(clients[0], "PUT", "/.settings/rules.json", rules, headers: [("Authorization", "Bearer owner")]).0 == 200)
            #expect(try exchange(clients[1], "GET", "/secret.json").0 == 401)
            #expect(try exchange(clients[1], "GET", "/open.json").0 == 200)
            // Both loops count coverage into the same rules: the front loop's refusal is in the
            // writer's report.
            let (_, coverage) = try exchange(clients[0], "GET", "/.inspect/coverage.json", headers: [("Authorization", "Bearer owner")])
            #expect(coverage.contains("\"expression\":\"auth != null\",\"line\""), "\(coverage)")
            #expect(coverage.contains("\"evaluations\":1,\"true\":0,\"false\":1"), "\(coverage)")
        }
    }

    @Test func aClientThatLeavesWithWritesInTheWritersBatchLeavesEveryLoopServing() throws {
        var stopAsked = Date()
        try withTwoLoops { server in
            let clients = try connections(server, 2)
            // 200 pipelined writes from the front loop's client, which leaves once the first is
            // answered: the next ones are with the writer, or queued, when its socket closes.
            var burst = ""
            for i in 0..<200 { burst += "PUT /gone.json HTTP/1.1\r\nHost: x\r\nContent-Length: \(String(i).utf8.count)\r\n\r\n\(i)" }
            try Array(burst.utf8).withUnsafeBytes { try clients[1].write($0, timeoutMillis: 5_000) }
            #expect(try receive(clients[1], until: "HTTP/1.1 200").contains("HTTP/1.1 200"))
            clients[1].close()
            // Both loops serve on; what ran of the burst ran in order, so the value is one of its.
            let more = try connections(server, 2)
            for c in more {
                #expect(try exchange(c, "PUT", "/after.json", "1").0 == 200)
                let (status, body) = try exchange(c, "GET", "/gone.json")
                #expect(status == 200 && (0..<200).contains(Int(body) ?? -1), "\(body)")
            }
            // The connection that left is counted out (once its loop has noticed).
            let deadline = Date().addingTimeInterval(5)
            while server.core.open.count != 3 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            #expect(server.core.open.count == 3)
            stopAsked = Date()
        }
        // The front loop had no answer left to wait for: it stopped as soon as it was told to.
        #expect(Date().timeIntervalSince(stopAsked) < 2.5)
    }

    @Test func theConnectionLimitCountsEveryLoop() throws {
        try withTwoLoops({ $0.maxConnections = 2 }) { server in
            let clients = try connections(server, 2)
            let third = try connect(server)
            defer { third.close() }
            #expect(try receive(third, until: "too many connections").hasPrefix("HTTP/1.1 503"))
            clients[1].close()
            // The front loop's connection closed: there is room again (once it has noticed).
            let deadline = Date().addingTimeInterval(5)
            var status = 0
            while status != 200 && Date() < deadline {
                let next = try connect(server)
                defer { next.close() }
                status = (try? exchange(next, "GET", "/.json").0) ?? 0
                if status != 200 { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(status == 200)
        }
    }
}
