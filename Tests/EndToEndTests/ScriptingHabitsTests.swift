import Foundation
import Testing

/// What a scripter expects from the usual tools: --raw output (jq -r), `--file -` for stdin,
/// hints for arguments that look like options or text that is not JSON, limits below 1 refused.
@Suite struct ScriptingHabitsTests {
    @Test func getRawPrintsAStringAsItsText() {
        let sb = Sandbox()
        sb.seed("/u", "{\"name\":\"Ada \\\"the\\\" Countess\",\"bio\":\"line one\\nline two\",\"age\":36,\"nick\":\"\",\"é\":\"ünï\"}")
        expectOK(sb.rtdb("get", "/u/name", "--raw"), "Ada \"the\" Countess\n")
        expectOK(sb.rtdb("get", "/u/name", "-r"), "Ada \"the\" Countess\n")
        expectOK(sb.rtdb("get", "-r", "/u/bio"), "line one\nline two\n")       // the text's own newline, as jq -r
        expectOK(sb.rtdb("get", "/u/nick", "-r"), "\n")
        expectOK(sb.rtdb("get", "/u/é", "-r"), "ünï\n")
        // Anything but a string prints as JSON.
        expectOK(sb.rtdb("get", "/u/age", "-r"), "36\n")
        expectOK(sb.rtdb("get", "/missing", "-r"), "null\n")
        expectOK(sb.rtdb("get", "/u", "-r", "--shallow"), "{\"age\":true,\"bio\":true,\"name\":true,\"nick\":true,\"é\":true}\n")
        expectOK(sb.rtdb("get", "/u/age", "-r", "--pretty"), "36\n")
        expectOK(sb.rtdb("get", "/u/name", "-r", "-q"), "")
        sb.seed("/o", "{\"b\":{\"c\":\"d\"}}")
        expectOK(sb.rtdb("get", "/o", "-r", "--pretty"), "{\n  \"b\": {\n    \"c\": \"d\"\n  }\n}\n")
        expectOK(sb.rtdb("get", "/o", "-r"), "{\"b\":{\"c\":\"d\"}}\n")
    }

    @Test func queryRawPrintsOneValuePerLine() {
        let sb = Sandbox()
        sb.seed("/users", "{\"a\":{\"name\":\"Ann\",\"age\":40},\"b\":{\"name\":\"Bo\",\"age\":20},\"c\":{\"name\":\"Cy\",\"age\":30}}")
        expectLines(sb.rtdb("query", "/users", "--order-by-child", "age", "-r"),
                    ["{\"age\":20,\"name\":\"Bo\"}", "{\"age\":30,\"name\":\"Cy\"}", "{\"age\":40,\"name\":\"Ann\"}"])
        expectLines(sb.rtdb("query", "/users/a", "--raw"), ["40", "Ann"])
        sb.seed("/tags", "[\"x\",\"y y\",3]")
        expectLines(sb.rtdb("query", "/tags", "-r", "--limit-to-last", "2"), ["y y", "3"])
        expectOK(sb.rtdb("query", "/none", "-r"), "")
    }

    @Test func rawIsRefusedWhereItMeansNothing() {
        let sb = Sandbox()
        expectError(sb.rtdb("set", "/a", "1", "--raw"), status: 2, code: "usage")
        expectError(sb.rtdb("push", "/a", "1", "-r"), status: 2, code: "usage")
        #expect(!sb.exists(sb.db))
    }

