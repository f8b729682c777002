import Foundation
import Testing

/// help, --version, global options anywhere, the database file (--db, RTDB_DB, the XDG default),
/// and --url (not built yet).
@Suite struct GlobalOptionTests {
    static let commands = ["get", "set", "update", "push", "remove", "query", "increment", "tx", "watch", "help"]

    @Test func helpOverview() {
        let sb = Sandbox()
        let r = sb.rtdb("help")
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        #expect(r.stdout.contains("usage: rtdb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]"), "\(r)")
        for c in GlobalOptionTests.commands {
            #expect(r.stdout.contains("\n  \(c) "), "overview lists \(c)")
        }
        for o in ["--db", "--url", "--timeout", "--pretty", "--quiet"] {
            #expect(r.stdout.contains(o), "overview lists \(o)")
        }
        #expect(r.stdout.hasSuffix("\n"))
        expectOK(sb.rtdb("--help"), r.stdout)
        expectOK(sb.rtdb("-h"), r.stdout)
        #expect(!sb.exists(sb.db))
    }

    @Test(arguments: GlobalOptionTests.commands.filter { $0 != "help" })
    func helpForACommandIsTheSameEveryWay(command: String) {
        let sb = Sandbox()
        let r = sb.rtdb("help", command)
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        #expect(r.stdout.hasPrefix("usage: rtdb \(command)"), "\(r)")
        #expect(r.stdout.hasSuffix("\n"))
        expectOK(sb.rtdb(command, "--help"), r.stdout)
        expectOK(sb.rtdb(command, "-h"), r.stdout)
        expectOK(sb.rtdb("--help", command), r.stdout)
        // --help wins over other arguments, and does nothing else.
        expectOK(sb.rtdb(command, "/some/path", "--help"), r.stdout)
        #expect(!sb.exists(sb.db))
    }

    /// `rtdb COMMAND --help` is `rtdb help COMMAND` for every COMMAND, help included.
    @Test func helpForTheHelpCommand() {
        let sb = Sandbox()
        let r = sb.rtdb("help", "help")
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        #expect(r.stdout.hasPrefix("usage: rtdb help"), "\(r)")
        expectOK(sb.rtdb("help", "--help"), r.stdout)
        expectOK(sb.rtdb("help", "-h"), r.stdout)
        expectOK(sb.rtdb("--help", "help"), r.stdout)
    }

    @Test func helpNamesTheCommandsOwnOptions() {
        let sb = Sandbox()
        #expect(sb.rtdb("help", "get").stdout.contains("--shallow"))
        #expect(sb.rtdb("help", "set").stdout.contains("--server-timestamp"))
        #expect(sb.rtdb("help", "set").stdout.contains("--string"))
        #expect(sb.rtdb("help", "push").stdout.contains("--lines"))
        #expect(sb.rtdb("help", "tx").stdout.contains("--max-retries"))
        let q = sb.rtdb("help", "query").stdout
        for o in ["--order-by-key", "--order-by-value", "--order-by-child", "--start-at", "--start-after", "--end-at",
                  "--end-before", "--equal-to", "--start-key", "--end-key", "--limit-to-first", "--limit-to-last"] {
            #expect(q.contains(o), "query help lists \(o)")
        }
    }

    @Test func version() {
        let sb = Sandbox()
        let r = sb.rtdb("--version")
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        // The release and the schema of the files it writes (the README names both).
        #expect(r.stdout.range(of: #"^rtdb [0-9]+\.[0-9]+\.[0-9]+\S* \(database schema [0-9]+\)\n$"#, options: .regularExpression) != nil, "\(r)")
        expectOK(sb.rtdb("get", "--version"), r.stdout)
    }

    @Test func globalOptionsBeforeOrAfterTheCommand() {
        let sb = Sandbox()
        let other = sb.dir + "/other.db"
        expectOK(sb.rtdb("--db", other, "set", "/a", "1"), "{\"path\":\"/a\",\"value\":1}\n")
        expectOK(sb.rtdb("set", "--db", other, "/b", "2"), "{\"path\":\"/b\",\"value\":2}\n")
        expectOK(sb.rtdb("set", "/c", "3", "--db", other), "{\"path\":\"/c\",\"value\":3}\n")
        expectOK(sb.rtdb("set", "/d", "4", "--db=\(other)"), "{\"path\":\"/d\",\"value\":4}\n")
        expectOK(sb.rtdb("get", "/", "--db", other), "{\"a\":1,\"b\":2,\"c\":3,\"d\":4}\n")
        expectOK(sb.rtdb("--pretty", "--db", other, "get", "/a"), "1\n")
        expectOK(sb.rtdb("get", "--pretty", "/", "--db", other), "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4\n}\n")
        expectOK(sb.rtdb("--timeout", "5", "get", "/a", "--db", other), "1\n")
        expectOK(sb.rtdb("get", "/a", "--timeout=5", "--db", other), "1\n")
        // RTDB_DB's file was never touched: --db wins over the environment.
        #expect(!sb.exists(sb.db))
        expectOK(sb.rtdb("get", "/"), "null\n")
    }

