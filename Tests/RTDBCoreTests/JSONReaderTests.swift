import Testing
@testable import RTDBCore

@Suite("JSONReader")
struct JSONReaderTests {
    // MARK: numbers

    @Test("numbers: integers stay exact ints, everything else is a double", arguments: [
        ("0", "i0"), ("42", "i42"), ("-1", "i-1"), ("-0", "i0"),
        ("9223372036854775807", "i9223372036854775807"),
        ("-9223372036854775808", "i-9223372036854775808"),
        ("9223372036854775806", "i9223372036854775806"),
        ("9007199254740993", "i9007199254740993"),                   // beyond 2^53: still exact
        ("9223372036854775808", "d9.223372036854776e+18"),           // just past Int64.max
        ("-9223372036854775809", "d-9.223372036854776e+18"),         // just past Int64.min
        ("123456789012345678901234567890", "d1.2345678901234568e+29"),
        ("1.0", "d1.0"), ("1e2", "d100.0"), ("1E2", "d100.0"), ("1e+2", "d100.0"), ("100e-2", "d1.0"),
        ("-0.0", "d-0.0"), ("0.1", "d0.1"), ("-1.5", "d-1.5"), ("1.5e300", "d1.5e+300"),
        ("5e-324", "d5e-324"), ("1e-400", "d0.0"), ("0e0", "d0.0"), ("0.000001", "d1e-06"),
    ])
    func numbers(text: String, expected: String) throws {
        #expect(shape(try node(text)) == expected)
    }

    @Test("numbers that are not finite cannot be written", arguments: ["1e400", "-1e400", "1e309", "[1,2e999]"])
    func infiniteNumbers(text: String) {
        #expect(errorCode { _ = try node(text) } == .invalidData)
    }

    @Test("an out-of-range number is quoted short: a 50,000-digit number is not echoed back")
    func hugeNumberMessage() {
        let digits = String(repeating: "1", count: 50_000)
        do {
            _ = try node(digits + "e400")
            Issue.record("parsed")
        } catch let e as RTDBError {
            #expect(e.code == .invalidData)
            #expect(e.message == "number " + String(repeating: "1", count: 24) + "… (50004 characters) is out of range")
        } catch {
            Issue.record("\(error)")
        }
        do {
            _ = try node("1e400")
        } catch let e as RTDBError {
            #expect(e.message == "number 1e400 is out of range")
        } catch {
            Issue.record("\(error)")
        }
    }

    // MARK: invalid text

    @Test("invalid JSON is invalid_json", arguments: [
        "", " ", "\n", "{", "}", "[", "]", "[1,]", "[,1]", "{\"a\":1,}", "{a:1}", "{'a':1}", "'a'",
        "{\"a\" 1}", "{\"a\":}", "{\"a\"}", "{1:2}", "{\"a\":1 \"b\":2}", "[1 2]",
        "01", "-01", "00", "-", "--1", "+1", "1.", ".5", "1.e3", "1e", "1e+", "1e-", "0x10", "1_000",
        "NaN", "Infinity", "-Infinity", "nan", "tru", "nul", "fals", "True", "NULL", "truex", "nullnull",
        "1 2", "\"a\" \"b\"", "{} {}", "[]]",
        "\"abc", "\"\\\"", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\U0041\"", "\"\\'\"",
        "\"a\nb\"", "\"a\tb\"", "\"\u{0}\"", "\"\u{1F}\"",
        "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"", "\"\\ud800\\\"",
        "\"\\udbff\\udbff\"", "\"\\udc00\\ud800\"",
        "//c\n1", "/*c*/1", "\u{FEFF}1", "\u{C}1", "\u{A0}1", "undefined",
    ])
    func invalid(text: String) {
        #expect(errorCode { _ = try node(text) } == .invalidJSON)
    }

    @Test("bytes that are not UTF-8 are invalid_json", arguments: [
        [0x22, 0xFF, 0x22] as [UInt8],
        [0x22, 0xC3, 0x22],                  // truncated sequence
        [0x22, 0xC0, 0xAF, 0x22],            // overlong
        [0x22, 0xED, 0xA0, 0x80, 0x22],      // UTF-8-encoded surrogate
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // beyond U+10FFFF
        [0x22, 0x5C, 0x6E, 0xFF, 0x22],      // also on the escape path
        [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],  // in a key
        [0xFF],
    ])
    func invalidUTF8(bytes: [UInt8]) {
        #expect(errorCode { _ = try JSONReader.parse(bytes) } == .invalidJSON)
    }

    /// The message of the error reading `text` (nil when it reads).
    func message(_ text: String) -> String? {
        do { _ = try node(text); return nil } catch let e as RTDBError { return e.message } catch { return "\(error)" }
    }

