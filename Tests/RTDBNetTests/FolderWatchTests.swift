import Foundation
import Testing
@testable import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder watch `rtdb serve` follows other processes' commits with: a write of a file in
/// the folder makes its descriptor readable while the watch is on; while it is off, nothing
/// does, and turned on again it reports the next write.
@Suite(.enabled(if: IOBackend.current == .native, "the portable back-end has no folder watch (RTDB_IO_BACKEND=posix)"))
struct FolderWatchTests {
    /// Whether `fd` turns readable within `millis`.
    func readable(_ fd: Int32, within millis: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, millis) == 1
    }

    func append(_ path: String, _ text: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        var bytes = Array(text.utf8)
        _ = write(fd, &bytes, bytes.count)
        _ = close(fd)
    }

    @Test func aWriteIsReportedOnlyWhileTheWatchIsOn() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-watch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let watch = try FolderWatch(folder: dir)
        #expect(watch.isActive)
        append(dir + "/a.db-wal", "one")
        #expect(readable(watch.fd, within: 2_000))
        watch.drain()
        #expect(!readable(watch.fd, within: 0))

        watch.isActive = false
        #if os(Linux)
        // (kqueue's watch stays on: FolderWatch.)
        #expect(!watch.isActive)
        append(dir + "/a.db-wal", "two")
        append(dir + "/b.db-wal", "three")
        #expect(!readable(watch.fd, within: 100))
        #endif

        watch.isActive = true
        #expect(watch.isActive)
        #expect(!readable(watch.fd, within: 0))
        append(dir + "/a.db-wal", "four")
        #expect(readable(watch.fd, within: 2_000))
    }
}
