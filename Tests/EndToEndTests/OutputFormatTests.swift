import Foundation
import Testing

/// numbers as JavaScript prints them, arrays, key order, raw UTF-8, byte-exact keys,
/// --pretty and -q.
@Suite struct OutputFormatTests {
    @Test(arguments: [
        ("1", "1"), ("1.0", "1"), ("-0", "0"), ("-0.0", "0"), ("1.5e3", "1500"), ("0.1", "0.1"),
        ("1e-7", "1e-7"), ("0.000001", "0.000001"), ("1e21", "1e+21"), ("1E21", "1e+21"),
        ("100000000000000000000", "100000000000000000000"), ("123456789.123", "123456789.123"),
        ("1e300", "1e+300"), ("5e-324", "5e-324"), ("-2.5e-8", "-2.5e-8"),
        ("9007199254740993", "9007199254740993"), ("123456789012345678", "123456789012345678"),
        ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808", "-9223372036854775808"),
        ("9223372036854775808", "9223372036854776000"), ("0.30000000000000004", "0.30000000000000004"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
    ])
    func numbersPrintAsJavaScriptDoes(input: String, printed: String) {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/n", input), "{\"path\":\"/n\",\"value\":\(printed)}\n")
        expectOK(sb.rtdb("get", "/n"), "\(printed)\n")
    }

    @Test(arguments: [
        ("[1,2,3]", "[1,2,3]"),
        ("{\"0\":\"a\",\"1\":\"b\",\"3\":\"d\"}", "[\"a\",\"b\",null,\"d\"]"),   // 3 < 2×3
        ("{\"1\":\"a\"}", "[null,\"a\"]"),                                      // 1 < 2×1
        ("{\"0\":\"a\",\"5\":\"b\"}", "{\"0\":\"a\",\"5\":\"b\"}"),             // 5 ≥ 2×2
        ("[1,null,3]", "[1,null,3]"),
        ("{\"01\":1,\"1\":2}", "{\"1\":2,\"01\":1}"),                           // "01" is no index
        ("{\"-1\":1,\"0\":2}", "{\"-1\":1,\"0\":2}"),
        ("[[1,2],{\"0\":true}]", "[[1,2],[true]]"),
        ("{\"a\":[null],\"b\":[]}", "null"),
    ])
    func arraysRenderByTheIndexRule(input: String, printed: String) {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/v", input), "{\"path\":\"/v\",\"value\":\(printed)}\n")
        expectOK(sb.rtdb("get", "/v"), "\(printed)\n")
    }

    @Test func objectKeysPrintInKeyOrder() {
        let sb = Sandbox()
        let input = "{\"b\":1,\"a\":2,\"10\":3,\"9\":4,\"-5\":5,\"Z\":6,\"_\":7,\"é\":8,\"-\":9,\"2147483648\":10,\"007\":11,\"7\":12}"
        let printed = "{\"-5\":5,\"7\":12,\"007\":11,\"9\":4,\"10\":3,\"-\":9,\"2147483648\":10,\"Z\":6,\"_\":7,\"a\":2,\"b\":1,\"é\":8}"
        expectOK(sb.rtdb("set", "/o", input), "{\"path\":\"/o\",\"value\":\(printed)}\n")
        expectOK(sb.rtdb("get", "/o"), printed + "\n")
        expectLines(sb.rtdb("query", "/o"), ["-5", "7", "007", "9", "10", "-", "2147483648", "Z", "_", "a", "b", "é"].enumerated().map {
            let values = [5, 12, 11, 4, 3, 9, 10, 6, 7, 2, 1, 8]
            return "{\"key\":\"\($0.element)\",\"value\":\(values[$0.offset])}"
        })
    }

    @Test func nonASCIITextIsPrintedRawWithMinimalEscapes() {
        let sb = Sandbox()
        // Escaped input, raw output: é, 😀 (a surrogate pair), U+2028, and DEL stay raw;
        // quote, backslash and C0 controls are escaped.
        let r = sb.rtdb("set", "/s", "\"h\\u00e9llo \\ud83d\\ude00 ☃ \\u2028 \\u007f \\\" \\\\ \\n \\t \\u0001 /\"")
        expectOK(r, "{\"path\":\"/s\",\"value\":\"héllo 😀 ☃ \u{2028} \u{7f} \\\" \\\\ \\n \\t \\u0001 /\"}\n")
        expectOK(sb.rtdb("get", "/s"), "\"héllo 😀 ☃ \u{2028} \u{7f} \\\" \\\\ \\n \\t \\u0001 /\"\n")
        // Keys too.
        expectOK(sb.rtdb("set", "/日本", "{\"ключ\":\"值\"}"), "{\"path\":\"/日本\",\"value\":{\"ключ\":\"值\"}}\n")
        expectOK(sb.rtdb("get", "/"), "{\"s\":\"héllo 😀 ☃ \u{2028} \u{7f} \\\" \\\\ \\n \\t \\u0001 /\",\"日本\":{\"ключ\":\"值\"}}\n")
    }

    @Test func keysAreByteExactPrecomposedAndDecomposedAreTwoKeys() {
        let sb = Sandbox()
        let pre = "\u{E9}"          // é, one scalar
        let dec = "e\u{301}"        // e + combining acute
        expectOK(sb.rtdb("set", "/k/" + pre, "1"), "{\"path\":\"/k/\(pre)\",\"value\":1}\n")
        expectOK(sb.rtdb("set", "/k/" + dec, "2"), "{\"path\":\"/k/\(dec)\",\"value\":2}\n")
        let r = sb.rtdb("get", "/k")
        #expect(r.status == 0 && r.stderr.isEmpty)
        // e (0x65) sorts before é (0xE9) by UTF-16 code unit.
        #expect(r.stdoutBytes == Array("{\"\(dec)\":2,\"\(pre)\":1}\n".utf8), "\(r)")
        #expect(r.stdoutBytes.count == 17)   // {"é":2,"é":1}\n with 3 + 2 bytes of key
        expectOK(sb.rtdb("get", "/k/" + pre), "1\n")
        expectOK(sb.rtdb("get", "/k/" + dec), "2\n")
        expectOK(sb.rtdb("get", "/k", "--shallow"), "{\"\(dec)\":true,\"\(pre)\":true}\n")
        // In data, via JSON escapes.
        let r2 = sb.rtdb("set", "/j", "{\"\\u00e9\":\"pre\",\"e\\u0301\":\"dec\"}")
        #expect(r2.stdoutBytes == Array("{\"path\":\"/j\",\"value\":{\"\(dec)\":\"dec\",\"\(pre)\":\"pre\"}}\n".utf8), "\(r2)")
        expectOK(sb.rtdb("remove", "/j/" + pre), "{\"path\":\"/j/\(pre)\",\"value\":null}\n")
        #expect(sb.rtdb("get", "/j").stdoutBytes == Array("{\"\(dec)\":\"dec\"}\n".utf8))
    }

    @Test func prettyIndentsOutput() {
        let sb = Sandbox()
        expectOK(sb.rtdb("--pretty", "set", "/a", "{\"c\":[1,2],\"b\":{\"x\":\"y\"}}"),
                 "{\n  \"path\": \"/a\",\n  \"value\": {\n    \"b\": {\n      \"x\": \"y\"\n    },\n    \"c\": [\n      1,\n      2\n    ]\n  }\n}\n")
        expectOK(sb.rtdb("get", "/a", "--pretty"),
                 "{\n  \"b\": {\n    \"x\": \"y\"\n  },\n  \"c\": [\n    1,\n    2\n  ]\n}\n")
        expectOK(sb.rtdb("get", "/a/b/x", "--pretty"), "\"y\"\n")
        // The pretty text is the same JSON.
        let compact = sb.rtdb("get", "/a").stdout
        let pretty = sb.rtdb("get", "/a", "--pretty").stdout
        #expect((parseJSON(compact) as? NSDictionary) == (parseJSON(pretty) as? NSDictionary))
    }

    @Test func quietPrintsNothingOnSuccessButStillReportsErrors() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/q", "1", "-q"), "")
        expectOK(sb.rtdb("-q", "set", "/q", "2"), "")
        expectOK(sb.rtdb("--quiet", "get", "/q"), "")
        expectOK(sb.rtdb("update", "/", "{\"r\":1}", "--quiet"), "")
        expectOK(sb.rtdb("push", "/l", "1", "-q"), "")
        expectOK(sb.rtdb("push", "/l", "--lines", "-q", stdin: .text("2\n3\n")), "")
        expectOK(sb.rtdb("query", "/l", "-q"), "")
        expectOK(sb.rtdb("increment", "/c", "-q"), "")
        expectOK(sb.rtdb("tx", "/c", "-q", "--", "sh", "-c", "read n; echo $((n+1))"), "")
        expectOK(sb.rtdb("remove", "/r", "-q"), "")
        // Every quiet write happened.
        #expect(sb.get("/q") == "2")
        #expect(sb.get("/c") == "2")
        #expect(sb.get("/r") == "null")
        #expect(sb.rtdb("query", "/l").lines.compactMap { object($0)?["value"] as? Int } == [1, 2, 3])
        // Errors still go to stderr with their status.
        expectError(sb.rtdb("set", "/x", "{bad", "-q"), status: 3, code: "invalid_json")
        expectError(sb.rtdb("-q", "tx", "/c", "--", "false"), status: 5, code: "not_committed")
    }

    @Test func everyLineEndsWithANewlineAndThereAreNoBlankLines() {
        let sb = Sandbox()
        let r = sb.rtdb("push", "/l", "--lines", stdin: .text("1\n\n\"x\"\n{\"a\":[1]}\n"))
        #expect(r.status == 0)
        #expect(r.stdout.hasSuffix("\n"))
        #expect(!r.stdout.contains("\n\n"))
        #expect(r.lines.count == 3)
        #expect(r.lines.allSatisfy { object($0) != nil })
    }
}
