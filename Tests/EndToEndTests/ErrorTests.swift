import Foundation
import Testing

/// Bad input: each case has its exit status and error code, prints nothing on stdout, and
/// leaves the data exactly as it was (get / before == get / after).
@Suite struct ErrorTests {
    static let seedData = "{\"a\":{\"b\":1,\"c\":[1,2]},\"s\":\"text\",\"n\":5}"

    /// A sandbox with some data; returns it and the `get /` output to compare against.
    func seeded() -> (Sandbox, String) {
        let sb = Sandbox()
        sb.seed("/", ErrorTests.seedData)
        let before = sb.get("/")
        #expect(before == "{\"a\":{\"b\":1,\"c\":[1,2]},\"n\":5,\"s\":\"text\"}")
        return (sb, before)
    }

    func check(_ args: [String], stdin: Input = .none, status: Int32, code: String,
               sourceLocation: SourceLocation = #_sourceLocation) {
        let (sb, before) = seeded()
        expectError(sb.rtdb(args, stdin: stdin), status: status, code: code, sourceLocation: sourceLocation)
        #expect(sb.get("/") == before, "data changed by \(args)", sourceLocation: sourceLocation)
    }

    // MARK: invalid JSON

    @Test(arguments: ["{oops", "{\"a\":1,}", "[1,2", "'single'", "hello", "1 2", "", "NaN", "Infinity", "{\"a\" 1}",
                      "\"unterminated", "01", "1.", "\"\\x\"", "\"\\ud800\"", "{\"a\":1}}", "tru"])
    func invalidJSONArgument(text: String) {
        check(["set", "/a", text], status: 3, code: "invalid_json")
    }

    @Test func invalidJSONOnStdinFileAndUpdate() {
        check(["set", "/a", "-"], stdin: .text("{\"x\":"), status: 3, code: "invalid_json")
        check(["set", "/a", "-"], stdin: .text(""), status: 3, code: "invalid_json")
        check(["set", "/a", "-"], stdin: .bytes([0x22, 0x61, 0xFF, 0x62, 0x22]), status: 3, code: "invalid_json")   // not UTF-8
        check(["set", "/a", "-"], stdin: .bytes([0x31, 0xEF, 0xBB, 0xBF]), status: 3, code: "invalid_json")          // a BOM after the start
        check(["update", "/a", "{\"b\":}"], status: 3, code: "invalid_json")
        check(["push", "/a", "[1,]"], status: 3, code: "invalid_json")
        let (sb, before) = seeded()
        let f = sb.write("bad.json", "{\"unclosed\": [1, 2}")
        expectError(sb.rtdb("set", "/a", "--file", f), status: 3, code: "invalid_json")
        #expect(sb.get("/") == before)
    }

    // MARK: keys and paths

    @Test(arguments: [".", "$", "#", "[", "]"])
    func forbiddenCharacterInAPath(char: String) {
        check(["set", "/a/x\(char)y", "1"], status: 3, code: "invalid_path")
        check(["set", "/\(char)", "1"], status: 3, code: "invalid_path")
        check(["update", "/a\(char)", "{\"b\":1}"], status: 3, code: "invalid_path")
        check(["push", "/l\(char)", "1"], status: 3, code: "invalid_path")
        check(["remove", "/a/b\(char)"], status: 3, code: "invalid_path")
        check(["increment", "/n\(char)"], status: 3, code: "invalid_path")
        check(["get", "/a\(char)b"], status: 3, code: "invalid_path")
        check(["query", "/a\(char)b"], status: 3, code: "invalid_path")
    }

    @Test(arguments: [".", "$", "#", "[", "]", "/"])
    func forbiddenCharacterInADataKey(char: String) {
        let key = "x\(char)y"
        check(["set", "/a", "{\"\(key)\":1}"], status: 3, code: "invalid_key")
        check(["set", "/a", "{\"ok\":{\"deep\":{\"\(key)\":true}}}"], status: 3, code: "invalid_key")
        check(["push", "/a", "{\"\(key)\":1}"], status: 3, code: "invalid_key")
        check(["update", "/a", "{\"b\":{\"\(key)\":1}}"], status: 3, code: "invalid_key")
    }

    @Test func forbiddenCharacterInAnUpdatePath() {
        check(["update", "/a", "{\"x.y\":1}"], status: 3, code: "invalid_key")
        check(["update", "/a", "{\"b/c$\":1}"], status: 3, code: "invalid_key")
        check(["update", "/a", "{\"\":1}"], status: 3, code: "invalid_key")
    }

