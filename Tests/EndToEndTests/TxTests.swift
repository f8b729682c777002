import Foundation
import Testing

/// tx PATH -- CMD.
@Suite struct TxTests {
    /// A shell adder: reads the JSON number on stdin (null counts as 0) and prints n + 1.
    static let addOne = ["sh", "-c", "read n; [ \"$n\" = null ] && n=0; echo $((n + 1))"]

    @Test func commitPrintsTheRecord() {
        let sb = Sandbox()
        sb.seed("/n", "41")
        expectOK(sb.rtdb(["tx", "/n", "--"] + TxTests.addOne), "{\"path\":\"/n\",\"committed\":true,\"value\":42,\"attempts\":1}\n")
        expectOK(sb.rtdb("get", "/n"), "42\n")
        // From nothing: CMD gets null.
        expectOK(sb.rtdb(["tx", "/fresh", "--"] + TxTests.addOne), "{\"path\":\"/fresh\",\"committed\":true,\"value\":1,\"attempts\":1}\n")
    }

    @Test func commandGetsTheCurrentValueAsOneJSONLine() throws {
        let sb = Sandbox()
        sb.seed("/doc", "{\"b\":[1,2],\"a\":\"é\"}")
        let capture = sb.dir + "/stdin.txt"
        let r = sb.rtdb("tx", "/doc", "--", "sh", "-c", "cat > \"$0\"; echo '{\"new\":true}'", capture)
        expectOK(r, "{\"path\":\"/doc\",\"committed\":true,\"value\":{\"new\":true},\"attempts\":1}\n")
        let seen = try String(contentsOfFile: capture, encoding: .utf8)
        #expect(seen == "{\"a\":\"é\",\"b\":[1,2]}\n")
        #expect(sb.get("/doc") == "{\"new\":true}")
    }

    @Test func commandRunsWithoutAShell() throws {
        let sb = Sandbox()
        // Arguments reach CMD as they are: no globbing, no word splitting.
        let capture = sb.dir + "/args.txt"
        let r = sb.rtdb("tx", "/t", "--", "sh", "-c", "printf '%s|' \"$@\" > \"$0\"; echo 1", capture, "a b", "*", "$HOME")
        #expect(r.status == 0, "\(r)")
        #expect(try String(contentsOfFile: capture, encoding: .utf8) == "a b|*|$HOME|")
    }

    @Test func jqStyleTransaction() throws {
        let sb = Sandbox()
        try #require(Binary.onPath("jq") != nil, "jq is needed for this test")
        sb.seed("/posts/p1", "{\"starCount\":4,\"title\":\"t\"}")
        expectOK(sb.rtdb("tx", "/posts/p1", "--", "jq", ".starCount += 1"),
                 "{\"path\":\"/posts/p1\",\"committed\":true,\"value\":{\"starCount\":5,\"title\":\"t\"},\"attempts\":1}\n")
        expectOK(sb.rtdb("tx", "/posts/p1", "--", "jq", "-c", "null"), "{\"path\":\"/posts/p1\",\"committed\":true,\"value\":null,\"attempts\":1}\n")
        expectOK(sb.rtdb("get", "/posts"), "null\n")
    }

    @Test func nonZeroExitAborts() {
        let sb = Sandbox()
        sb.seed("/n", "{\"v\":1}")
        let r = sb.rtdb("tx", "/n", "--", "sh", "-c", "echo 99; exit 3")
        #expect(r.status == 5, "\(r)")
        #expect(r.stdout == "{\"path\":\"/n\",\"committed\":false,\"value\":{\"v\":1},\"attempts\":1}\n", "\(r)")
        #expect(r.error?.code == "not_committed", "\(r)")
        #expect(sb.get("/n") == "{\"v\":1}")
        let f = sb.rtdb("tx", "/n", "--", "false")
        #expect(f.status == 5 && f.error?.code == "not_committed", "\(f)")
        #expect(f.stdout == "{\"path\":\"/n\",\"committed\":false,\"value\":{\"v\":1},\"attempts\":1}\n", "\(f)")
        #expect(sb.get("/n") == "{\"v\":1}")
    }

    @Test func emptyOutputAborts() {
        let sb = Sandbox()
        sb.seed("/n", "7")
        for cmd in [["true"], ["sh", "-c", "printf '  \\n\\t\\n'"]] {
            let r = sb.rtdb(["tx", "/n", "--"] + cmd)
            #expect(r.status == 5, "\(r)")
            #expect(r.stdout == "{\"path\":\"/n\",\"committed\":false,\"value\":7,\"attempts\":1}\n", "\(r)")
            #expect(r.error?.code == "not_committed", "\(r)")
        }
        #expect(sb.get("/n") == "7")
    }

    @Test func nullOutputDeletes() {
        let sb = Sandbox()
        sb.seed("/n", "{\"a\":1}")
        expectOK(sb.rtdb("tx", "/n", "--", "echo", "null"), "{\"path\":\"/n\",\"committed\":true,\"value\":null,\"attempts\":1}\n")
        #expect(sb.get("/") == "null")
    }

