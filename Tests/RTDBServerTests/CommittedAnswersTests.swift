import Foundation
import Testing
import RTDBEngine
import RTDBNet
@testable import RTDBServer

/// A group commit's answers are written by the sender's thread (OutputSender): over a real
/// socket, a connection's answers keep the order of its requests whatever mix of writes and
/// reads it pipelines, an answer that ends the connection ends it after its bytes, and many
/// connections writing at once each get their own answer.
@Suite(.serialized) struct CommittedAnswersTests {
    /// Runs a server on a fresh file for `body`, then stops it.
    func withServer(_ body: (Int) throws -> Void) throws {
        try withServerOnFreshFile { server, _ in try body(server.port) }
    }

    /// Sends `text` in one write and reads until `answers` responses (with their bodies) or the
    /// end of the stream; returns the status and body of each, and whether the stream ended.
    func exchange(port: Int, _ text: String, answers: Int) throws -> (replies: [(Int, String)], ended: Bool) {
        let stream = try TCPStream.connect(host: "127.0.0.1", port: port, timeoutMillis: 5_000)
        defer { stream.close() }
        try Array(text.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 5_000) }
        var got: [UInt8] = []
        var replies: [(Int, String)] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var ended = false
        while !ended {
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 5_000) }
            if n == 0 { ended = true } else { got += buffer[0..<n] }
            replies = []
            var rest = Substring(String(decoding: got, as: UTF8.self))
            while let headEnd = rest.range(of: "\r\n\r\n") {
                let head = rest[..<headEnd.lowerBound]
                let status = Int(head.split(separator: " ")[1]) ?? 0
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                let body = rest[headEnd.upperBound...]
                if body.utf8.count < length { break }
                let bodyEnd = body.utf8.index(body.startIndex, offsetBy: length)
                replies.append((status, String(body[..<bodyEnd])))
                rest = body[bodyEnd...]
            }
            if replies.count >= answers && !text.contains("Connection: close") { break }
        }
        return (replies, ended)
    }

    @Test func pipelinedWritesAndReadsAreAnsweredInOrder() throws {
        try withServer { port in
            var text = ""
            for i in 1...5 {
                text += "PUT /n.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n\(i)"
                text += "GET /n.json HTTP/1.1\r\nHost: x\r\n\r\n"
            }
            let (replies, _) = try exchange(port: port, text, answers: 10)
            #expect(replies.map(\.0) == Array(repeating: 200, count: 10))
            // Each read sees the write before it, and each write's answer is its own value.
            #expect(replies.map(\.1) == ["1", "1", "2", "2", "3", "3", "4", "4", "5", "5"])
        }
    }

    @Test func aWriteThatClosesTheConnectionIsAnsweredBeforeTheEnd() throws {
        try withServer { port in
            let (replies, ended) = try exchange(
                port: port, "PUT /c.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 4\r\n\r\ntrue", answers: 1)
            #expect(replies.count == 1 && replies.first?.0 == 200 && replies.first?.1 == "true")
            #expect(ended)
        }
    }

    @Test func manyConnectionsWritingAtOnceEachGetTheirOwnAnswer() throws {
        try withServer { port in
            let results = Results()
            DispatchQueue.concurrentPerform(iterations: 32) { i in
                var mine: [String] = []
                for round in 0..<10 {
                    let value = "\(i * 100 + round)"
                    let text = "PUT /k/\(i).json HTTP/1.1\r\nHost: x\r\nContent-Length: \(value.utf8.count)\r\n\r\n\(value)"
                    let body = (try? exchange(port: port, text, answers: 1))?.replies.first?.1 ?? "failed"
                    mine.append(body == value ? "ok" : "\(value) answered \(body)")
                }
                results.add(mine)
            }
            #expect(results.all.count == 320)
            #expect(results.all.allSatisfy { $0 == "ok" })
        }
    }

    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var all: [String] = []
        func add(_ more: [String]) { lock.lock(); all += more; lock.unlock() }
    }
}
