import Foundation
import Testing
import RTDBCore
import RTDBEngine
@testable import RTDBNet
@testable import RTDBServer

/// `rtdb serve` watches its folder for other processes' commits only while something streams
/// (Server.followOtherProcesses): while on, every write in the folder, its own included, costs
/// the kernel an event. What the kernel holds is read from /proc (the watch's state is its
/// loop's), so this runs on Linux.
@Suite(.serialized) struct ServerFolderWatchTests {
    /// Whether the inotify descriptor `fd` of this process holds a watch now.
    func watching(_ fd: Int32) -> Bool {
        let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)) ?? ""
        return info.contains("inotify wd:")
    }

    /// Waits up to five seconds for `watching(fd) == wanted`.
    func settle(_ fd: Int32, watching wanted: Bool) -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while watching(fd) != wanted && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        return watching(fd) == wanted
    }

    #if os(Linux)
    @Test(.enabled(if: IOBackend.current == .native, "the portable back-end has no folder watch (RTDB_IO_BACKEND=posix)"))
    func theFolderIsWatchedWhileSomethingStreamsAndAnotherProcesssCommitsReachIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-fw-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = Server.Options()
        options.port = 0
        options.loops = 1
        let server = try Server(options: options, namespaces: ServerNamespaces(file: dir + "/a.db", timeoutSeconds: 5),
                                watchFolder: dir)
        let fd = try #require(server.watch?.fd)
        try whileRunning(server) {
            // Writes alone: no watch.
            let client = try connect(server)
            defer { client.close() }
            #expect(try exchange(client, "PUT", "/s.json", "1").0 == 200)
            #expect(settle(fd, watching: false))
            // A stream: the watch is on, and a commit by another handle (as another process's
            // would) reaches the stream.
            let stream = try connect(server)
            let ask = "GET /s.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
            try Array(ask.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 5_000) }
            #expect(try receive(stream, until: "\"data\":1}").contains("event: put"))
            #expect(settle(fd, watching: true))
            let other = EmbeddedDatabase(file: dir + "/a.db")
            _ = try other.set(try Path("/s"), .int(2))
            #expect(try receive(stream, until: "\"data\":2}").contains("event: put\ndata: {\"path\":\"/\",\"data\":2}"))
            // The stream ends: the watch is off again.
            stream.close()
            #expect(settle(fd, watching: false))
        }
    }
    #endif
}
