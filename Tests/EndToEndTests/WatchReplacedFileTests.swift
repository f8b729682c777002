import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reliability: watch never stalls silently on a file that was removed or replaced. Within a
/// second it follows the path to the new file (or to nothing, read as null) and prints the
/// differences; a replacement that is not an rtdb database ends it with invalid_database.
@Suite struct WatchReplacedFileTests {
    func lines(_ child: Child) -> [String] {
        child.stdout.components(separatedBy: "\n").filter { !$0.isEmpty }
    }

    /// Waits until `child` has printed `count` lines; returns the seconds it took.
    @discardableResult
    func waitForLines(_ child: Child, _ count: Int, timeout: Double = 20) -> Double? {
        let start = Spawn.now()
        while Spawn.now() - start < timeout {
            if lines(child).count >= count { return Spawn.now() - start }
            if !child.isRunning { return lines(child).count >= count ? Spawn.now() - start : nil }
            usleep(5_000)
        }
        return nil
    }

    func watcher(_ sb: Sandbox, _ args: [String] = ["/", "--child-events"]) throws -> Child {
        try #require(sb.background([Binary.rtdb, "watch"] + args, name: "watch"))
    }

    @Test func aFileReplacedByAnotherIsFollowedWithinASecond() throws {
        let sb = Sandbox()
        sb.seed("/", #"{"a":1,"b":2}"#)
        let other = sb.dir + "/other.db"
        #expect(sb.rtdb("set", "/", #"{"a":1,"c":3}"#, "-q", "--db", other).status == 0)
        let w = try watcher(sb)
        try #require(waitForLines(w, 2) != nil, "\(w.stderr)")
        try #require(rename(other, sb.db) == 0)   // a new inode at the same path
        let took = waitForLines(w, 4)
        #expect(took != nil && took! < 1.0, "the replacement was noticed after \(took.map { "\($0)s" } ?? "never")")
        // Writes to the new file are followed as usual.
        sb.seed("/d", "4")
        waitForLines(w, 5)
        w.killGroup(SIGTERM)
        w.wait(timeout: 10)
        #expect(lines(w) == [
            #"{"event":"child_added","path":"/","key":"a","prev":null,"value":1}"#,
            #"{"event":"child_added","path":"/","key":"b","prev":"a","value":2}"#,
            #"{"event":"child_removed","path":"/","key":"b","value":2}"#,
            #"{"event":"child_added","path":"/","key":"c","prev":"a","value":3}"#,
            #"{"event":"child_added","path":"/","key":"d","prev":"c","value":4}"#,
        ], "\(w.stdout)\n\(w.stderr)")
    }

    @Test func aRemovedFileReadsAsNullUntilANewOneAppears() throws {
        let sb = Sandbox()
        sb.seed("/config", #"{"mode":"on"}"#)
        let w = try watcher(sb, ["/config"])
        try #require(waitForLines(w, 1) != nil, "\(w.stderr)")
        for suffix in ["", "-wal", "-shm"] { unlink(sb.db + suffix) }
        let took = waitForLines(w, 2)
        #expect(took != nil && took! < 1.0, "the removal was noticed after \(took.map { "\($0)s" } ?? "never")")
        sb.seed("/config", #"{"mode":"off"}"#)
        waitForLines(w, 3)
        w.killGroup(SIGTERM)
        w.wait(timeout: 10)
        #expect(lines(w) == [
            #"{"event":"value","path":"/config","value":{"mode":"on"}}"#,
            #"{"event":"value","path":"/config","value":null}"#,
            #"{"event":"value","path":"/config","value":{"mode":"off"}}"#,
        ], "\(w.stdout)\n\(w.stderr)")
    }

    @Test func aReplacementThatIsNotAnRtdbDatabaseEndsTheWatch() throws {
        let sb = Sandbox()
        sb.seed("/a", "1")
        let foreign = sb.dir + "/app.db"
        let made = sb.program(["sqlite3", foreign, "PRAGMA user_version=3; CREATE TABLE t(x)"])
        try #require(made.status == 0, "\(made)")
        let w = try watcher(sb, ["/a"])
        try #require(waitForLines(w, 1) != nil, "\(w.stderr)")
        try #require(rename(foreign, sb.db) == 0)
        let status = w.wait(timeout: 10)
        #expect(status == 8, "watch ended with \(status): \(w.stderr)")
        #expect(w.stderr.contains("invalid_database"), "\(w.stderr)")
        #expect(lines(w) == [#"{"event":"value","path":"/a","value":1}"#])
    }

    @Test func aFileReplacedByAnIdenticalCopyPrintsNothing() throws {
        let sb = Sandbox()
        sb.seed("/a", "1")
        let copy = sb.dir + "/copy.db"
        #expect(sb.rtdb("set", "/a", "1", "-q", "--db", copy).status == 0)
        let w = try watcher(sb, ["/a", "--count", "2"])
        try #require(waitForLines(w, 1) != nil, "\(w.stderr)")
        try #require(rename(copy, sb.db) == 0)
        usleep(500_000)
        sb.seed("/a", "2")
        #expect(w.wait(timeout: 10) == 0, "\(w.stderr)")
        #expect(lines(w) == [#"{"event":"value","path":"/a","value":1}"#, #"{"event":"value","path":"/a","value":2}"#])
    }
}
