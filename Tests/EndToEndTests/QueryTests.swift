import Foundation
import Testing

/// query with each option.
@Suite struct QueryTests {
    static let scores = "{\"ada\":12,\"bob\":7,\"cy\":30,\"dee\":7,\"eve\":\"x\",\"fay\":true,\"hal\":{\"a\":1},\"ivy\":false}"
    static let values: [String: String] = [
        "ada": "12", "bob": "7", "cy": "30", "dee": "7", "eve": "\"x\"", "fay": "true", "hal": "{\"a\":1}", "ivy": "false",
    ]

    func lines(_ keys: [String]) -> [String] {
        keys.map { "{\"key\":\"\($0)\",\"value\":\(QueryTests.values[$0] ?? "?")}" }
    }

    func scoresSandbox() -> Sandbox {
        let sb = Sandbox()
        sb.seed("/scores", QueryTests.scores)
        return sb
    }

    @Test(arguments: [
        ([String](), ["ada", "bob", "cy", "dee", "eve", "fay", "hal", "ivy"]),
        (["--order-by-key"], ["ada", "bob", "cy", "dee", "eve", "fay", "hal", "ivy"]),
        (["--order-by-value"], ["ivy", "fay", "bob", "dee", "ada", "cy", "eve", "hal"]),
        (["--order-by-value", "--start-at", "7"], ["bob", "dee", "ada", "cy", "eve", "hal"]),
        (["--order-by-value", "--start-after", "7"], ["ada", "cy", "eve", "hal"]),
        (["--order-by-value", "--end-at", "12"], ["ivy", "fay", "bob", "dee", "ada"]),
        (["--order-by-value", "--end-before", "12"], ["ivy", "fay", "bob", "dee"]),
        (["--order-by-value", "--equal-to", "7"], ["bob", "dee"]),
        (["--order-by-value", "--equal-to", "x"], ["eve"]),          // not JSON → a string
        (["--order-by-value", "--equal-to", "\"x\""], ["eve"]),
        (["--order-by-value", "--equal-to", "true"], ["fay"]),
        (["--order-by-value", "--equal-to", "false"], ["ivy"]),
        (["--order-by-value", "--equal-to", "8"], []),
        (["--order-by-value", "--start-at", "7", "--start-key", "c"], ["dee", "ada", "cy", "eve", "hal"]),
        (["--order-by-value", "--end-at", "7", "--end-key", "c"], ["ivy", "fay", "bob"]),
        (["--order-by-value", "--start-after", "7", "--start-key", "bob"], ["dee", "ada", "cy", "eve", "hal"]),
        (["--order-by-value", "--end-before", "7", "--end-key", "dee"], ["ivy", "fay", "bob"]),
        (["--order-by-value", "--equal-to", "7", "--start-key", "dee"], ["dee"]),
        (["--order-by-value", "--equal-to", "7", "--end-key", "bob"], ["bob"]),
        (["--order-by-value", "--equal-to", "7", "--start-key", "c"], []),
        (["--order-by-value", "--limit-to-first", "3"], ["ivy", "fay", "bob"]),
        (["--order-by-value", "--limit-to-last", "2"], ["eve", "hal"]),
        (["--order-by-value", "--start-at", "7", "--end-at", "30", "--limit-to-last", "2"], ["ada", "cy"]),
        (["--order-by-value", "--start-at", "7", "--end-at", "30", "--limit-to-first", "3"], ["bob", "dee", "ada"]),
        (["--order-by-value", "--start-at=7", "--limit-to-first=2"], ["bob", "dee"]),
        (["--limit-to-first", "100"], ["ada", "bob", "cy", "dee", "eve", "fay", "hal", "ivy"]),
        (["--limit-to-last", "2"], ["hal", "ivy"]),
        (["--order-by-key", "--start-at", "c", "--end-at", "e"], ["cy", "dee"]),
        (["--order-by-key", "--start-after", "bob", "--limit-to-first", "2"], ["cy", "dee"]),
        (["--order-by-key", "--end-before", "cy"], ["ada", "bob"]),
        (["--order-by-key", "--equal-to", "dee"], ["dee"]),
        (["--start-at", "fay"], ["fay", "hal", "ivy"]),
    ])
    func scoresQuery(options: [String], keys: [String]) {
        let sb = scoresSandbox()
        expectLines(sb.rtdb(["query", "/scores"] + options), lines(keys))
    }

    @Test func orderByKeyBoundsAreKeysWithIntegerKeysFirst() {
        let sb = Sandbox()
        sb.seed("/k", "{\"1\":\"a\",\"2\":\"b\",\"9\":\"c\",\"10\":\"d\",\"b\":\"e\",\"a\":\"f\"}")
        func q(_ opts: String...) -> [String] { sb.rtdb(["query", "/k"] + opts).lines.compactMap { object($0)?["key"] as? String } }
        #expect(q() == ["1", "2", "9", "10", "a", "b"])
        #expect(q("--start-at", "10") == ["10", "a", "b"])                   // key "10", numerically after 9
        #expect(q("--order-by-key", "--start-at", "9", "--end-at", "a") == ["9", "10", "a"])
        #expect(q("--end-at", "10") == ["1", "2", "9", "10"])
        #expect(q("--start-after", "9", "--end-before", "b") == ["10", "a"])
        expectLines(sb.rtdb("query", "/k", "--equal-to", "10"), ["{\"key\":\"10\",\"value\":\"d\"}"])
    }