    @Test("errors name the line and column besides the byte offset", arguments: [
        ("{\n  \"a\": 1,\n  \"b\": tru\n}", "invalid JSON at byte 19 (line 3, column 8): invalid literal"),
        ("[1,\n2 3]", "invalid JSON at byte 6 (line 2, column 3): expected ',' or ']'"),
        ("x", "invalid JSON at byte 0 (line 1, column 1): unexpected character \"x\""),
        ("", "invalid JSON at byte 0 (line 1, column 1): unexpected end of input"),
        // Columns count characters: "é" is two bytes, one column.
        ("{\"é\": x}", "invalid JSON at byte 7 (line 1, column 7): unexpected character \"x\""),
        // CR LF ends a line once.
        ("[1,\r\n  ]x", "invalid JSON at byte 2 (line 1, column 3): a trailing comma before ']' (JSON allows none)"),
    ])
    func lineAndColumn(text: String, expected: String) {
        #expect(message(text) == expected)
    }

    @Test("a trailing comma is named and pointed at", arguments: [
        ("{\"a\":1,}", "invalid JSON at byte 6 (line 1, column 7): a trailing comma before '}' (JSON allows none)"),
        ("[1,2, ]", "invalid JSON at byte 4 (line 1, column 5): a trailing comma before ']' (JSON allows none)"),
        ("{\"a\": [1],\n}", "invalid JSON at byte 9 (line 1, column 10): a trailing comma before '}' (JSON allows none)"),
    ])
    func trailingComma(text: String, expected: String) {
        #expect(message(text) == expected)
        var bytes = Array(text.utf8)
        let entries: String? = bytes.withUnsafeMutableBufferPointer { buffer in
            do { _ = try JSONReader.parseEntries(UnsafeBufferPointer(buffer)); return nil }
            catch let e as RTDBError { return e.message } catch { return "\(error)" }
        }
        #expect(entries == expected, "a multi-path update's reader words it alike")
    }

    @Test("a comma then a value that is not one is not called a trailing comma")
    func notATrailingComma() {
        #expect(message("[1,,2]") == "invalid JSON at byte 3 (line 1, column 4): unexpected character \",\"")
        #expect(message("{\"a\":1 }}") == "invalid JSON at byte 8 (line 1, column 9): unexpected text after the JSON value")
    }

