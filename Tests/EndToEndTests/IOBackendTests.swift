import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// RTDB_IO_BACKEND chooses the kernel interfaces of a whole process. On Linux the descriptors
/// a process holds show which: epoll and inotify are anonymous inodes ("anon_inode:[eventpoll]",
/// "anon_inode:inotify"); the portable back-end (poll(2), a stat check) holds neither. So a
/// `make test` pass with RTDB_IO_BACKEND=posix is known to run the portable code.
@Suite struct IOBackendTests {
    #if os(Linux)
    /// What the process's descriptors point at (readlink of /proc/PID/fd/N).
    func descriptors(_ pid: pid_t) -> [String] {
        let dir = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + $0) }
    }

    func lines(_ c: Child) -> [String] { c.stdout.split(separator: "\n").map(String.init) }

    func waitFor(_ c: Child, timeout: Double = 10, _ match: (String) -> Bool) -> Bool {
        let start = Spawn.now()
        while Spawn.now() - start < timeout {
            if lines(c).contains(where: match) { return true }
            if !c.isRunning { return false }
            usleep(2_000)
        }
        return false
    }

    @Test(arguments: ["native", "posix"])
    func serveAndWatchUseTheChosenInterfaces(_ value: String) throws {
        let sb = Sandbox()
        sb.seed("/a", "1")
        let env: [String: String?] = ["RTDB_IO_BACKEND": value]
        let server = try #require(ServeProcess(sb, env: env))
        let watch = try #require(sb.background([Binary.rtdb, "watch", "/a"], name: "watch", env: env))
        try #require(waitFor(watch) { $0.contains(#""value":1"#) }, "\(watch.stderr)")
        let served = descriptors(server.child.pid)
        let watching = descriptors(watch.pid)
        #expect(!served.isEmpty && !watching.isEmpty)
        if value == "native" {
            #expect(served.contains("anon_inode:[eventpoll]"), "\(served)")
            #expect(served.contains("anon_inode:inotify"), "\(served)")
            #expect(watching.contains("anon_inode:inotify"), "\(watching)")
        } else {
            #expect(!served.contains { $0.hasPrefix("anon_inode:") }, "\(served)")
            #expect(!watching.contains { $0.hasPrefix("anon_inode:") }, "\(watching)")
        }
        // Either way, another process's commit reaches the watcher, and the server answers.
        #expect(sb.rtdb("set", "/a", "2", "-q", env: env).status == 0)
        #expect(waitFor(watch) { $0.contains(#""value":2"#) }, "\(watch.stderr)")
        let got = curl(sb, [server.url + "/a.json"])
        #expect(got.body == "2" && got.code == "200", "\(got)")
        watch.killGroup(SIGTERM)
        watch.wait(timeout: 10)
    }

    /// A stream of `rtdb serve` learns of another process's commit: at once from inotify, on
    /// the 250 ms feed check with the portable back-end.
    @Test(arguments: ["native", "posix"])
    func aStreamSeesAnotherProcessesCommit(_ value: String) throws {
        let sb = Sandbox()
        sb.seed("/live", "0")
        let env: [String: String?] = ["RTDB_IO_BACKEND": value]
        let server = try #require(ServeProcess(sb, env: env))
        let stream = try #require(sb.background(["curl", "-sN", "-H", "Accept: text/event-stream", server.url + "/live.json"], name: "curl"))
        try #require(waitFor(stream) { $0.contains(#""data":0"#) }, "\(stream.stdout)")
        let start = Spawn.now()
        #expect(sb.rtdb("set", "/live", "1", "-q", env: env).status == 0)
        #expect(waitFor(stream) { $0.contains(#""data":1"#) }, "\(stream.stdout)")
        #expect(Spawn.now() - start < 5)
        stream.killGroup(SIGTERM)
        stream.wait(timeout: 10)
    }
    #endif
}