    @Test func boundsParseAsJSONWhenTheyAreJSON() {
        let sb = Sandbox()
        sb.seed("/v", "{\"n\":10,\"s\":\"10\",\"t\":\"true\",\"b\":true}")
        expectLines(sb.rtdb("query", "/v", "--order-by-value", "--equal-to", "10"), ["{\"key\":\"n\",\"value\":10}"])
        expectLines(sb.rtdb("query", "/v", "--order-by-value", "--equal-to", "\"10\""), ["{\"key\":\"s\",\"value\":\"10\"}"])
        expectLines(sb.rtdb("query", "/v", "--order-by-value", "--equal-to", "true"), ["{\"key\":\"b\",\"value\":true}"])
        expectLines(sb.rtdb("query", "/v", "--order-by-value", "--equal-to", "\"true\""), ["{\"key\":\"t\",\"value\":\"true\"}"])
        // Numbers sort before strings: everything from 11 up is the two strings.
        expectLines(sb.rtdb("query", "/v", "--order-by-value", "--start-at", "11"),
                    ["{\"key\":\"s\",\"value\":\"10\"}", "{\"key\":\"t\",\"value\":\"true\"}"])
    }

    @Test func orderByChildFollowsTheTypeRanks() {
        let sb = Sandbox()
        // worked example (c has no h).
        sb.seed("/h", "{\"a\":{\"h\":3},\"b\":{\"h\":\"x\"},\"c\":{\"o\":1},\"d\":{\"h\":true},\"e\":{\"h\":3},\"f\":{\"h\":{\"z\":1}},\"g\":{\"h\":false},\"5\":{\"h\":3}}")
        let r = sb.rtdb("query", "/h", "--order-by-child", "h")
        #expect(r.status == 0 && r.stderr.isEmpty)
        #expect(r.lines.compactMap { object($0)?["key"] as? String } == ["c", "g", "d", "5", "a", "e", "b", "f"], "\(r)")
        #expect(r.lines.first == "{\"key\":\"c\",\"value\":{\"o\":1}}")
        #expect(r.lines.last == "{\"key\":\"f\",\"value\":{\"h\":{\"z\":1}}}")
        expectLines(sb.rtdb("query", "/h", "--order-by-child", "h", "--equal-to", "3", "--limit-to-last", "2"),
                    ["{\"key\":\"a\",\"value\":{\"h\":3}}", "{\"key\":\"e\",\"value\":{\"h\":3}}"])
    }

    @Test func orderByNestedChild() {
        let sb = Sandbox()
        sb.seed("/u", "{\"a\":{\"m\":{\"v\":3}},\"b\":{\"m\":{\"v\":1}},\"c\":{\"x\":1},\"d\":{\"m\":{\"v\":2}},\"e\":{\"m\":{\"v\":\"s\"}}}")
        func keys(_ opts: String...) -> [String] { sb.rtdb(["query", "/u"] + opts).lines.compactMap { object($0)?["key"] as? String } }
        #expect(keys("--order-by-child", "m/v") == ["c", "b", "d", "a", "e"])
        #expect(keys("--order-by-child", "m/v", "--equal-to", "null") == ["c"])
        #expect(keys("--order-by-child", "m/v", "--start-at", "2", "--end-at", "3") == ["d", "a"])
        #expect(keys("--order-by-child", "/m/v/", "--limit-to-last", "1") == ["e"])
        expectLines(sb.rtdb("query", "/u", "--order-by-child", "m/v", "--limit-to-first", "2"),
                    ["{\"key\":\"c\",\"value\":{\"x\":1}}", "{\"key\":\"b\",\"value\":{\"m\":{\"v\":1}}}"])
    }

    @Test func queryOfNothingOrOfALeafPrintsNothing() {
        let sb = Sandbox()
        expectOK(sb.rtdb("query", "/missing"), "")
        expectOK(sb.rtdb("query", "/missing", "--order-by-value", "--limit-to-last", "1"), "")
        sb.seed("/leaf", "5")
        expectOK(sb.rtdb("query", "/leaf"), "")
    }

    @Test func queryValuesRenderArraysAndNestedObjects() {
        let sb = Sandbox()
        sb.seed("/l", "[[1,2],{\"b\":1,\"a\":2},\"s\"]")
        expectLines(sb.rtdb("query", "/l"), [
            "{\"key\":\"0\",\"value\":[1,2]}",
            "{\"key\":\"1\",\"value\":{\"a\":2,\"b\":1}}",
            "{\"key\":\"2\",\"value\":\"s\"}",
        ])
    }