    @Test func fileDashReadsStdin() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/a", "--file", "-", stdin: .text("{\"from\":\"stdin\"}")), "{\"path\":\"/a\",\"value\":{\"from\":\"stdin\"}}\n")
        expectOK(sb.rtdb("set", "/b", "--file=-", stdin: .text("[1,2]")), "{\"path\":\"/b\",\"value\":[1,2]}\n")
        expectOK(sb.rtdb("update", "/a", "--file", "-", stdin: .text("{\"n\":1}")), "{\"path\":\"/a\",\"value\":{\"n\":1}}\n")
        let p = sb.rtdb("push", "/l", "--file", "-", stdin: .text("\"x\""))
        #expect(p.status == 0 && p.stdout.hasSuffix(",\"value\":\"x\"}\n"), "\(p)")
        expectOK(sb.rtdb("get", "/a"), "{\"from\":\"stdin\",\"n\":1}\n")
        // Bad JSON on stdin is refused and writes nothing; a file named "-" is ./-.
        expectError(sb.rtdb("set", "/c", "--file", "-", stdin: .text("{")), status: 3, code: "invalid_json")
        expectError(sb.rtdb("set", "/c", "--file", "-", "-", stdin: .text("1")), status: 2, code: "usage")
        _ = sb.write("-", "\"dash file\"")
        let r = sb.program(["sh", "-c", "cd \"$0\" && \"$RTDB\" set /c --file ./-", sb.dir])
        expectOK(r, "{\"path\":\"/c\",\"value\":\"dash file\"}\n")
    }

    @Test(arguments: [
        ["get", "-P74-DhhQx1zzzzzzzzz"],
        ["set", "-P74-DhhQx1zzzzzzzzz", "1"],
        ["remove", "-Nx3"],
        ["watch", "-Nx3", "--count", "1"],
        ["get", "-x"],
    ])
    func optionLikeArgumentHintsAtDashDashAndSlash(args: [String]) throws {
        let sb = Sandbox()
        let r = sb.rtdb(args)
        expectError(r, status: 2, code: "usage")
        let message = try #require(r.error?.message)
        #expect(message.contains("unknown option \(args[1])"), "\(message)")
        #expect(message.contains("write -- before it"), "\(message)")
        #expect(message.contains("leading / (/\(args[1]))"), "\(message)")
        #expect(!sb.exists(sb.db))
    }

    @Test func theHintedSpellingsWork() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "--", "-P74-Dhh", "1"), "{\"path\":\"/-P74-Dhh\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "/-P74-Dhh"), "1\n")
        expectOK(sb.rtdb("get", "--", "-P74-Dhh"), "1\n")
    }

    @Test func longOptionTyposGetNoArgumentHint() throws {
        let sb = Sandbox()
        let r = sb.rtdb("get", "/x", "--nope")
        expectError(r, status: 2, code: "usage")
        #expect(r.error?.message == "unknown option --nope for get")
        let h = sb.rtdb("help", "-x")
        expectError(h, status: 2, code: "usage")
        #expect(h.error?.message == "unknown option -x for help")
        // Another command's short option is a misplaced option, not an argument.
        let s = sb.rtdb("set", "/a", "1", "-r")
        expectError(s, status: 2, code: "usage")
        #expect(s.error?.message == "unknown option -r for set")
    }

    @Test func textThatIsNotJSONHintsAtString() throws {
        let sb = Sandbox()
        for args in [["set", "/s", "hello"], ["set", "/s", "two words"], ["push", "/l", "hello"]] {
            let r = sb.rtdb(args)
            expectError(r, status: 3, code: "invalid_json")
            let message = try #require(r.error?.message)
            #expect(message.hasSuffix("; to write it as a string, use --string \"\(args[2])\""), "\(message)")
        }
        // Broken JSON is not text: no hint.
        for value in ["{\"a\":1", "[1,", "\"open", "  {"] {
            let r = sb.rtdb("set", "/s", value)
            expectError(r, status: 3, code: "invalid_json")
            #expect(r.error?.message.contains("--string") == false, "\(r)")
        }
        // Nor is stdin or a file: the hint is about the argument.
        let s = sb.rtdb("set", "/s", "-", stdin: .text("hello"))
        expectError(s, status: 3, code: "invalid_json")
        #expect(s.error?.message.contains("--string") == false, "\(s)")
        #expect(!sb.exists(sb.db))
        // The hinted spelling works.
        expectOK(sb.rtdb("set", "/s", "--string", "hello"), "{\"path\":\"/s\",\"value\":\"hello\"}\n")
    }

    @Test(arguments: [["--limit-to-first", "0"], ["--limit-to-last", "0"], ["--limit-to-first=0"], ["--limit-to-last", "-2"]])
    func limitsBelowOneAreUsageErrors(options: [String]) throws {
        let sb = Sandbox()
        sb.seed("/s", "{\"a\":1}")
        let r = sb.rtdb(["query", "/s"] + options)
        expectError(r, status: 2, code: "usage")
        #expect(r.error?.message.contains("≥ 1") == true, "\(r)")
        expectError(sb.rtdb(["watch", "/s"] + options), status: 2, code: "usage")
        expectLines(sb.rtdb("query", "/s", "--limit-to-first", "1"), ["{\"key\":\"a\",\"value\":1}"])
    }

    @Test func helpDescribesTheNewOptions() {
        let sb = Sandbox()
        for c in ["get", "query", "watch"] {
            #expect(sb.rtdb("help", c).stdout.contains("-r, --raw"), "help \(c) lists --raw")
        }
        // Help is wrapped to a width: phrases are looked for with the line breaks taken out.
        func flat(_ text: String) -> String { text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ") }
        let watch = flat(sb.rtdb("help", "watch").stdout)
        for text in ["-n, --changes-only", "--exec-fail WHAT", "continue", "stop", "SIGINT with 130", "SIGTERM with 143"] {
            #expect(watch.contains(text), "help watch mentions \(text)")
        }
        #expect(flat(sb.rtdb("help", "set").stdout).contains("(- reads stdin)"))
        #expect(flat(sb.rtdb("help", "update").stdout).contains("(- reads stdin)"))
        #expect(flat(sb.rtdb("help", "query").stdout).contains("(N ≥ 1)"))
        let overview = sb.rtdb("help").stdout
        #expect(flat(overview).contains("130/143 ended by SIGINT/SIGTERM"))
        #expect(flat(overview).contains("'man ./man/rtdb.1'"))
        for o in ["--auth", "--access-token", "--url", "--credentials", "--cacert"] {
            let line = overview.split(separator: "\n").first { $0.hasPrefix("  \(o) ") }
            #expect(line != nil && line?.contains("not supported") == false, "\(o): \(line ?? "missing")")
        }
    }
}
