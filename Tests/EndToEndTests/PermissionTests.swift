import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs rtdb as the unprivileged user `nobody` (file permissions do not bind root), through
/// `setpriv`, from a copy of the binary that `nobody` may execute.
enum Unprivileged {
    static let user: (uid: uid_t, gid: gid_t)? = {
        guard let pw = getpwnam("nobody") else { return nil }
        return (pw.pointee.pw_uid, pw.pointee.pw_gid)
    }()

    /// A copy of the binary in a folder everyone may enter.
    static let binary: String? = {
        var template = Array((NSTemporaryDirectory() + "rtdb-nobody.XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { return nil }
        let dir = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let copy = dir + "/rtdb"
        guard chmod(dir, 0o755) == 0, (try? FileManager.default.copyItem(atPath: Binary.rtdb, toPath: copy)) != nil,
              chmod(copy, 0o755) == 0 else { return nil }
        return copy
    }()

    static var setpriv: String? { Binary.onPath("setpriv") }

    /// The command prefix that runs a program as nobody.
    static var prefix: [String]? {
        guard let setpriv, let user else { return nil }
        return [setpriv, "--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups"]
    }

    /// Root, with a way to become nobody, and a binary nobody can run.
    static let available: Bool = {
        guard getuid() == 0, let prefix, let binary else { return false }
        let r = Spawn.run(prefix + [binary, "--version"], env: ["PATH": "/usr/bin:/bin"], input: .none, timeout: 30)
        return r.status == 0
    }()
}

/// Reliability: what the file system forbids is `permission_denied` (status 4) with a message
/// that says why, never `null` or `unavailable`; a database this user may only read can be read.
@Suite(.enabled(if: Unprivileged.available,
                "skipped: these tests need root, to run rtdb as the unprivileged user nobody through setpriv"))
struct PermissionTests {
    /// A sandbox whose folder nobody may enter (the database is created by root).
    func sandbox() -> Sandbox {
        let sb = Sandbox()
        chmod(sb.dir, 0o755)
        return sb
    }

    /// Runs `rtdb ARGS…` as nobody, with the sandbox's environment.
    func asNobody(_ sb: Sandbox, _ args: [String], timeout: Double = 30) -> RunResult {
        Spawn.run((Unprivileged.prefix ?? []) + [Unprivileged.binary ?? Binary.rtdb] + args,
                  env: sb.environment([:]), input: .none, timeout: timeout)
    }

    func files(_ dir: String) -> Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []) }

    @Test func aDatabaseInAFolderThatCannotBeEnteredIsPermissionDenied() throws {
        let sb = sandbox()
        let dir = sb.dir + "/locked"
        let db = dir + "/x.db"
        #expect(sb.rtdb("set", "/a", "1", "--db", db).status == 0)
        try #require(chmod(dir, 0o700) == 0)
        for args in [["get", "/"], ["get", "/a"], ["query", "/"], ["watch", "/", "--count", "1"], ["set", "/a", "2"],
                     ["increment", "/n"]] {
            let r = asNobody(sb, ["--db", db] + args)
            expectError(r, status: 4, code: "permission_denied")
            #expect(r.error?.message.contains("cannot be entered") == true, "\(args): \(r)")
        }
        #expect(sb.rtdb("get", "/", "--db", db).stdout == "{\"a\":1}\n")
    }

    @Test func creatingADatabaseInAReadOnlyFolderIsPermissionDenied() throws {
        let sb = sandbox()
        let dir = sb.dir + "/readonly"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        try #require(chmod(dir, 0o755) == 0)   // root's folder: nobody may read it, not write it
        for args in [["set", "/a", "1"], ["push", "/l", "1"], ["increment", "/n"], ["update", "/", "{\"a\":1}"]] {
            let r = asNobody(sb, ["--db", dir + "/new.db"] + args)
            expectError(r, status: 4, code: "permission_denied")
            #expect(r.error?.message.contains("not writable") == true, "\(args): \(r)")
        }
        // In a new sub-folder too.
        expectError(asNobody(sb, ["--db", dir + "/sub/new.db", "set", "/a", "1"]), status: 4, code: "permission_denied")
        #expect(files(dir).isEmpty)
        // Reading a database that does not exist there is still null.
        expectOK(asNobody(sb, ["--db", dir + "/new.db", "get", "/"]), "null\n")
    }

    /// A database of root's, readable by everyone, in `folderMode`.
    func readOnlyDatabase(_ sb: Sandbox, folderMode: mode_t) throws -> (dir: String, db: String) {
        let dir = sb.dir + "/shared"
        let db = dir + "/x.db"
        #expect(sb.rtdb("set", "/", #"{"users":{"ada":{"age":36},"bob":{"age":41}}}"#, "-q", "--db", db).status == 0)
        try #require(chmod(db, 0o644) == 0 && chmod(dir, folderMode) == 0)
        try #require(!sb.exists(db + "-wal"), "the writer left its log behind")
        return (dir, db)
    }

