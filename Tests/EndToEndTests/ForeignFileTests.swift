import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reliability: another program's SQLite file is never changed, and rtdb's own files (also those
/// of the first release, which were not marked) keep working.
@Suite struct ForeignFileTests {
    /// Every command, reads included, as it would run against `file`.
    static func everyCommand(_ file: String) -> [[String]] {
        [["get", "/"], ["get", "/x", "--shallow"], ["query", "/", "--limit-to-first", "1"],
         ["set", "/a", "1"], ["update", "/", "{\"a\":1}"], ["push", "/l", "1"], ["remove", "/a"],
         ["increment", "/c"], ["tx", "/a", "--", "echo", "2"], ["watch", "/", "--count", "1"]]
            .map { ["--db", file] + $0 }
    }

    /// The SHA-256 of a file, by sha256sum.
    static func checksum(_ sb: Sandbox, _ file: String) -> String {
        let r = sb.program(["sha256sum", file])
        return String(r.stdout.prefix(64))
    }

    func sqlite(_ sb: Sandbox, _ file: String, _ sql: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let r = sb.program(["sqlite3", file, sql])
        #expect(r.status == 0, "sqlite3 \(sql): \(r)", sourceLocation: sourceLocation)
        return r.stdout
    }

    /// Runs every command against `file` and expects each to be refused with invalid_database,
    /// leaving the file byte for byte as it was and creating no file beside it.
    func expectRefusedAndUnchanged(_ sb: Sandbox, _ file: String, saying phrase: String = "is not an rtdb database",
                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = ForeignFileTests.checksum(sb, file)
        #expect(before.count == 64, sourceLocation: sourceLocation)
        let bytes = try #require(FileManager.default.contents(atPath: file), sourceLocation: sourceLocation)
        let siblings = Set(try FileManager.default.contentsOfDirectory(atPath: sb.dir))
        for args in ForeignFileTests.everyCommand(file) {
            let r = sb.rtdb(args, timeout: 20)
            expectError(r, status: 8, code: "invalid_database", sourceLocation: sourceLocation)
            #expect(r.error?.message.contains(phrase) == true, "\(args): \(r)", sourceLocation: sourceLocation)
            #expect(r.error?.message.contains((file as NSString).lastPathComponent) == true, "the message names the file: \(r)",
                    sourceLocation: sourceLocation)
        }
        #expect(ForeignFileTests.checksum(sb, file) == before, "the checksum of \(file) changed", sourceLocation: sourceLocation)
        #expect(FileManager.default.contents(atPath: file) == bytes, sourceLocation: sourceLocation)
        let after = Set(try FileManager.default.contentsOfDirectory(atPath: sb.dir))
        #expect(after == siblings, "files appeared: \(after.subtracting(siblings))", sourceLocation: sourceLocation)
    }

    @Test func anotherApplicationsFileIsRefusedAndLeftByteForByte() throws {
        let sb = Sandbox()
        let file = sb.dir + "/app.db"
        // Table names that clash with rtdb's own, and a schema version of its own.
        _ = sqlite(sb, file, """
            PRAGMA user_version=5;
            CREATE TABLE data(id INTEGER PRIMARY KEY, body TEXT);
            CREATE TABLE log(line TEXT);
            INSERT INTO data(body) VALUES ('keep me');
            """)
        try expectRefusedAndUnchanged(sb, file)
        #expect(sqlite(sb, file, "PRAGMA user_version; PRAGMA journal_mode; SELECT body FROM data") == "5\ndelete\nkeep me\n")
    }

    @Test func aFileMarkedByAnotherApplicationIsRefused() throws {
        let sb = Sandbox()
        let file = sb.dir + "/marked.db"
        _ = sqlite(sb, file, "PRAGMA application_id=1234; CREATE TABLE t(x)")
        try expectRefusedAndUnchanged(sb, file)
    }

    @Test func aFileWithoutTablesButWithAVersionIsRefused() throws {
        let sb = Sandbox()
        let file = sb.dir + "/versioned.db"
        _ = sqlite(sb, file, "PRAGMA user_version=7")
        try expectRefusedAndUnchanged(sb, file)
    }

    @Test func aWriteAheadLogWithAnotherProgramsChangesIsNotCheckpointed() throws {
        let sb = Sandbox()
        let python = try #require(Binary.onPath("python3"), "python3 is needed to leave a write-ahead log behind")
        let file = sb.dir + "/wal-app.db"
        // The program stops without closing: its changes stay in wal-app.db-wal.
        let script = """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA wal_autocheckpoint=0")
            c.execute("CREATE TABLE t(x)"); c.execute("INSERT INTO t VALUES (1)")
            os._exit(0)
            """
        let made = Spawn.run([python, "-c", script, file], env: ProcessInfo.processInfo.environment, input: .none, timeout: 30)
        try #require(made.status == 0, "\(made)")
        let wal = try #require(FileManager.default.contents(atPath: file + "-wal"))
        #expect(wal.count > 0)
        try expectRefusedAndUnchanged(sb, file)
        #expect(FileManager.default.contents(atPath: file + "-wal") == wal, "the write-ahead log changed")
    }

    @Test func aFileMadeByANewerRtdbIsRefused() throws {
        let sb = Sandbox()
        sb.seed("/a", "1")
        _ = sqlite(sb, sb.db, "PRAGMA user_version=99")
        try expectRefusedAndUnchanged(sb, sb.db, saying: "was made by a newer rtdb (schema version 99")
    }

    @Test func aFileThatIsNotSQLiteIsInvalidDatabase() throws {
        let sb = Sandbox()
        let file = sb.write("notes.db", "just some text, long enough to be more than a header........................\n")
        try expectRefusedAndUnchanged(sb, file)
    }

    @Test func newFilesAreMarkedAsRtdbs() {
        let sb = Sandbox()
        sb.seed("/a", "1")
        // "RTDB" in ASCII; the schema version of this release.
        #expect(sqlite(sb, sb.db, "PRAGMA application_id; PRAGMA user_version") == "\(0x5254_4442)\n5\n")
    }

    @Test func filesOfTheFirstReleaseKeepWorkingAndAreMarkedOnTheirNextWrite() {
        let sb = Sandbox()
        // The file exactly as the first release made it: WAL, user_version 1, no application_id.
        _ = sqlite(sb, sb.db, """
            PRAGMA journal_mode=WAL;
            CREATE TABLE data(path TEXT PRIMARY KEY, v) WITHOUT ROWID;
            CREATE TABLE log(seq INTEGER PRIMARY KEY AUTOINCREMENT, paths TEXT NOT NULL);
            PRAGMA user_version=1;
            INSERT INTO data VALUES ('users/ada/name', 'Ada'), ('users/ada/age', 36), ('n', 1);
            INSERT INTO log(paths) VALUES ('users'), ('n');
            """)
        let before = ForeignFileTests.checksum(sb, sb.db)
        expectOK(sb.rtdb("get", "/"), #"{"n":1,"users":{"ada":{"age":36,"name":"Ada"}}}"# + "\n")
        expectLines(sb.rtdb("query", "/users"), [#"{"key":"ada","value":{"age":36,"name":"Ada"}}"#])
        expectLines(sb.rtdb("watch", "/n", "--count", "1"), [#"{"event":"value","path":"/n","value":1}"#])
        #expect(ForeignFileTests.checksum(sb, sb.db) == before, "reads changed the file")
        expectOK(sb.rtdb("increment", "/n"), #"{"path":"/n","value":2}"# + "\n")
        #expect(sqlite(sb, sb.db, "PRAGMA application_id; PRAGMA user_version") == "\(0x5254_4442)\n5\n")
        expectOK(sb.rtdb("get", "/"), #"{"n":2,"users":{"ada":{"age":36,"name":"Ada"}}}"# + "\n")
    }

    @Test func anEmptySQLiteFileIsAnEmptyDatabase() {
        let sb = Sandbox()
        // A database with no tables and no version, as sqlite3 leaves it after a read.
        _ = sqlite(sb, sb.db, "PRAGMA journal_mode=WAL")
        expectOK(sb.rtdb("get", "/"), "null\n")
        expectOK(sb.rtdb("set", "/a", "1"), #"{"path":"/a","value":1}"# + "\n")
        expectOK(sb.rtdb("get", "/"), #"{"a":1}"# + "\n")
    }
}
