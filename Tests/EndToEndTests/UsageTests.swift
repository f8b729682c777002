import Foundation
import Testing

/// Usage errors (status 2, code usage) and argument handling; nothing is written by any of them.
@Suite struct UsageTests {
    func check(_ args: [String], stdin: Input = .none, status: Int32 = 2, code: String = "usage",
               sourceLocation: SourceLocation = #_sourceLocation) {
        let sb = Sandbox()
        sb.seed("/keep", "{\"x\":1}")
        expectError(sb.rtdb(args, stdin: stdin), status: status, code: code, sourceLocation: sourceLocation)
        #expect(sb.get("/") == "{\"keep\":{\"x\":1}}", "data changed by \(args)", sourceLocation: sourceLocation)
    }

    @Test func unknownCommand() {
        check(["bogus"])
        check(["bogus", "/x", "1"])
        check(["help", "bogus"])
        check(["SET", "/x", "1"])
    }

    @Test func noCommand() {
        check([])
        check(["--pretty"])
    }

    @Test func unknownOption() {
        check(["get", "/keep", "--nope"])
        check(["--nope", "get", "/keep"])
        check(["set", "/x", "1", "-z"])
        check(["set", "/x", "1", "--shallow"])            // get's option on set
        check(["get", "/keep", "--lines"])
        check(["set", "/x", "1", "--pretty=yes"])         // takes no value
    }

    @Test func optionsMissingTheirValue() {
        check(["get", "/keep", "--db"])
        check(["set", "/x", "--string"])
        check(["set", "/x", "--file"])
        check(["query", "/keep", "--order-by-child"])
        check(["get", "/keep", "--timeout", "soon"])
        check(["get", "/keep", "--timeout", "-1"])
    }

    @Test func optionGivenTwice() {
        check(["set", "/x", "--string", "a", "--string", "b"])
    }

    @Test func missingArguments() {
        check(["get"])
        check(["set"])
        check(["set", "/x"])
        check(["update"])
        check(["update", "/x"])
        check(["push"])
        check(["push", "/x"])
        check(["remove"])
        check(["query"])
        check(["increment"])
        check(["tx"])
        check(["tx", "/x", "--"])
    }

    @Test func extraArguments() {
        check(["get", "/a", "/b"])
        check(["set", "/x", "1", "2"])
        check(["update", "/x", "{}", "{}"])
        check(["push", "/x", "1", "2"])
        check(["remove", "/a", "/b"])
        check(["query", "/a", "/b"])
        check(["increment", "/x", "1", "2"])
        check(["help", "get", "set"])
    }

    @Test func valueGivenTwoWays() {
        check(["set", "/x", "1", "--string", "a"])
        check(["set", "/x", "-", "--file", "/dev/null"], stdin: .text("1"))
        check(["set", "/x", "--string", "a", "--server-timestamp"])
        check(["set", "/x", "1", "--server-timestamp"])
        check(["push", "/x", "1", "--string", "a"])
    }

    @Test func pathStartingWithDashNeedsDashDashOrASlash() {
        let sb = Sandbox()
        // Without -- a word starting with '-' is an option.
        expectError(sb.rtdb("set", "-Nx3abc", "1"), status: 2, code: "usage")
        #expect(sb.get("/") == "null")
        expectOK(sb.rtdb("set", "--", "-Nx3abc", "1"), "{\"path\":\"/-Nx3abc\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "--", "-Nx3abc"), "1\n")
        expectOK(sb.rtdb("get", "/-Nx3abc"), "1\n")
        expectOK(sb.rtdb("set", "/-Nx3abc/-child", "\"v\""), "{\"path\":\"/-Nx3abc/-child\",\"value\":\"v\"}\n")
        expectOK(sb.rtdb("get", "/-Nx3abc"), "{\"-child\":\"v\"}\n")
        expectOK(sb.rtdb("increment", "/-Nx3abc/n", "-2"), "{\"path\":\"/-Nx3abc/n\",\"value\":-2}\n")
        expectOK(sb.rtdb("remove", "--", "-Nx3abc"), "{\"path\":\"/-Nx3abc\",\"value\":null}\n")
        expectOK(sb.rtdb("get", "/"), "null\n")
        // Options may still come before --; after it everything is an argument.
        expectOK(sb.rtdb("set", "-q", "--", "-k", "\"--string\""), "")
        expectOK(sb.rtdb("get", "/-k"), "\"--string\"\n")
        // After --, "--pretty" is the VALUE (not JSON), not the option.
        expectError(sb.rtdb("set", "--", "-k", "--pretty"), status: 3, code: "invalid_json")
        expectOK(sb.rtdb("get", "/"), "{\"-k\":\"--string\"}\n")
    }

    @Test func pushIDsStartingWithDashRoundTrip() throws {
        let sb = Sandbox()
        let r = sb.rtdb("push", "/list", "1")
        let key = try #require(object(r.lines.first ?? "")?["key"] as? String, "\(r)")
        expectOK(sb.rtdb("get", "/list/" + key), "1\n")
        if key.hasPrefix("-") {
            expectOK(sb.rtdb("get", "--", "list/" + key), "1\n")
            expectError(sb.rtdb("get", key), status: 2, code: "usage")
        }
        expectOK(sb.rtdb("set", "/list/" + key, "2"), "{\"path\":\"/list/\(key)\",\"value\":2}\n")
    }

    @Test func negativeNumbersAreArguments() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/n", "-5"), "{\"path\":\"/n\",\"value\":-5}\n")
        expectOK(sb.rtdb("increment", "/n", "-1.5"), "{\"path\":\"/n\",\"value\":-6.5}\n")
        expectOK(sb.rtdb("set", "/m", "-0.25"), "{\"path\":\"/m\",\"value\":-0.25}\n")
    }

    @Test func unreadableFile() {
        let sb = Sandbox()
        sb.seed("/keep", "1")
        expectError(sb.rtdb("set", "/x", "--file", sb.dir + "/no-such-file.json"), status: 1, code: "io_error")
        expectError(sb.rtdb("set", "/x", "--file", sb.dir), status: 1, code: "io_error")       // a folder
        expectError(sb.rtdb("push", "/x", "--file", sb.dir + "/missing"), status: 1, code: "io_error")
        expectError(sb.rtdb("update", "/x", "--file", sb.dir + "/missing"), status: 1, code: "io_error")
        #expect(sb.get("/") == "{\"keep\":1}")
    }
}