    func expectReadable(_ sb: Sandbox, _ db: String, sourceLocation: SourceLocation = #_sourceLocation) {
        expectOK(asNobody(sb, ["--db", db, "get", "/users/ada"]), #"{"age":36}"# + "\n", sourceLocation: sourceLocation)
        expectOK(asNobody(sb, ["--db", db, "get", "/", "--shallow"]), #"{"users":true}"# + "\n", sourceLocation: sourceLocation)
        expectLines(asNobody(sb, ["--db", db, "query", "/users", "--order-by-child", "age", "--limit-to-last", "1"]),
                    [#"{"key":"bob","value":{"age":41}}"#], sourceLocation: sourceLocation)
        expectLines(asNobody(sb, ["--db", db, "watch", "/users/bob", "--count", "1"]),
                    [#"{"event":"value","path":"/users/bob","value":{"age":41}}"#], sourceLocation: sourceLocation)
        for args in [["set", "/a", "1"], ["increment", "/n"], ["remove", "/users"], ["tx", "/n", "--", "echo", "1"]] {
            let r = asNobody(sb, ["--db", db] + args)
            expectError(r, status: 4, code: "permission_denied", sourceLocation: sourceLocation)
            #expect(r.error?.message.contains("read-only for this user") == true, "\(args): \(r)", sourceLocation: sourceLocation)
        }
    }

    @Test func aDatabaseThatCanOnlyBeReadCanBeReadInAFolderThatCannotBeWritten() throws {
        let sb = sandbox()
        let (dir, db) = try readOnlyDatabase(sb, folderMode: 0o755)
        expectReadable(sb, db)
        #expect(files(dir) == ["x.db"])
        expectOK(sb.rtdb("get", "/users/ada/age", "--db", db), "36\n")
    }

    @Test func aReaderLeavesNoFilesOfItsOwnInASharedFolder() throws {
        let sb = sandbox()
        // A folder everyone may write (like /tmp): WAL files made by nobody would belong to
        // nobody and could keep the owner from writing.
        let (dir, db) = try readOnlyDatabase(sb, folderMode: 0o777)
        expectReadable(sb, db)
        #expect(files(dir) == ["x.db"])
        expectOK(sb.rtdb("increment", "/n", "--db", db), #"{"path":"/n","value":1}"# + "\n")
    }

    @Test func aReadOnlyWatcherFollowsTheOwnersWrites() throws {
        let sb = sandbox()
        let (_, db) = try readOnlyDatabase(sb, folderMode: 0o755)
        let watcher = try #require(Child((Unprivileged.prefix ?? []) + [Unprivileged.binary ?? "", "--db", db, "watch", "/users",
                                          "--child-events", "--count", "4"],
                                         env: sb.environment([:]), stdinPath: nil,
                                         stdoutPath: sb.dir + "/watch.out", stderrPath: sb.dir + "/watch.err"))
        let deadline = Spawn.now() + 20
        while watcher.stdout.components(separatedBy: "\n").count < 3 && watcher.isRunning && Spawn.now() < deadline { usleep(10_000) }
        // One write by a short-lived process, one by a process that keeps the file open.
        #expect(sb.rtdb("set", "/users/cy", #"{"age":7}"#, "-q", "--db", db).status == 0)
        let python = try #require(Binary.onPath("python3"))
        let script = """
            import sqlite3, subprocess, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("SELECT 1 FROM data").fetchall()
            subprocess.run([sys.argv[2], "--db", sys.argv[1], "remove", "/users/ada", "-q"], check=True)
            time.sleep(1.5)
            """
        let held = Spawn.run([python, "-c", script, db, Binary.rtdb], env: ProcessInfo.processInfo.environment, input: .none, timeout: 30)
        #expect(held.status == 0, "\(held)")
        let status = watcher.wait(timeout: 20)
        #expect(status == 0, "watch: \(status) \(watcher.stderr)")
        #expect(watcher.stdout.components(separatedBy: "\n").filter { !$0.isEmpty } == [
            #"{"event":"child_added","path":"/users","key":"ada","prev":null,"value":{"age":36}}"#,
            #"{"event":"child_added","path":"/users","key":"bob","prev":"ada","value":{"age":41}}"#,
            #"{"event":"child_added","path":"/users","key":"cy","prev":"bob","value":{"age":7}}"#,
            #"{"event":"child_removed","path":"/users","key":"ada","value":{"age":36}}"#,
        ], "\(watcher.stdout)\n\(watcher.stderr)")
    }
}
