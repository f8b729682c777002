import Foundation
import Testing
import RTDBEngine
import RTDBNet
@testable import RTDBServer

/// A server closes what it opens: its listener, its loop, its wake-ups and signal pipe, its
/// sender's thread and the database handles. Started and stopped a hundred times in one
/// process, it leaves the number of open descriptors where it was.
@Suite(.serialized) struct ServerDescriptorTests {
    /// Descriptors open in this process now.
    func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    @Test func aHundredServersStartedAndStoppedLeaveNoDescriptorOpen() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-fds-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func cycle() throws {
            var options = Server.Options()
            options.port = 0
            let server = try Server(options: options, namespaces: ServerNamespaces(file: dir + "/a.db", timeoutSeconds: 5),
                                    watchFolder: dir)
            try whileRunning(server) {
                // Each one served something: a write and a read.
                let stream = try TCPStream.connect(host: "127.0.0.1", port: server.port, timeoutMillis: 5_000)
                defer { stream.close() }
                let request = "PUT /n.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n1GET /n.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                try Array(request.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 5_000) }
                var buffer = [UInt8](repeating: 0, count: 4_096)
                var got: [UInt8] = []
                while true {
                    let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 5_000) }
                    if n == 0 { break }
                    got += buffer[0..<n]
                }
                #expect(String(decoding: got, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count == 3)
            }
        }
        // The first one opens what a process keeps (the SQLite library's, the test runner's).
        try cycle()
        let before = openDescriptors()
        #expect(before > 0)
        for _ in 0..<100 { try cycle() }
        // Threads that end after their server (the sender's) close theirs as they go. Other
        // suites run in this process meanwhile and open and close descriptors of their own, so
        // the count moves by a few either way; one descriptor kept by each server would be a
        // hundred (a signal pipe's was).
        var after = openDescriptors()
        let deadline = Date().addingTimeInterval(5)
        while after - before >= 50 && Date() < deadline {
            usleep(20_000)
            after = openDescriptors()
        }
        #expect(after - before < 50, "\(after - before) descriptors left open by 100 servers")
    }
}