    @Test func rtdbDBEnvironmentVariableNamesTheFile() {
        let sb = Sandbox()
        let f = sb.dir + "/nested/dirs/env.db"
        expectOK(sb.rtdb("set", "/x", "1", env: ["RTDB_DB": f]), "{\"path\":\"/x\",\"value\":1}\n")
        #expect(sb.exists(f), "parent folders are created on first write")
        expectOK(sb.rtdb("get", "/x", "--db", f), "1\n")
        expectOK(sb.rtdb("get", "/x"), "null\n")
    }

    @Test func defaultDatabaseUnderXDGDataHomeIsCreatedByTheFirstWriteOnly() {
        let sb = Sandbox()
        let xdg = sb.dir + "/xdg"
        let file = xdg + "/rtdb/default.db"
        let noDB: [String: String?] = ["RTDB_DB": nil]
        expectOK(sb.rtdb("get", "/x", env: noDB), "null\n")
        expectOK(sb.rtdb("get", "/", "--shallow", env: noDB), "null\n")
        expectOK(sb.rtdb("query", "/", env: noDB), "")
        #expect(!sb.exists(xdg + "/rtdb"), "a read must not create the folder")
        #expect(!sb.exists(file), "a read must not create the database")
        expectOK(sb.rtdb("set", "/x", "1", env: noDB), "{\"path\":\"/x\",\"value\":1}\n")
        #expect(sb.exists(file))
        expectOK(sb.rtdb("get", "/x", env: noDB), "1\n")
        expectOK(sb.rtdb("get", "/x", "--db", file), "1\n")
        #expect(!sb.exists(sb.db))
    }

    @Test func defaultDatabaseFallsBackToHomeLocalShare() {
        let sb = Sandbox()
        let env: [String: String?] = ["RTDB_DB": nil, "XDG_DATA_HOME": nil]
        let file = sb.dir + "/home/.local/share/rtdb/default.db"
        expectOK(sb.rtdb("get", "/y", env: env), "null\n")
        #expect(!sb.exists(file))
        expectOK(sb.rtdb("set", "/y", "2", env: env), "{\"path\":\"/y\",\"value\":2}\n")
        #expect(sb.exists(file))
        expectOK(sb.rtdb("get", "/y", env: env), "2\n")
    }

    @Test func urlNeverFallsBackToTheFile() {
        let sb = Sandbox()
        // Nothing listens on port 1: every command fails as unavailable, none uses the file.
        let env: [String: String?] = ["FIREBASE_DATABASE_EMULATOR_HOST": "127.0.0.1:1"]
        let urls = ["https://demo.firebaseio.com", "https://demo.europe-west1.firebasedatabase.app", "http://127.0.0.1:1?ns=demo"]
        for url in urls {
            expectError(sb.rtdb(["--url", url, "get", "/"], env: env), status: 6, code: "unavailable")
            expectError(sb.rtdb(["set", "/x", "1", "--url", url], env: env), status: 6, code: "unavailable")
            expectError(sb.rtdb(["get", "/"], env: env.merging(["RTDB_URL": url]) { $1 }), status: 6, code: "unavailable")
            expectError(sb.rtdb(["increment", "/n"], env: env.merging(["RTDB_URL": url]) { $1 }), status: 6, code: "unavailable")
        }
        #expect(!sb.exists(sb.db), "--url must not use the embedded file")
        #expect(!sb.exists(sb.dir + "/xdg/rtdb/default.db"))
        expectOK(sb.rtdb("get", "/x"), "null\n")
    }

    @Test func closedStdoutEndsQuietly() {
        let sb = Sandbox()
        sb.seed("/", "{\"a\":1}")
        // stdout read by `head -c 0`, which exits at once: the write fails with EPIPE.
        let r2 = sb.program(["sh", "-c", "( sleep 0.2; \"$RTDB\" get /; echo \"status=$?\" >&2 ) | head -c 0"])
        #expect(r2.stderr == "status=0\n", "\(r2)")
    }

    @Test func databasePathThatIsAFolderIsUnavailable() {
        let sb = Sandbox()
        expectError(sb.rtdb("get", "/", "--db", sb.dir), status: 6, code: "unavailable")
        expectError(sb.rtdb("set", "/x", "1", "--db", sb.dir), status: 6, code: "unavailable")
        let file = sb.write("plain", "not a folder")
        expectError(sb.rtdb("set", "/x", "1", "--db", file + "/sub.db"), status: 6, code: "unavailable")
    }

    /// A write that reports success must be readable afterwards through the same options.
    /// `--db ''` must not write to SQLite's throw-away temporary database.
    @Test func emptyDatabaseNameNeverLosesAWrite() {
        let sb = Sandbox()
        let w = sb.rtdb("--db", "", "set", "/x", "1")
        if w.status == 0 {
            expectOK(sb.rtdb("--db", "", "get", "/x"), "1\n")
        } else {
            #expect(w.stdout.isEmpty && w.error != nil, "\(w)")
        }
    }
}
