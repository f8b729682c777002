import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A full disk must leave every acknowledged write intact and the failed write absent.
/// Needs root to mount a small tmpfs (CI and the project's machines run as root).
@Suite(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
struct DiskFullTests {
    @Test func aWriteThatFillsTheDiskFailsCleanly() throws {
        let sb = Sandbox()
        let mnt = sb.dir + "/small"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        let mount = sb.program(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt])
        try #require(mount.status == 0, "cannot mount a tmpfs: \(mount)")
        defer { _ = sb.program(["umount", "-l", mnt]) }
        let env: [String: String?] = ["RTDB_DB": mnt + "/full.db"]

        #expect(sb.rtdb(["set", "/keep", #"{"a":1,"b":"kept"}"#, "-q"], env: env).status == 0)
        // About 3.5 MB of data cannot fit in 2 MB.
        var big = "{"
        for i in 0..<30_000 { big += (i > 0 ? "," : "") + "\"k\(i)\":\"" + String(repeating: "x", count: 100) + "\"" }
        big += "}"
        let r = sb.rtdb(["set", "/big", "-"], stdin: .text(big), env: env)
        expectError(r, status: 1, code: "io_error")
        #expect(r.stderr.contains("disk full"))

        expectOK(sb.rtdb(["get", "/"], env: env), #"{"keep":{"a":1,"b":"kept"}}"# + "\n")
        let check = sb.program(["sqlite3", mnt + "/full.db", "PRAGMA integrity_check"])
        #expect(check.stdout == "ok\n")
        // Small writes still work once the failed one is gone.
        expectOK(sb.rtdb(["set", "/after", "2"], env: env), #"{"path":"/after","value":2}"# + "\n")
    }

    /// A 4 MB tmpfs holding a database whose write-ahead log keeps 2.4 MB of rewritten pages
    /// (a reader held them back), and a filler that takes the rest of the space.
    func fullDiskWithALog(_ sb: Sandbox) throws -> (mnt: String, env: [String: String?]) {
        let mnt = sb.dir + "/small"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        let mount = sb.program(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt])
        try #require(mount.status == 0, "cannot mount a tmpfs: \(mount)")
        let db = mnt + "/full.db"
        let env: [String: String?] = ["RTDB_DB": db]
        func big(_ fill: String, _ count: Int) -> String {
            "{" + (0..<count).map { "\"k\($0)\":\"" + String(repeating: fill, count: 100) + "\"" }.joined(separator: ",") + "}"
        }
        for (name, fill, count) in [("one.json", "x", 9000), ("two.json", "y", 9000), ("huge.json", "z", 30000)] {
            _ = sb.write(name, big(fill, count))
        }
        #expect(sb.rtdb(["set", "/keep", "1", "-q"], env: env).status == 0)
        #expect(sb.rtdb(["set", "/big", "--file", sb.dir + "/one.json", "-q"], env: env).status == 0)
        let python = try #require(Binary.onPath("python3"), "python3 is needed to hold a reader")
        let script = """
            import os, sqlite3, subprocess, sys
            rtdb, db, folder = sys.argv[1:4]
            c = sqlite3.connect(db, isolation_level=None)
            c.execute("BEGIN"); c.execute("SELECT count(*) FROM data").fetchall()
            for name in ["two.json", "one.json"]:
                subprocess.run([rtdb, "--db", db, "set", "/big", "--file", folder + "/" + name, "-q"], check=True)
            c.execute("COMMIT")
            with open(os.path.dirname(db) + "/filler", "wb") as f:
                try:
                    while True: f.write(b"\\0" * 65536); f.flush()
                except OSError:
                    pass
            os._exit(0)   # no close: the log stays as it is
            """
        let r = Spawn.run([python, "-c", script, Binary.rtdb, db, sb.dir], env: ProcessInfo.processInfo.environment, input: .none, timeout: 60)
        try #require(r.status == 0, "\(r)")
        var st = stat()
        try #require(stat(db + "-wal", &st) == 0 && st.st_size > 2_000_000, "the log was not kept")
        return (mnt, env)
    }

    @Test func removeOnAFullDiskFoldsTheLogIntoTheFileFirst() throws {
        let sb = Sandbox()
        let (mnt, env) = try fullDiskWithALog(sb)
        defer { _ = sb.program(["umount", "-l", mnt]) }
        expectOK(sb.rtdb(["remove", "/big"], env: env), #"{"path":"/big","value":null}"# + "\n")
        expectOK(sb.rtdb(["get", "/"], env: env), #"{"keep":1}"# + "\n")
        let check = sb.program(["sqlite3", mnt + "/full.db", "PRAGMA integrity_check"])
        #expect(check.stdout == "ok\n")
    }

    @Test func aWriteThatCannotFitSaysWhatToDo() throws {
        let sb = Sandbox()
        let (mnt, env) = try fullDiskWithALog(sb)
        defer { _ = sb.program(["umount", "-l", mnt]) }
        // More than the log gives back.
        let r = sb.rtdb(["set", "/more", "--file", sb.dir + "/huge.json", "-q"], env: env)
        expectError(r, status: 1, code: "io_error")
        #expect(r.error?.message.contains("Free some space") == true, "\(r)")
        expectOK(sb.rtdb(["get", "/keep"], env: env), "1\n")
    }
}