    @Test func maxRetriesGivesUpWhenTheValueKeepsChanging() {
        let sb = Sandbox()
        sb.seed("/t", "1")
        // CMD itself changes /t every time it runs (another writer), so every attempt is stale.
        let r = sb.rtdb("tx", "/t", "--max-retries", "3", "--", "sh", "-c", "read n; \"$RTDB\" increment /t -q; echo 100",
                        env: ["RTDB": Binary.rtdb])
        #expect(r.status == 5, "\(r)")
        #expect(r.error?.code == "not_committed", "\(r)")
        #expect(r.stdout == "{\"path\":\"/t\",\"committed\":false,\"value\":4,\"attempts\":3}\n", "\(r)")
        #expect(sb.get("/t") == "4", "100 was never written")
    }

    @Test func retriesUntilTheValueIsStable() {
        let sb = Sandbox()
        sb.seed("/t", "1")
        // The first run bumps /t behind the transaction's back; the second run commits.
        let marker = sb.dir + "/ran-once"
        let script = "read n; if [ ! -e \"$0\" ]; then : > \"$0\"; \"$RTDB\" increment /t 10 -q; fi; echo $((n * 2))"
        let r = sb.rtdb("tx", "/t", "--", "sh", "-c", script, marker, env: ["RTDB": Binary.rtdb])
        expectOK(r, "{\"path\":\"/t\",\"committed\":true,\"value\":22,\"attempts\":2}\n")
        #expect(sb.get("/t") == "22")
    }

    /// On the embedded database the default is no limit: after 3 stale attempts the fourth
    /// runs CMD holding the write lock. Here CMD changes the value behind tx's back each time;
    /// in the fourth run that write cannot get in (it waits for the lock and gives up after its
    /// own 0.3 s timeout), so the fourth attempt commits.
    @Test func theFourthAttemptHoldsTheLockAndCommits() {
        let sb = Sandbox()
        sb.seed("/t", "0")
        let r = sb.rtdb("tx", "/t", "--", "sh", "-c", "read n; \"$RTDB\" increment /t -q --timeout 0.3 2>/dev/null; echo $((n + 100))",
                        env: ["RTDB": Binary.rtdb])
        expectOK(r, "{\"path\":\"/t\",\"committed\":true,\"value\":103,\"attempts\":4}\n")
        #expect(sb.get("/t") == "103")
    }

    @Test func badOutputOrBadCommandWritesNothing() {
        let sb = Sandbox()
        sb.seed("/n", "1")
        expectError(sb.rtdb("tx", "/n", "--", "echo", "{bad"), status: 3, code: "invalid_json")
        expectError(sb.rtdb("tx", "/n", "--", "echo", "{\"a.b\":1}"), status: 3, code: "invalid_key")
        expectError(sb.rtdb("tx", "/n", "--", "/nonexistent/command"), status: 1, code: "io_error")
        #expect(sb.get("/") == "{\"n\":1}")
    }

    @Test func usageErrors() {
        let sb = Sandbox()
        sb.seed("/n", "1")
        expectError(sb.rtdb("tx", "/n"), status: 2, code: "usage")
        expectError(sb.rtdb("tx", "/n", "echo", "1"), status: 2, code: "usage")
        expectError(sb.rtdb("tx", "/n", "--"), status: 2, code: "usage")
        expectError(sb.rtdb("tx"), status: 2, code: "usage")
        expectError(sb.rtdb("tx", "/n", "--max-retries", "0", "--", "echo", "2"), status: 2, code: "usage")
        expectError(sb.rtdb("tx", "/n", "--max-retries", "x", "--", "echo", "2"), status: 2, code: "usage")
        expectError(sb.rtdb("tx", "/.info/x", "--", "echo", "2"), status: 3, code: "invalid_path")
        #expect(sb.get("/") == "{\"n\":1}")
    }

    @Test func serverValuesInTheNewValueAreResolved() throws {
        let sb = Sandbox()
        sb.seed("/t", "{\"n\":4}")
        expectOK(sb.rtdb("tx", "/t", "--", "echo", "{\"n\":{\".sv\":{\"increment\":2}}}"),
                 "{\"path\":\"/t\",\"committed\":true,\"value\":{\"n\":6},\"attempts\":1}\n")
        let before = nowMillis()
        let r = sb.rtdb("tx", "/ts", "--", "echo", "{\".sv\":\"timestamp\"}")
        let ts = try #require((object(r.lines.first ?? "")?["value"] as? NSNumber)?.int64Value, "\(r)")
        #expect(ts >= before - 1000 && ts <= nowMillis() + 1000)
        expectOK(r, "{\"path\":\"/ts\",\"committed\":true,\"value\":\(ts),\"attempts\":1}\n")
        expectOK(sb.rtdb("get", "/ts"), "\(ts)\n")
    }

    @Test func largeValuesPassThroughTheCommand() {
        let sb = Sandbox()
        let big = "{\"n\":1,\"s\":\"" + String(repeating: "x", count: 3_000_000) + "\"}"
        expectOK(sb.rtdb("set", "/big", "-", "-q", stdin: .text(big)), "")
        // cat echoes 3 MB back while it is still being fed: no deadlock, value unchanged.
        expectOK(sb.rtdb("tx", "/big", "--", "cat"), "{\"path\":\"/big\",\"committed\":true,\"value\":\(big),\"attempts\":1}\n")
        // A command that never reads its stdin still works.
        expectOK(sb.rtdb("tx", "/big", "--", "echo", "1"), "{\"path\":\"/big\",\"committed\":true,\"value\":1,\"attempts\":1}\n")
    }
}
