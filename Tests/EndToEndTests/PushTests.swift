import Foundation
import Testing

/// push and push --lines.
@Suite struct PushTests {
    /// Checks one push output line and returns its key.
    func pushed(_ line: String, under path: String, value: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        guard let obj = object(line), let key = obj["key"] as? String else {
            Issue.record("not a push line: \(line)", sourceLocation: sourceLocation)
            return ""
        }
        #expect(isPushID(key), "key \(key) is not a 20-character push ID", sourceLocation: sourceLocation)
        let prefix = path == "/" ? "/" : path + "/"
        #expect(line == "{\"path\":\"\(prefix)\(key)\",\"key\":\"\(key)\",\"value\":\(value)}",
                "push line shape: \(line)", sourceLocation: sourceLocation)
        return key
    }

    @Test func pushPrintsPathKeyAndValue() {
        let sb = Sandbox()
        let r = sb.rtdb("push", "/posts", "{\"title\":\"first\",\"n\":1}")
        #expect(r.status == 0 && r.stderr.isEmpty && r.lines.count == 1, "\(r)")
        let k1 = pushed(r.lines.first ?? "", under: "/posts", value: "{\"n\":1,\"title\":\"first\"}")
        expectOK(sb.rtdb("get", "/posts/" + k1), "{\"n\":1,\"title\":\"first\"}\n")
        let r2 = sb.rtdb("push", "posts/", "\"second\"")
        let k2 = pushed(r2.lines.first ?? "", under: "/posts", value: "\"second\"")
        #expect(k1 < k2, "push IDs are chronological: \(k1) then \(k2)")
        expectLines(sb.rtdb("query", "/posts"), [
            "{\"key\":\"\(k1)\",\"value\":{\"n\":1,\"title\":\"first\"}}",
            "{\"key\":\"\(k2)\",\"value\":\"second\"}",
        ])
    }

    @Test func pushAtTheRoot() {
        let sb = Sandbox()
        let r = sb.rtdb("push", "/", "7")
        let key = pushed(r.lines.first ?? "", under: "/", value: "7")
        expectOK(sb.rtdb("get", "/"), "{\"\(key)\":7}\n")
    }

    @Test func pushValueSources() throws {
        let sb = Sandbox()
        let a = sb.rtdb("push", "/l", "--string", "hi there")
        _ = pushed(a.lines.first ?? "", under: "/l", value: "\"hi there\"")
        let b = sb.rtdb("push", "/l", "-s", "x")
        _ = pushed(b.lines.first ?? "", under: "/l", value: "\"x\"")
        let c = sb.rtdb("push", "/l", "-", stdin: .text("{\"from\":\"stdin\"}\n"))
        _ = pushed(c.lines.first ?? "", under: "/l", value: "{\"from\":\"stdin\"}")
        let f = sb.write("v.json", "[true,false]")
        let d = sb.rtdb("push", "/l", "--file", f)
        _ = pushed(d.lines.first ?? "", under: "/l", value: "[true,false]")
        let before = nowMillis()
        let e = sb.rtdb("push", "/l", "{\"at\":{\".sv\":\"timestamp\"}}")
        let obj = try #require(object(e.lines.first ?? ""), "\(e)")
        let at = try #require(((obj["value"] as? [String: Any])?["at"] as? NSNumber)?.int64Value, "\(e)")
        #expect(at >= before - 1000 && at <= nowMillis() + 1000)
        _ = pushed(e.lines.first ?? "", under: "/l", value: "{\"at\":\(at)}")
        #expect(sb.rtdb("query", "/l").lines.count == 5)
    }

    @Test func pushLinesPushesEachLineInOrderAsOneWrite() {
        let sb = Sandbox()
        let input = "1\n\"two\"\n\n   \n{\"x\":3,\"a\":[1]}\nfalse\n"
        let r = sb.rtdb("push", "/items", "--lines", stdin: .text(input))
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        let values = ["1", "\"two\"", "{\"a\":[1],\"x\":3}", "false"]
        #expect(r.lines.count == values.count, "\(r)")
        var keys: [String] = []
        for (line, v) in zip(r.lines, values) { keys.append(pushed(line, under: "/items", value: v)) }
        #expect(keys == keys.sorted() && Set(keys).count == keys.count, "keys strictly increase in input order: \(keys)")
        expectLines(sb.rtdb("query", "/items"), zip(keys, values).map { "{\"key\":\"\($0)\",\"value\":\($1)}" })
    }

    @Test func pushLinesWithoutTrailingNewlineAndCRLF() {
        let sb = Sandbox()
        let r = sb.rtdb("push", "/l", "--lines", stdin: .text("1\r\n2"))
        #expect(r.status == 0, "\(r)")
        #expect(r.lines.compactMap { object($0)?["value"] as? Int } == [1, 2], "\(r)")
    }

    @Test func pushLinesOfManyItemsKeepsOrder() {
        let sb = Sandbox()
        let n = 2000
        let input = (0..<n).map { "{\"i\":\($0)}\n" }.joined()
        let r = sb.rtdb("push", "/many", "--lines", "-q", stdin: .text(input))
        expectOK(r, "")
        let q = sb.rtdb("query", "/many")
        #expect(q.status == 0)
        let order = q.lines.compactMap { (object($0)?["value"] as? [String: Any])?["i"] as? Int }
        #expect(order == Array(0..<n))
    }

    @Test func pushLinesWithABadLineWritesNothing() {
        let sb = Sandbox()
        sb.seed("/items", "{\"old\":1}")
        let before = sb.get("/")
        expectError(sb.rtdb("push", "/items", "--lines", stdin: .text("1\n2\n{bad\n4\n")), status: 3, code: "invalid_json")
        #expect(sb.get("/") == before)
        expectError(sb.rtdb("push", "/items", "--lines", stdin: .text("1\n{\"a.b\":1}\n")), status: 3, code: "invalid_key")
        #expect(sb.get("/") == before)
        expectError(sb.rtdb("push", "/items", "--lines", stdin: .text("1\n2 3\n")), status: 3, code: "invalid_json")
        #expect(sb.get("/") == before)
        let big = "\"" + String(repeating: "x", count: 10 * 1024 * 1024 + 1) + "\""
        expectError(sb.rtdb("push", "/items", "--lines", stdin: .text("1\n" + big + "\n")), status: 3, code: "too_large")
        #expect(sb.get("/") == before)
    }

    @Test func pushLinesRefusesAnotherValue() {
        let sb = Sandbox()
        expectError(sb.rtdb("push", "/l", "1", "--lines", stdin: .text("2\n")), status: 2, code: "usage")
        expectError(sb.rtdb("push", "/l", "--lines", "--string", "x", stdin: .text("2\n")), status: 2, code: "usage")
        #expect(sb.get("/") == "null")
    }
}
