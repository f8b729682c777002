import Foundation
import Testing

/// No silent target and no accidental root: an option beats a variable, an error a variable
/// causes names it, options for remote databases are refused on the database file, an empty
/// path is never the root, and replacing or deleting a root that holds data needs --force.
@Suite struct TargetSafetyTests {
    /// A URL nothing listens on (port 1 refuses at once).
    static let deadURL = "http://127.0.0.1:1?ns=t"

    @Test func dbOptionBeatsTheURLVariable() {
        let sb = Sandbox()
        let other = sb.dir + "/other.db"
        let env: [String: String?] = ["RTDB_URL": TargetSafetyTests.deadURL, "RTDB_PERSIST": "1", "RTDB_OFFLINE": "1"]
        expectLines(sb.rtdb(["--db", other, "set", "/a", "1"], env: env), [#"{"path":"/a","value":1}"#])
        expectLines(sb.rtdb(["get", "/a", "--db", other], env: env), ["1"])
        // -v says the variable is not used.
        let v = sb.rtdb(["--db", other, "get", "/a", "-v"], env: env)
        #expect(v.status == 0 && v.stderr.contains("RTDB_URL is not used"), "\(v)")
        // Without --db the variable is the target.
        expectError(sb.rtdb(["get", "/a"], env: ["RTDB_URL": TargetSafetyTests.deadURL]), status: 6, code: "unavailable")
    }

    @Test func anUnreachableDatabaseFromTheVariableNamesIt() {
        let sb = Sandbox()
        let fromVariable = sb.rtdb(["get", "/a"], env: ["RTDB_URL": TargetSafetyTests.deadURL])
        expectError(fromVariable, status: 6, code: "unavailable")
        #expect(fromVariable.error?.message.contains("RTDB_URL") == true, "\(fromVariable)")
        let fromOption = sb.rtdb(["--url", TargetSafetyTests.deadURL, "get", "/a"])
        expectError(fromOption, status: 6, code: "unavailable")
        #expect(fromOption.error?.message.contains("RTDB_URL") == false, "\(fromOption)")
        // A service-account key file that cannot be read names where its name came from.
        let key = sb.rtdb(["get", "/a"], env: ["RTDB_URL": TargetSafetyTests.deadURL, "GOOGLE_APPLICATION_CREDENTIALS": sb.dir + "/none.json"])
        #expect(key.status != 0 && key.error?.message.contains("GOOGLE_APPLICATION_CREDENTIALS") == true, "\(key)")
        let keyOption = sb.rtdb(["--url", TargetSafetyTests.deadURL, "--credentials", sb.dir + "/none.json", "get", "/a"])
        #expect(keyOption.status != 0 && keyOption.error?.message.contains("--credentials") == true, "\(keyOption)")
    }

    static let remoteOnly: [[String]] = [["--offline"], ["--persist"], ["--online"], ["--cache", "c.db"], ["--cache-size", "2000000"],
                                         ["--connect-timeout", "2"], ["--auth-command", "echo t"], ["--auth", "t"]]

    @Test(arguments: TargetSafetyTests.remoteOnly)
    func optionsForRemoteDatabasesAreRefusedOnTheFile(option: [String]) {
        let sb = Sandbox()
        sb.seed("/a", "1")
        for args in [["get", "/a"], ["set", "/a", "2"], ["--db", sb.db, "get", "/a"]] {
            let r = sb.rtdb(args + option)
            expectError(r, status: 2, code: "usage")
            #expect(r.error?.message.contains(option[0]) == true, "\(r)")
        }
        #expect(sb.get("/a") == "1")
    }

    @Test func serveTakesTheSameOptionsAsTheFile() throws {
        let sb = Sandbox()
        // --db beats RTDB_URL for serve too; without --db the variable is refused, named.
        let server = try #require(ServeProcess(sb, ["--db", sb.db], env: ["RTDB_URL": TargetSafetyTests.deadURL]))
        expectLines(sb.rtdb(["--url", remoteURL(server), "set", "/a", "1"]), [#"{"path":"/a","value":1}"#])
        let refused = sb.rtdb(["serve", "--port", "0"], env: ["RTDB_URL": TargetSafetyTests.deadURL])
        expectError(refused, status: 2, code: "usage")
        #expect(refused.error?.message.contains("RTDB_URL") == true, "\(refused)")
        for option in [["--offline"], ["--auth", "t"], ["--cache", "c.db"]] {
            let r = sb.rtdb(["serve", "--port", "0"] + option)
            expectError(r, status: 2, code: "usage")
            #expect(r.error?.message.contains(option[0]) == true, "\(r)")
        }
    }

    /// Every command that takes a path, and every option that does: "" is not the root.
    static let emptyPaths: [[String]] = [
        ["get", ""], ["get", "", "--exists"], ["set", "", "1"], ["update", "", "{\"a\":1}"], ["push", "", "1"], ["remove", ""],
        ["query", ""], ["increment", ""], ["tx", "", "--", "cat"], ["watch", "", "--count", "1"],
        ["index", "add", "", ".value"], ["session", "--on-disconnect-remove", "", "--", "true"],
        ["session", "--presence", "", "--", "true"],
    ]

    @Test(arguments: TargetSafetyTests.emptyPaths)
    func anEmptyPathIsAUsageError(args: [String]) {
        let sb = Sandbox()
        sb.seed("/", #"{"a":1,"b":{"c":2}}"#)
        let r = sb.rtdb(args)
        expectError(r, status: 2, code: "usage")
        #expect(r.error?.message.contains("empty") == true, "\(r)")
        #expect(sb.get("/") == #"{"a":1,"b":{"c":2}}"#)
    }

    @Test func theRootOfADatabaseThatHoldsDataNeedsForce() {
        let sb = Sandbox()
        // Empty: no --force needed.
        expectLines(sb.rtdb("set", "/", #"{"a":1}"#), [#"{"path":"/","value":{"a":1}}"#])
        for args in [["set", "/", #"{"b":2}"#], ["set", "//", "null"], ["set", "/", "--file", sb.write("v.json", #"{"b":2}"#)],
                     ["set", "/", "-"], ["remove", "/"]] {
            let r = sb.rtdb(args, stdin: .text("{\"b\":2}"))
            expectError(r, status: 2, code: "usage")
            #expect(r.error?.message.contains("--force") == true, "\(r)")
            #expect(sb.get("/") == #"{"a":1}"#, "\(args)")
        }
        expectLines(sb.rtdb("set", "/", #"{"b":2}"#, "--force"), [#"{"path":"/","value":{"b":2}}"#])
        expectLines(sb.rtdb("remove", "/", "--force"), [#"{"path":"/","value":null}"#])
        // Empty again.
        expectLines(sb.rtdb("remove", "/"), [#"{"path":"/","value":null}"#])
        // Below the root nothing changes; --force does no harm there.
        expectLines(sb.rtdb("set", "/x", "1"), [#"{"path":"/x","value":1}"#])
        expectLines(sb.rtdb("set", "/x", "2", "--force"), [#"{"path":"/x","value":2}"#])
        expectLines(sb.rtdb("remove", "/x", "--force"), [#"{"path":"/x","value":null}"#])
        expectError(sb.rtdb("set", "/x", "2", "--chunk-size", "2048"), status: 2, code: "usage")
    }

    @Test func theRootThroughURLNeedsForceToo() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = ["--url", remoteURL(server)]
        expectLines(sb.rtdb(url + ["set", "/", #"{"a":1}"#]), [#"{"path":"/","value":{"a":1}}"#])
        for args in [["set", "/", "2"], ["remove", "/"], ["set", "/", "--file", sb.write("v.json", "2"), "--chunked"]] {
            let r = sb.rtdb(url + args)
            #expect(r.status != 0 && r.error?.message.contains("--force") == true, "\(r)")
            expectLines(sb.rtdb(url + ["get", "/"]), [#"{"a":1}"#])
        }
        expectLines(sb.rtdb(url + ["remove", "/", "--force"]), [#"{"path":"/","value":null}"#])
        expectLines(sb.rtdb(url + ["set", "/", "3"]), [#"{"path":"/","value":3}"#])
    }

    @Test func getExistsSaysWhetherAnythingIsThere() {
        let sb = Sandbox()
        sb.seed("/s", #""null""#)
        sb.seed("/o", #"{"a":{"b":1}}"#)
        for path in ["/s", "/o", "/o/a", "/o/a/b", "/", "/.info/connected"] {
            expectLines(sb.rtdb("get", path, "--exists"), ["true"])
        }
        for path in ["/nothing", "/o/a/c", "/s/x", "/o/.priority"] {
            let r = sb.rtdb("get", path, "--exists")
            #expect(r.status == 11 && r.stdout == "false\n" && r.stderr.isEmpty, "\(path): \(r)")
        }
        #expect(sb.rtdb("get", "/nothing", "--exists", "-q").status == 11)
        expectOK(sb.rtdb("get", "/s", "--exists", "-q"), "")
        for other in ["--shallow", "--export", "--raw", "--partial"] {
            expectError(sb.rtdb("get", "/s", "--exists", other), status: 2, code: "usage")
        }
    }

    @Test func getExistsThroughURL() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = ["--url", remoteURL(server)]
        expectLines(sb.rtdb(url + ["set", "/s", #""null""#]), [#"{"path":"/s","value":"null"}"#])
        expectLines(sb.rtdb(url + ["get", "/s", "--exists"]), ["true"])
        let r = sb.rtdb(url + ["get", "/t", "--exists"])
        #expect(r.status == 11 && r.stdout == "false\n" && r.stderr.isEmpty, "\(r)")
    }

    static let scores = #"{"a":93,"b":22,"c":80,"d":55,"e":10}"#

    /// The value events of `watch` print a query's members in its order; key order and arrays stay.
    static func expectOrderedWatch(_ sb: Sandbox, _ target: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        func watch(_ args: String...) -> RunResult { sb.rtdb(target + ["watch", "/scores", "--count", "1"] + args) }
        expectLines(watch("--order-by-value", "--limit-to-last", "4"),
                    [#"{"event":"value","path":"/scores","value":{"b":22,"d":55,"c":80,"a":93}}"#], sourceLocation: sourceLocation)
        expectLines(watch("--order-by-value", "--limit-to-last", "4", "-r"), [#"{"b":22,"d":55,"c":80,"a":93}"#], sourceLocation: sourceLocation)
        expectOK(watch("--order-by-value", "--limit-to-first", "2", "--pretty"),
                 "{\n  \"event\": \"value\",\n  \"path\": \"/scores\",\n  \"value\": {\n    \"e\": 10,\n    \"b\": 22\n  }\n}\n",
                 sourceLocation: sourceLocation)
        expectLines(watch("--order-by-key", "--limit-to-last", "2"),
                    [#"{"event":"value","path":"/scores","value":{"d":55,"e":10}}"#], sourceLocation: sourceLocation)
        expectLines(watch(), [#"{"event":"value","path":"/scores","value":{"a":93,"b":22,"c":80,"d":55,"e":10}}"#],
                    sourceLocation: sourceLocation)
    }

    @Test func aQueryValueEventListsItsMembersInQueryOrder() {
        let sb = Sandbox()
        sb.seed("/scores", TargetSafetyTests.scores)
        TargetSafetyTests.expectOrderedWatch(sb, [])
        // By child and by priority too; an array keeps its index order.
        sb.seed("/people", #"{"x":{"age":40},"y":{"age":20},"z":{"age":30}}"#)
        expectLines(sb.rtdb("watch", "/people", "--order-by-child", "age", "--count", "1"),
                    [#"{"event":"value","path":"/people","value":{"y":{"age":20},"z":{"age":30},"x":{"age":40}}}"#])
        sb.seed("/tasks", #"{"t1":{".value":"w",".priority":2},"t2":{".value":"v",".priority":1}}"#)
        expectLines(sb.rtdb("watch", "/tasks", "--order-by-priority", "--count", "1"),
                    [#"{"event":"value","path":"/tasks","value":{"t2":"v","t1":"w"}}"#])
        sb.seed("/list", "[30,10,20]")
        expectLines(sb.rtdb("watch", "/list", "--order-by-value", "--count", "1"),
                    [#"{"event":"value","path":"/list","value":[30,10,20]}"#])
    }

    @Test func aQueryValueEventIsOrderedThroughURLAndTheCache() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = ["--url", remoteURL(server)]
        expectLines(sb.rtdb(url + ["set", "/scores", TargetSafetyTests.scores, "-q"]), [])
        TargetSafetyTests.expectOrderedWatch(sb, url)
        // The offline cache, filled by one read, answers the same.
        let cached = url + ["--cache", sb.dir + "/cache.db"]
        #expect(sb.rtdb(cached + ["get", "/scores"]).status == 0)
        TargetSafetyTests.expectOrderedWatch(sb, cached + ["--offline"])
    }
}