    @Test("error messages name the byte offset")
    func errorOffset() {
        do {
            _ = try node("[1,2,x]")
            Issue.record("expected an error")
        } catch let e as RTDBError {
            #expect(e.code == .invalidJSON)
            #expect(e.message.contains("byte 5"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test("whitespace: space, tab, CR and LF only")
    func whitespace() throws {
        #expect(shape(try node(" \t\r\n 1 \n\t")) == "i1")
        #expect(shape(try node("{ \"a\" : [ 1 , 2 ] }")) == #"{"a":{"0":i1,"1":i2}}"#)
    }

    // MARK: literals and strings

    @Test("literals")
    func literals() throws {
        #expect(shape(try node("true")) == "true")
        #expect(shape(try node("false")) == "false")
        #expect(shape(try node("null")) == "null")
    }

    @Test("string escapes", arguments: [
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
        (#""\u0000""#, "\u{0}"),
        (#""\u001f\u007F""#, "\u{1F}\u{7F}"),
        (#""\u00e9""#, "\u{E9}"),
        (#""\u00E9""#, "\u{E9}"),
        (#""\uD83D\uDE00""#, "\u{1F600}"),
        (#""\ud83d\ude00""#, "\u{1F600}"),
        (#""\uDBFF\uDFFF""#, "\u{10FFFF}"),
        (#""\uFFFF""#, "\u{FFFF}"),
        (#""a\u0301""#, "a\u{301}"),
        (#""é""#, "\u{E9}"),
        (#""😀 日本""#, "\u{1F600} 日本"),
        (#""""#, ""),
        (#""\u2028""#, "\u{2028}"),
        ("\"\u{7F}\"", "\u{7F}"),            // DEL is allowed raw in JSON strings
    ])
    func strings(text: String, expected: String) throws {
        guard case .string(let s) = try node(text) else {
            Issue.record("not a string")
            return
        }
        #expect(Array(s.utf8) == Array(expected.utf8))
    }

    @Test("strings keep their bytes (no normalisation)")
    func stringBytes() throws {
        guard case .string(let s) = try node("\"e\u{301}\"") else { Issue.record("not a string"); return }
        #expect(Array(s.utf8) == [0x65, 0xCC, 0x81])
    }

    // MARK: objects and keys

    @Test("keys are kept byte for byte: é and e+U+0301 are two keys")
    func keysByteForByte() throws {
        let n = try node("{\"\u{E9}\":1,\"e\u{301}\":2}")
        let list = n.children
        #expect(list.count == 2)
        #expect(list.map { Array($0.key.utf8) } == [[0x65, 0xCC, 0x81], [0xC3, 0xA9]])
        #expect(shape(n.child("e\u{301}")) == "i2")
        #expect(shape(n.child("\u{E9}")) == "i1")
    }

    @Test("an escaped and a raw spelling of the same scalars are the same key")
    func escapedKeyIsSameKey() throws {
        let n = try node(#"{"é":1,"\u00e9":2}"#)
        #expect(shape(n) == #"{"\u{e9}":i2}"#)
    }

    @Test("duplicate keys keep the last value, as JSON.parse does", arguments: [
        (#"{"a":1,"a":2}"#, #"{"a":i2}"#),
        (#"{"a":1,"b":2,"a":3}"#, #"{"a":i3,"b":i2}"#),
        (#"{"a":{"x":1},"a":{"y":2}}"#, #"{"a":{"y":i2}}"#),   // replaced, not merged
        (#"{"a":1,"a":null}"#, "null"),                        // the last (null) wins: no data
        (#"{"a":1,"a":{}}"#, "null"),
        (#"{"a":1,"b":1,"a":[]}"#, #"{"b":i1}"#),
        (#"{"a":null,"a":1}"#, #"{"a":i1}"#),
        (#"{".value":1,".value":2}"#, "i2"),
    ])
    func duplicates(text: String, expected: String) throws {
        #expect(shape(try node(text)) == expected)
    }

    @Test("children come out in key order")
    func sortedChildren() throws {
        let n = try node(#"{"b":1,"a":2,"10":3,"9":4,"-1":5,"07":6,"7":7}"#)
        #expect(keys(n.children) == ["-1", "7", "07", "9", "10", "a", "b"])
    }

    // MARK: arrays, nulls and empties

    @Test("arrays become integer-keyed objects; nulls and empties vanish", arguments: [
        ("[1,2,3]", #"{"0":i1,"1":i2,"2":i3}"#),
        ("[1,null,3]", #"{"0":i1,"2":i3}"#),
        ("[null,\"x\"]", #"{"1":s"x"}"#),
        ("[[1,2],[3]]", #"{"0":{"0":i1,"1":i2},"1":{"0":i3}}"#),
        ("[{},1]", #"{"1":i1}"#),
        ("[0,1,2,3,4,5,6,7,8,9,10,11]", #"{"0":i0,"1":i1,"2":i2,"3":i3,"4":i4,"5":i5,"6":i6,"7":i7,"8":i8,"9":i9,"10":i10,"11":i11}"#),
        ("[]", "null"),
        ("[null,null]", "null"),
        ("[[],{},null,[[]]]", "null"),
        ("{}", "null"),
        (#"{"a":null}"#, "null"),
        (#"{"a":{}}"#, "null"),
        (#"{"a":[]}"#, "null"),
        (#"{"a":{"b":{}},"c":1}"#, #"{"c":i1}"#),
        (#"{"a":{"b":null,"c":[null]},"d":false}"#, #"{"d":false}"#),
        (#"{"a":""}"#, #"{"a":s""}"#),        // the empty string is data
        (#"{"a":0}"#, #"{"a":i0}"#),
        (#"{"a":false}"#, #"{"a":false}"#),
    ])
    func arraysAndEmpties(text: String, expected: String) throws {
        #expect(shape(try node(text)) == expected)
    }

    // MARK: special keys

    @Test(".value unwraps; .priority becomes the node's priority (shown as ^p)", arguments: [
        (#"{".value":5}"#, "i5"),
        (#"{".value":"x",".priority":1}"#, #"s"x"^i1"#),
        (#"{".priority":1,".value":{"a":1}}"#, #"{"a":i1}^i1"#),
        (#"{".value":null}"#, "null"),
        (#"{".value":[1,2]}"#, #"{"0":i1,"1":i2}"#),
        (#"{"a":{".value":true}}"#, #"{"a":true}"#),
        (#"{"a":1,".priority":2}"#, #"{"a":i1}^i2"#),
        (#"{"a":1,".priority":"x"}"#, #"{"a":i1}^s"x""#),
        (#"{"a":1,".priority":2.5}"#, #"{"a":i1}^d2.5"#),
        (#"{"a":1,".priority":null}"#, #"{"a":i1}"#),
        (#"{"a":1,".priority":{}}"#, #"{"a":i1}"#),
        (#"{"a":1,".priority":{".sv":"timestamp"}}"#, #"{"a":i1}^{".sv":s"timestamp"}"#),
        (#"{".priority":1}"#, "null"),
        (#"{".value":null,".priority":1}"#, "null"),
        (#"{"a":{".value":null},"b":1}"#, #"{"b":i1}"#),
        (#"{"a":{".value":1,".priority":2},"b":{"c":true,".priority":"p"}}"#, #"{"a":i1^i2,"b":{"c":true}^s"p"}"#),
        (#"{".priority":1,".priority":2,"a":0}"#, #"{"a":i0}^i2"#),
        // Only the outer priority counts.
        (#"{".value":{"a":1,".priority":9}}"#, #"{"a":i1}"#),
        (#"{".value":{"a":1,".priority":9},".priority":3}"#, #"{"a":i1}^i3"#),
        (#"[{".value":1,".priority":2}]"#, #"{"0":i1^i2}"#),
    ])
    func specialKeys(text: String, expected: String) throws {
        #expect(shape(try node(text)) == expected)
    }

    @Test("a boolean, object or array priority is invalid_data", arguments: [
        #"{"a":1,".priority":true}"#, #"{".value":1,".priority":false}"#, #"{"a":1,".priority":{"x":1}}"#,
        #"{"a":1,".priority":[1]}"#, #"{"x":{"a":1,".priority":{".sv":"timestamp","y":1}}}"#,
    ])
    func invalidPriority(text: String) {
        #expect(errorCode { _ = try node(text) } == .invalidData)
    }

    @Test(".value beside ordinary children is invalid_data", arguments: [
        #"{"a":1,".value":2}"#, #"{".value":2,"a":1}"#, #"{"x":{".value":1,"y":2}}"#,
    ])
    func valueWithChildren(text: String) {
        #expect(errorCode { _ = try node(text) } == .invalidData)
    }

    @Test(".sv placeholders and other dot keys are kept for later validation")
    func svKept() throws {
        #expect(shape(try node(#"{".sv":"timestamp"}"#)) == #"{".sv":s"timestamp"}"#)
        #expect(shape(try node(#"{"n":{".sv":{"increment":1}}}"#)) == #"{"n":{".sv":{"increment":i1}}}"#)
        #expect(shape(try node(#"{".foo":1}"#)) == #"{".foo":i1}"#)
    }

    // MARK: nesting

    @Test("nesting up to maxNesting parses; beyond is too_deep, without exhausting the stack")
    func nesting() throws {
        let n = JSONReader.maxNesting
        let ok = String(repeating: "[", count: n) + "1" + String(repeating: "]", count: n)
        #expect(errorCode { _ = try node(ok) } == nil)
        let deep = String(repeating: "[", count: n + 1) + "1" + String(repeating: "]", count: n + 1)
        #expect(errorCode { _ = try node(deep) } == .tooDeep)
        let objs = String(repeating: "{\"a\":", count: n + 1) + "1" + String(repeating: "}", count: n + 1)
        #expect(errorCode { _ = try node(objs) } == .tooDeep)
        let huge = String(repeating: "[", count: 200_000)
        #expect(errorCode { _ = try node(huge) } == .tooDeep)
    }

    @Test("parsing bytes and parsing a String agree")
    func bytesAndString() throws {
        let text = #"{"k":[1,2.5,"é",true,null,{"x":-9223372036854775808}]}"#
        #expect(shape(try JSONReader.parse(Array(text.utf8))) == shape(try node(text)))
    }

    // MARK: update entries

    @Test("parseEntries keeps nulls and keys as written, in input order")
    func entries() throws {
        let e = try #require(try JSONReader.parseEntries(#"{"b/c":1,"a":null,"x":{},"d":[1]}"#))
        #expect(keys(e) == ["b/c", "a", "x", "d"])
        #expect(e.map { shape($0.node) } == ["i1", "null", "null", #"{"0":i1}"#])
        #expect(try JSONReader.parseEntries("{}")?.count == 0)
        #expect(try JSONReader.parseEntries(" { \"a\" : 1 } ")?.count == 1)
    }

    @Test("parseEntries: not an object is nil, bad JSON is invalid_json")
    func entriesNonObject() throws {
        #expect(try JSONReader.parseEntries("1") == nil)
        #expect(try JSONReader.parseEntries("[1]") == nil)
        #expect(try JSONReader.parseEntries("null") == nil)
        for bad in ["{", "{\"a\":1} x", "{\"a\" 1}", "{\"a\":1,}", "[1,", "", "{a:1}"] {
            #expect(errorCode { _ = try JSONReader.parseEntries(bad) } == .invalidJSON, "\(bad)")
        }
    }
}