    @Test(arguments: ["\u{01}", "\u{1F}", "\n", "\t", "\u{7F}", "\u{00}"])
    func controlCharacterInAKey(char: String) {
        let escaped = String(format: "\\u%04x", char.unicodeScalars.first!.value)
        check(["set", "/a", "{\"x\(escaped)y\":1}"], status: 3, code: "invalid_key")
        if char != "\u{00}" {   // a NUL cannot be passed in an argument
            check(["set", "/a/x\(char)y", "1"], status: 3, code: "invalid_path")
        }
    }

    @Test func emptyDataKey() {
        check(["set", "/a", "{\"\":1}"], status: 3, code: "invalid_key")
    }

    @Test func dotKeysOtherThanMetadataAreRefused() {
        check(["set", "/a", "{\".foo\":1}"], status: 3, code: "invalid_key")
    }

    // MARK: depth

    @Test func depth32IsAllowedAnd33IsTooDeep() {
        let (sb, before) = seeded()
        let p32 = String(repeating: "/k", count: 32), p33 = String(repeating: "/k", count: 33)
        expectError(sb.rtdb("set", p33, "1"), status: 3, code: "too_deep")
        #expect(sb.get("/") == before)
        // Path plus data: 30 levels of path and 3 of data.
        let p30 = String(repeating: "/k", count: 30)
        expectError(sb.rtdb("set", p30, "{\"x\":{\"y\":{\"z\":1}}}"), status: 3, code: "too_deep")
        #expect(sb.get("/") == before)
        // Data alone: 33 levels below /d would be 34 in all; 32 in all is fine.
        var deep33 = "1", deep31 = "1"
        for _ in 0..<32 { deep33 = "{\"k\":\(deep33)}" }
        for _ in 0..<31 { deep31 = "{\"k\":\(deep31)}" }
        expectError(sb.rtdb("set", "/d", deep33), status: 3, code: "too_deep")
        expectError(sb.rtdb("update", "/", "{\"d\":\(deep33)}"), status: 3, code: "too_deep")
        expectError(sb.rtdb("push", p30, "{\"x\":{\"y\":1}}"), status: 3, code: "too_deep")   // 30 + id + 2
        #expect(sb.get("/") == before)

        expectOK(sb.rtdb("set", p32, "1"), "{\"path\":\"\(p32)\",\"value\":1}\n")
        expectOK(sb.rtdb("get", p32), "1\n")
        let r = sb.rtdb("set", "/d", deep31)   // /d + 31 = 32 levels
        expectOK(r, "{\"path\":\"/d\",\"value\":\(deep31)}\n")
        expectOK(sb.rtdb("get", "/d"), deep31 + "\n")
    }

    // MARK: key length

