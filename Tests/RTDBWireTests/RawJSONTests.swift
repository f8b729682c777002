import Testing
import RTDBCore
@testable import RTDBWire

private func raw(_ s: String) throws -> RawJSON { try RawJSON.parse(Array(s.utf8)) }

private func text(_ v: RawJSON, in s: String) -> String {
    String(decoding: Array(s.utf8)[v.range], as: UTF8.self)
}

@Suite("RawJSON: protocol envelopes")
struct RawJSONTests {
    @Test("a realtime request: members in order, values with their source ranges")
    func envelope() throws {
        let s = #"{"t":"d","d":{"r":7,"a":"p","b":{"p":"/a/b","d":{"x":[1,null,true],"y":"z"}}}}"#
        let m = try raw(s)
        #expect(m.members?.map { $0.key } == ["t", "d"])
        #expect(m["t"]?.string == "d")
        let d = try #require(m["d"])
        #expect(d["r"]?.int == 7)
        #expect(d["a"]?.string == "p")
        let b = try #require(d["b"])
        #expect(b["p"]?.string == "/a/b")
        let data = try #require(b["d"])
        #expect(text(data, in: s) == #"{"x":[1,null,true],"y":"z"}"#)
        #expect(data["x"]?.items?.count == 3)
        #expect(data["x"]?.items?[1].isNull == true)
        #expect(m["missing"] == nil)
        #expect(m["t"]?["x"] == nil)
    }

    @Test("data inside an envelope reads by the database's rules")
    func node() throws {
        let s = #"{"d":{"b":2,"gone":null,"empty":{},"a":{".value":1,".priority":5}}}"#
        let m = try raw(s)
        let n = try #require(try m["d"]?.node(in: Array(s.utf8)))
        #expect(JSONWriter.string(n, export: true) == #"{"a":{".value":1,".priority":5},"b":2}"#)
        let sv = #"{"d":{"at":{".sv":"timestamp"}}}"#
        let v = try #require(try raw(sv)["d"]?.node(in: Array(sv.utf8)))
        #expect(ServerValues.containsPlaceholder(v))
    }

    @Test("a repeated key: the last one counts")
    func duplicates() throws {
        #expect(try raw(#"{"a":1,"a":2}"#)["a"]?.int == 2)
    }

    @Test("escapes and surrogate pairs decode; whitespace around values is allowed")
    func strings() throws {
        #expect(try raw(#" "a\"b\\c\/d\b\f\n\r\t" "#).string == "a\"b\\c/d\u{8}\u{c}\n\r\t")
        #expect(try raw(#""\u00e9\u20AC\ud83d\ude00""#).string == "é€😀")
        #expect(try raw("\"é😀\"").string == "é😀")
    }

    @Test("numbers and integers", arguments: [
        ("0", Int64(0)), ("-12", -12), ("1e3", 1000), ("2147483647", 2_147_483_647), ("1.5", nil), ("1e300", nil),
    ] as [(String, Int64?)])
    func numbers(s: String, int: Int64?) throws {
        #expect(try raw(s).int == int)
    }

    @Test("malformed input is a syntax error", arguments: [
        "", "{", "{\"a\"}", "{\"a\":1,}", "[1,]", "[1 2]", "{\"a\":1} x", "tru", "nul", "\"abc", "\"\\x\"",
        "\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"", "\"\\u12\"", "\"a\u{1}b\"", "-", "1e999", "0x10", "{a:1}",
        "'a'", "NaN",
    ])
    func malformed(s: String) {
        #expect(throws: RawJSON.SyntaxError.self) { try raw(s) }
    }

    @Test("invalid UTF-8 inside a string is refused")
    func badUTF8() {
        #expect(throws: RawJSON.SyntaxError.self) { try RawJSON.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: RawJSON.SyntaxError.self) { try RawJSON.parse([0x22, 0xFF, 0x22]) }
    }

    @Test("nesting is bounded: 600 levels parse, deeper ones are refused")
    func depth() throws {
        let ok = String(repeating: "[", count: 601) + String(repeating: "]", count: 601)
        #expect(throws: Never.self) { try raw(ok) }
        let deep = String(repeating: "[", count: 602) + String(repeating: "]", count: 602)
        #expect(throws: RawJSON.SyntaxError.self) { try raw(deep) }
        let deepObject = String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_000)
        #expect(throws: RawJSON.SyntaxError.self) { try raw(deepObject) }
    }
}