    @Test(arguments: [
        ["--order-by-key", "--order-by-value"],
        ["--order-by-value", "--order-by-child", "x"],
        ["--limit-to-first", "1", "--limit-to-last", "1"],
        ["--order-by-value", "--equal-to", "1", "--start-at", "0"],
        ["--order-by-value", "--equal-to", "1", "--end-before", "3"],
        ["--order-by-value", "--start-at", "1", "--start-after", "1"],
        ["--order-by-value", "--end-at", "1", "--end-before", "1"],
        ["--order-by-value", "--start-key", "a"],
        ["--order-by-value", "--end-key", "a"],
        ["--start-at", "a", "--start-key", "a"],              // key order: the bound is the key
        ["--limit-to-first", "-1"],
        ["--limit-to-first", "0"],                            // Firebase's SDKs refuse limits below 1
        ["--limit-to-last", "0"],
        ["--order-by-value", "--limit-to-last=0"],
        ["--limit-to-first", "x"],
        ["--limit-to-last"],
        ["--order-by-child"],
        ["--order-by-value", "--order-by-value"],
        ["--shallow"],
    ])
    func conflictingOrBadQueryOptionsAreUsageErrors(options: [String]) {
        let sb = scoresSandbox()
        expectError(sb.rtdb(["query", "/scores"] + options), status: 2, code: "usage")
    }

    @Test(arguments: [
        ["--order-by-value", "--start-at", "{\"a\":1}"],
        ["--order-by-child", "a.b"],
        ["--order-by-child", "/"],
    ])
    func invalidQueriesAreInvalidQuery(options: [String]) {
        let sb = scoresSandbox()
        expectError(sb.rtdb(["query", "/scores"] + options), status: 3, code: "invalid_query")
    }

    /// 32-bit integer keys first (numerically, shorter first on ties,
    /// at most 11 characters), then UTF-16 code-unit order.
    @Test func integerKeyRules() {
        let sb = Sandbox()
        let keys = ["-2147483649", "-2147483648", "2147483647", "2147483648", "-0", "0", "00000000001", "000000000001",
                    "1", "-", "-Mabc", "A", "a", "é", "+1", " 1", "07", "7"]
        sb.seed("/k", "{" + keys.enumerated().map { "\"\($0.element)\":\($0.offset)" }.joined(separator: ",") + "}")
        let expected = ["-2147483648", "0", "-0", "1", "00000000001", "7", "07", "2147483647",
                        " 1", "+1", "-", "-2147483649", "-Mabc", "000000000001", "2147483648", "A", "a", "é"]
        func q(_ opts: String...) -> [String] { sb.rtdb(["query", "/k"] + opts).lines.compactMap { object($0)?["key"] as? String } }
        #expect(q() == expected)
        #expect(q("--order-by-key", "--start-at", "1", "--end-at", "7") == ["1", "00000000001", "7"])
        #expect(q("--start-after", "7", "--limit-to-first", "3") == ["07", "2147483647", " 1"])
        #expect(q("--end-before", "-0") == ["-2147483648", "0"])
        #expect(q("--limit-to-last", "2") == ["a", "é"])
        // String order is by UTF-16 code units: U+1F600 (D83D DE00) < U+E000 < U+FF5E.
        sb.seed("/u", "{\"x\":\"\\uff5e\",\"y\":\"\\ud83d\\ude00\",\"z\":\"\\ue000\"}")
        #expect(sb.rtdb("query", "/u", "--order-by-value").lines.compactMap { object($0)?["key"] as? String } == ["y", "z", "x"])
        expectOK(sb.rtdb("get", "/u", "--shallow"), "{\"x\":true,\"y\":true,\"z\":true}\n")
        sb.seed("/uk", "{\"\\uff5e\":1,\"\\ud83d\\ude00\":2,\"\\ue000\":3}")
        expectOK(sb.rtdb("get", "/uk"), "{\"\u{1F600}\":2,\"\u{E000}\":3,\"\u{FF5E}\":1}\n")
    }

    @Test func valueTiesAreOrderedByKey() {
        let sb = Sandbox()
        sb.seed("/v", "{\"b\":1,\"10\":1,\"9\":1,\"a\":1.0,\"c\":0.5,\"d\":\"1\"}")
        func q(_ opts: String...) -> [String] { sb.rtdb(["query", "/v", "--order-by-value"] + opts).lines.compactMap { object($0)?["key"] as? String } }
        #expect(q() == ["c", "9", "10", "a", "b", "d"])
        #expect(q("--equal-to", "1") == ["9", "10", "a", "b"])
        #expect(q("--start-at", "1", "--start-key", "a") == ["a", "b", "d"])
        #expect(q("--equal-to", "1", "--start-key", "10") == ["10"])
        #expect(q("--limit-to-last", "2") == ["b", "d"])
    }
}
