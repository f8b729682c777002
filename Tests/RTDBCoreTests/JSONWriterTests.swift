import Testing
@testable import RTDBCore

@Suite("JSONWriter")
struct JSONWriterTests {
    // MARK: numbers as JavaScript prints them (checked against node's JSON.stringify)

    @Test("doubles print like Number.prototype.toString", arguments: [
        (1.0, "1"), (0.1, "0.1"), (1e-7, "1e-7"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"), (1.5e300, "1.5e+300"),
        (-0.0, "0"), (0.0, "0"), (Double.leastNonzeroMagnitude, "5e-324"), (-Double.leastNonzeroMagnitude, "-5e-324"), (0.000001, "0.000001"),
        (0.0000012, "0.0000012"), (1.2e-7, "1.2e-7"), (-1.5, "-1.5"), (100.0, "100"), (123.456, "123.456"),
        (9007199254740992.0, "9007199254740992"), (9223372036854775808.0, "9223372036854776000"),
        (1.7976931348623157e308, "1.7976931348623157e+308"), (-1e21, "-1e+21"),
        (0.1 + 0.2, "0.30000000000000004"), (1.0 / 3.0, "0.3333333333333333"), (2.5e-5, "0.000025"),
        (1e100, "1e+100"), (123e-20, "1.23e-18"), (4.35, "4.35"), (999999999999999900000.0, "999999999999999900000"),
        (12345678.9, "12345678.9"), (1e-5, "0.00001"), (12345678901234567890.0, "12345678901234567000"),
        (1.2345678901234568e29, "1.2345678901234568e+29"), (0.5, "0.5"), (-0.000001, "-0.000001"),
        (1.0000000000000002, "1.0000000000000002"), (2.2250738585072014e-308, "2.2250738585072014e-308"),
        (9.5367431640625e-7, "9.5367431640625e-7"), (1e16, "10000000000000000"),
        (123456789.123456789, "123456789.12345679"), (-100.0, "-100"), (1e-6, "0.000001"),
        (1234567890123456.7, "1234567890123456.8"), (4503599627370495.5, "4503599627370495.5"),
        (0.00001234, "0.00001234"), (1.234e-7, "1.234e-7"), (999999999999999999999.0, "1e+21"),
        (0.0000015, "0.0000015"), (9007199254740994.0, "9007199254740994"), (5e-7, "5e-7"),
        (123e18, "123000000000000000000"), (1.5e-10, "1.5e-10"),
        (Double.leastNonzeroMagnitude * 3, "1.5e-323"),
    ])
    func doubles(value: Double, expected: String) {
        #expect(JSONWriter.format(value) == expected)
        #expect(json(.double(value)) == expected)
    }

    @Test("NaN and infinities format as null, as JSON.stringify does")
    func nonFinite() {
        #expect(JSONWriter.format(.nan) == "null")
        #expect(JSONWriter.format(.infinity) == "null")
        #expect(JSONWriter.format(-.infinity) == "null")
    }

    @Test("integers keep every digit", arguments: [
        (Int64(0), "0"), (1, "1"), (-1, "-1"), (9, "9"), (10, "10"), (-10, "-10"), (1234567890, "1234567890"),
        (Int64.max, "9223372036854775807"), (Int64.min, "-9223372036854775808"),
        (9007199254740993, "9007199254740993"),
    ])
    func ints(value: Int64, expected: String) {
        #expect(json(.int(value)) == expected)
    }

    @Test("numbers round-trip through reader and writer", arguments: [
        ("1.0", "1"), ("1e2", "100"), ("-0", "0"), ("-0.0", "0"), ("1E21", "1e+21"), ("0.1", "0.1"),
        ("1e-7", "1e-7"), ("0.0000001", "1e-7"),
        ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808", "-9223372036854775808"),
        ("9223372036854775808", "9223372036854776000"),     // beyond 64 bits: a double
        ("12345678901234567890", "12345678901234567000"),
        ("123456789012345678901234567890", "1.2345678901234568e+29"),
        ("1.5e300", "1.5e+300"), ("5e-324", "5e-324"), ("1e-400", "0"),
    ])
    func numberRoundTrip(text: String, expected: String) throws {
        #expect(try roundTrip(text) == expected)
    }

    // MARK: strings

    @Test("strings use minimal escapes and raw UTF-8", arguments: [
        ("\"", #""\"""#), ("\\", #""\\""#), ("\n", #""\n""#), ("\r", #""\r""#), ("\t", #""\t""#),
        ("\u{8}", #""\b""#), ("\u{C}", #""\f""#), ("\u{0}", #""\u0000""#), ("\u{1}", #""\u0001""#),
        ("\u{1F}", #""\u001f""#), ("\u{1B}", #""\u001b""#), ("\u{7F}", "\"\u{7F}\""), ("/", #""/""#),
        ("é", "\"é\""), ("😀", "\"😀\""), ("\u{2028}", "\"\u{2028}\""), ("'", #""'""#),
        ("a\"b\\c\nd", #""a\"b\\c\nd""#), ("", #""""#),
    ])
    func strings(value: String, expected: String) {
        #expect(Array(json(.string(value)).utf8) == Array(expected.utf8))
    }

    @Test("decomposed text is written byte for byte")
    func decomposedBytes() {
        #expect(Array(json(.string("e\u{301}")).utf8) == [0x22, 0x65, 0xCC, 0x81, 0x22])
        #expect(Array(json(.string("\u{E9}")).utf8) == [0x22, 0xC3, 0xA9, 0x22])
    }

    @Test("escaped input prints as raw UTF-8; \\u0000 prints as \\u0000")
    func escapeRoundTrip() throws {
        #expect(try roundTrip(#""\u00e9\ud83d\ude00""#) == "\"é😀\"")
        #expect(try roundTrip(#""\u0000""#) == #""\u0000""#)
        #expect(try roundTrip(#""\/""#) == #""/""#)
        #expect(try roundTrip(#"{"\u0041\n":"\u000B"}"#) == #"{"A\n":"\u000b"}"#)
    }

    // MARK: arrays (all keys indices and maxKey < 2 × count)

    @Test("integer-keyed objects render as arrays by Firebase's array rule", arguments: [
        ("[1,2,3]", "[1,2,3]"),
        ("[1,null,3]", "[1,null,3]"),
        (#"{"0":1,"2":3}"#, "[1,null,3]"),
        (#"{"0":1,"5":2}"#, #"{"0":1,"5":2}"#),                 // 5 ≥ 2×2: object
        (#"{"0":1,"3":2}"#, "[1,null,null,2]"),                  // 3 < 2×2: array
        (#"{"0":1,"3":2,"1":2}"#, "[1,2,null,2]"),              // 3 < 2×3: array
        (#"{"1":1}"#, "[null,1]"),                               // 1 < 2×1
        (#"{"2":1}"#, #"{"2":1}"#),                              // 2 ≥ 2×1
        (#"{"1":1,"2":2,"3":3}"#, "[null,1,2,3]"),
        (#"{"0":"a","10":"b"}"#, #"{"0":"a","10":"b"}"#),
        (#"{"0":1,"1":2,"a":3}"#, #"{"0":1,"1":2,"a":3}"#),     // a non-index key
        (#"{"00":1}"#, #"{"00":1}"#),                            // leading zero: not an index
        (#"{"0":1,"01":2}"#, #"{"0":1,"01":2}"#),
        (#"{"-1":1,"0":2}"#, #"{"-1":1,"0":2}"#),
        (#"{"-0":1}"#, #"{"-0":1}"#),
        (#"{"0":1," 1":2}"#, #"{"0":1," 1":2}"#),
        (#"{"2147483648":1}"#, #"{"2147483648":1}"#),
        (#"{"a":[{"b":[true]}]}"#, #"{"a":[{"b":[true]}]}"#),
        (#"[[1,[2]],{"0":3,"1":4}]"#, "[[1,[2]],[3,4]]"),
    ])
    func arrays(text: String, expected: String) throws {
        #expect(try roundTrip(text) == expected)
    }

    @Test("arrayLength")
    func arrayLength() {
        func entries(_ ks: [String]) -> [Node.Entry] { ks.map { Node.Entry($0, .int(1)) } }
        #expect(JSONWriter.arrayLength([]) == nil)
        #expect(JSONWriter.arrayLength(entries(["0"])) == 1)
        #expect(JSONWriter.arrayLength(entries(["0", "1", "2"])) == 3)
        #expect(JSONWriter.arrayLength(entries(["0", "1", "3"])) == 4)
        #expect(JSONWriter.arrayLength(entries(["0", "5"])) == nil)
        #expect(JSONWriter.arrayLength(entries(["1", "2", "3", "4", "5", "6", "7"])) == 8)
        #expect(JSONWriter.arrayLength(entries(["7", "8", "9"])) == nil)     // 9 ≥ 6
        #expect(JSONWriter.arrayLength(entries(["3", "4", "5"])) == 6)       // 5 < 6
        #expect(JSONWriter.arrayLength(entries(["0", "x"])) == nil)
    }

    @Test("a sparse array prints null at missing indices")
    func sparse() {
        let n = Node.object([.init("1", .string("b")), .init("3", .bool(false)), .init("4", .int(4))])
        #expect(json(n) == #"[null,"b",null,false,4]"#)
    }

    // MARK: objects

    @Test("object keys print in key order and are escaped")
    func objects() throws {
        #expect(try roundTrip(#"{"b":1,"a":2,"10":3,"9":4}"#) == #"{"9":4,"10":3,"a":2,"b":1}"#)
        #expect(try roundTrip(#"{"a\"b":1,"é":{"\u0001":true}}"#) == #"{"a\"b":1,"é":{"\u0001":true}}"#)
        #expect(try roundTrip("{\"\u{E9}\":1,\"e\u{301}\":2}") == "{\"e\u{301}\":2,\"\u{E9}\":1}")
        #expect(try roundTrip(#"{"z":"\u2028","y":null}"#) == "{\"z\":\"\u{2028}\"}")
    }

    @Test("primitives and null")
    func primitives() {
        #expect(json(.null) == "null")
        #expect(json(.bool(true)) == "true")
        #expect(json(.bool(false)) == "false")
        #expect(json(.string("x")) == #""x""#)
    }

    // MARK: pretty printing = JSON.stringify(v, null, 2)

    @Test("pretty printing matches JSON.stringify(v, null, 2)", arguments: [
        ("1", "1"), ("\"x\"", "\"x\""), ("null", "null"), ("1.5", "1.5"),
        (#"{"a":1}"#, "{\n  \"a\": 1\n}"),
        ("[1,2]", "[\n  1,\n  2\n]"),
        (#"{"a":1,"b":[1,2,{"c":"x"}]}"#,
         "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2,\n    {\n      \"c\": \"x\"\n    }\n  ]\n}"),
        (#"{"a":{"b":{"c":[null,true]}}}"#,
         "{\n  \"a\": {\n    \"b\": {\n      \"c\": [\n        null,\n        true\n      ]\n    }\n  }\n}"),
        (#"{"s":"a\nb","e":"é"}"#, "{\n  \"e\": \"é\",\n  \"s\": \"a\\nb\"\n}"),
    ])
    func pretty(text: String, expected: String) throws {
        #expect(JSONWriter.string(try node(text), pretty: true) == expected)
    }

    @Test("write(into:) appends to the buffer")
    func appends() {
        var out = Array("x=".utf8)
        JSONWriter().write(.object([.init("a", .int(1))]), into: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"x={"a":1}"#)
        var p: [UInt8] = []
        JSONWriter(pretty: true).write(.object([.init("a", .int(1))]), into: &p)
        #expect(String(decoding: p, as: UTF8.self) == "{\n  \"a\": 1\n}")
    }

    @Test("written JSON reads back to the same data", arguments: [
        #"{"a":[1,2.5,"x",{"b":false}],"c":{"d":-9223372036854775808},"e":"\u0000é😀"}"#,
        #"[1,null,3]"#, #"{"0":1,"5":2}"#, #""\u001f""#, "0.30000000000000004", "1e-7",
    ])
    func readBack(text: String) throws {
        let n = try node(text)
        for pretty in [false, true] {
            let again = try JSONReader.parse(JSONWriter.string(n, pretty: pretty))
            #expect(again.same(as: n))
            #expect(shape(again) == shape(n))
        }
    }
}
