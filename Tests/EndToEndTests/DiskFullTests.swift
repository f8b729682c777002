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
}