    @Test func keyOf768BytesIsAllowedAnd769IsNot() {
        let (sb, before) = seeded()
        let k768 = String(repeating: "a", count: 768), k769 = String(repeating: "a", count: 769)
        let e768 = String(repeating: "é", count: 384), e769 = e768 + "a"    // 2-byte characters
        expectError(sb.rtdb("set", "/" + k769, "1"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("set", "/" + e769, "1"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("set", "/a", "{\"\(k769)\":1}"), status: 3, code: "invalid_key")
        expectError(sb.rtdb("set", "/a", "{\"\(e769)\":1}"), status: 3, code: "invalid_key")
        #expect(sb.get("/") == before)
        expectOK(sb.rtdb("set", "/" + k768, "1"), "{\"path\":\"/\(k768)\",\"value\":1}\n")
        expectOK(sb.rtdb("set", "/" + e768, "2"), "{\"path\":\"/\(e768)\",\"value\":2}\n")
        expectOK(sb.rtdb("set", "/kk", "{\"\(k768)\":3}"), "{\"path\":\"/kk\",\"value\":{\"\(k768)\":3}}\n")
        expectOK(sb.rtdb("get", "/" + e768), "2\n")
    }

    // MARK: size

    @Test func stringOver10MiBIsTooLarge() {
        let (sb, before) = seeded()
        let limit = 10 * 1024 * 1024
        let over = "\"" + String(repeating: "x", count: limit + 1) + "\""
        expectError(sb.rtdb("set", "/big", "-", stdin: .text(over)), status: 3, code: "too_large")
        #expect(sb.get("/") == before)
        // Multi-byte: 10 MiB + 1 bytes of UTF-8 in fewer characters.
        let overUTF8 = "\"" + String(repeating: "é", count: limit / 2) + "x\""
        expectError(sb.rtdb("set", "/big", "-", stdin: .text(overUTF8)), status: 3, code: "too_large")
        #expect(sb.get("/") == before)
        // Exactly 10 MiB is fine.
        let exact = "\"" + String(repeating: "y", count: limit) + "\""
        let r = sb.rtdb("set", "/big", "-", "-q", stdin: .text(exact))
        expectOK(r, "")
        #expect(sb.rtdb("get", "/big").stdout == exact + "\n")
    }

    // MARK: update rules

    @Test func overlappingUpdatePathsAreRefused() {
        check(["update", "/", "{\"a\":1,\"a/b\":2}"], status: 3, code: "invalid_data")
        check(["update", "/", "{\"a/b\":2,\"a\":1}"], status: 3, code: "invalid_data")
        check(["update", "/", "{\"x/y\":1,\"x/y/z\":2,\"n\":9}"], status: 3, code: "invalid_data")
        check(["update", "/", "{\"a/b\":1,\"a//b/\":2}"], status: 3, code: "invalid_data")
    }

    @Test func updateNeedsAnObject() {
        check(["update", "/a", "5"], status: 3, code: "invalid_data")
        check(["update", "/a", "[1,2]"], status: 3, code: "invalid_data")
        check(["update", "/a", "\"s\""], status: 3, code: "invalid_data")
    }

    @Test func updateIsAllOrNothing() {
        // The second path is bad: the first must not be written either.
        check(["update", "/", "{\"n\":6,\"a/x.y\":1}"], status: 3, code: "invalid_key")
        check(["update", "/", "{\"n\":6,\"s\":{\"bad#\":1}}"], status: 3, code: "invalid_key")
        check(["update", "/", "{\"n\":6,\"s\":{\".sv\":\"nope\"}}"], status: 3, code: "invalid_data")
    }

    // MARK: server values

    @Test func badServerValues() {
        check(["set", "/a", "{\".sv\":\"bogus\"}"], status: 3, code: "invalid_data")
        check(["set", "/a", "{\".sv\":{\"increment\":\"x\"}}"], status: 3, code: "invalid_data")
        check(["set", "/a", "{\".sv\":\"timestamp\",\"x\":1}"], status: 3, code: "invalid_data")
    }

    // MARK: .info

    @Test func writesUnderInfoAreRefused() {
        check(["set", "/.info/x", "1"], status: 3, code: "invalid_path")
        check(["set", "/.info", "1"], status: 3, code: "invalid_path")
        check(["update", "/", "{\".info/x\":1}"], status: 3, code: "invalid_path")
        check(["update", "/.info", "{\"x\":1}"], status: 3, code: "invalid_path")
        check(["push", "/.info", "1"], status: 3, code: "invalid_path")
        check(["remove", "/.info/connected"], status: 3, code: "invalid_path")
        check(["increment", "/.info/n"], status: 3, code: "invalid_path")
        check(["tx", "/.info/x", "--", "echo", "1"], status: 3, code: "invalid_path")
    }

    // MARK: invalid UTF-8 in arguments

    /// Keys are compared and stored byte for byte; an argument that is not UTF-8
    /// cannot name a key, so it must be refused, not silently rewritten to U+FFFD.
    @Test func pathArgumentThatIsNotUTF8IsRefused() {
        let (sb, before) = seeded()
        // Pass the raw bytes through sh so the argument really is not UTF-8.
        let r = sb.program(["sh", "-c", "exec \"$RTDB\" set \"$(printf '/x\\377y')\" 1"])
        expectError(r, status: 3, code: "invalid_path")
        #expect(sb.get("/") == before, "bytes FF were stored as another key")
    }

    /// The same bytes are refused on stdin (invalid_json); an argument must not be treated
    /// differently.
    @Test func valueArgumentThatIsNotUTF8IsRefused() {
        let (sb, before) = seeded()
        let r = sb.program(["sh", "-c", "exec \"$RTDB\" set /x \"$(printf '\"a\\377b\"')\""])
        expectError(r, status: 3, code: "invalid_json")
        #expect(sb.get("/") == before)
    }

    @Test func numbersOutOfRangeAreInvalidData() {
        check(["set", "/a", "1e400"], status: 3, code: "invalid_data")
        check(["set", "/a", "{\"x\":-1e400}"], status: 3, code: "invalid_data")
        check(["increment", "/n", "1e999"], status: 3, code: "invalid_data")
    }
}
