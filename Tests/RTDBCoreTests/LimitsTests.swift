import Testing
@testable import RTDBCore

@Suite("Limits")
struct LimitsTests {
    @Test("constants")
    func constants() {
        #expect(Limits.maxKeyBytes == 768)
        #expect(Limits.maxDepth == 32)
        #expect(Limits.maxStringBytes == 10_485_760)
        #expect(Limits.maxWriteBytes == 268_435_456)
    }

    // MARK: keyProblem

    @Test("valid keys", arguments: [
        "a", "-Nx3", "é", "e\u{301}", "😀", " ", "a b", "0", "-0", "\u{80}", "\u{9F}", "~", "!@%^&*()",
        "\\", "'", "\"", "{}", "?", ",", ":", "\u{2028}",
        String(repeating: "a", count: 768), String(repeating: "é", count: 384),
        String(repeating: "😀", count: 192),
    ])
    func validKeys(key: String) {
        #expect(Limits.keyProblem(key) == nil)
    }

    @Test("invalid keys", arguments: [
        "", ".", "$", "#", "[", "]", "/", "a.b", "a$", "#a", "[0]", "a/b", ".value", ".priority", ".sv",
        "\u{0}", "\u{1}", "a\nb", "\t", "\r", "\u{1F}", "\u{7F}", "x\u{7F}",
        String(repeating: "a", count: 769), String(repeating: "é", count: 384) + "a",
        String(repeating: "😀", count: 192) + "x",
    ])
    func invalidKeys(key: String) {
        #expect(Limits.keyProblem(key) != nil)
    }

    // MARK: validate: keys

    static let forbidden = [".", "$", "#", "[", "]", "/"]

    @Test("each forbidden character in a data key is invalid_key", arguments: LimitsTests.forbidden)
    func forbiddenInData(ch: String) {
        let top = Node.object([.init("a\(ch)b", .int(1))])
        #expect(errorCode { try Limits.validate(top, at: .root) } == .invalidKey)
        let nested = Node.object([.init("x", .object([.init("\(ch)", .bool(true))]))])
        #expect(errorCode { try Limits.validate(nested, at: try Path("/p")) } == .invalidKey)
    }

    @Test("forbidden keys from parsed JSON are invalid_key", arguments: [
        #"{"a.b":1}"#, #"{"x":{"$y":1}}"#, ##"{"#":1}"##, #"{"a":[{"]":1}]}"#, #"{"a/b":1}"#,
        #"{"":1}"#, #"{".foo":1}"#, #"{"a\u0001":1}"#, #"{"a\u007f":1}"#, #"{"\n":1}"#,
    ])
    func forbiddenParsed(text: String) throws {
        let n = try node(text)
        #expect(errorCode { try Limits.validate(n, at: .root) } == .invalidKey)
    }

    @Test("control characters in a data key are invalid_key", arguments: [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x7F] as [UInt32])
    func controlInData(code: UInt32) {
        let key = "k" + String(Character(Unicode.Scalar(code)!))
        #expect(errorCode { try Limits.validate(.object([.init(key, .int(1))]), at: .root) } == .invalidKey)
    }

    @Test("key length: 768 bytes ok, 769 invalid_key")
    func keyLength() {
        let ok = String(repeating: "k", count: 768)
        #expect(errorCode { try Limits.validate(.object([.init(ok, .int(1))]), at: .root) } == nil)
        #expect(errorCode { try Limits.validate(.object([.init(ok + "k", .int(1))]), at: .root) } == .invalidKey)
        let multi = String(repeating: "é", count: 384)
        #expect(errorCode { try Limits.validate(.object([.init(multi, .int(1))]), at: .root) } == nil)
        #expect(errorCode { try Limits.validate(.object([.init(multi + "e", .int(1))]), at: .root) } == .invalidKey)
    }

    @Test("valid data passes")
    func validData() throws {
        for text in [#"{"a":{"b":[1,2,{"c":"é"}]},"-Nx":true,"😀":1.5}"#, "1", "\"x\"", "true", "null",
                     #"{"e\u0301":1,"\u00e9":2}"#] {
            let n = try node(text)
            #expect(errorCode { try Limits.validate(n, at: try Path("/some/where")) } == nil, "\(text)")
        }
    }

    // MARK: validate: depth

    /// An object nested `levels` keys deep ending in `leaf`.
    func chain(_ levels: Int, leaf: Node = .int(1)) -> Node {
        var n = leaf
        for i in stride(from: levels, to: 0, by: -1) { n = .object([.init("k\(i)", n)]) }
        return n
    }

    func path(_ depth: Int) -> Path { Path(validatedKeys: (0..<depth).map { "p\($0)" }) }

    @Test("depth 32 is allowed, 33 is too_deep", arguments: [
        (0, 32, true), (0, 33, false), (30, 2, true), (30, 3, false), (31, 1, true), (31, 2, false),
        (32, 0, true), (1, 31, true), (1, 32, false),
    ])
    func depth(pathDepth: Int, levels: Int, ok: Bool) {
        let code = errorCode { try Limits.validate(chain(levels), at: path(pathDepth)) }
        #expect(code == (ok ? nil : .tooDeep))
    }

    @Test("an object at depth 32 is too deep (its children would be at 33)")
    func objectAtLimit() {
        #expect(errorCode { try Limits.validate(.object([.init("a", .int(1))]), at: path(32)) } == .tooDeep)
    }

    @Test("a server value counts as a leaf for depth")
    func placeholderDepth() {
        let sv = Node.object([.init(".sv", .string("timestamp"))])
        #expect(errorCode { try Limits.validate(chain(32, leaf: sv), at: .root) } == nil)
        #expect(errorCode { try Limits.validate(chain(33, leaf: sv), at: .root) } == .tooDeep)
        #expect(errorCode { try Limits.validate(sv, at: path(32)) } == nil)
    }

    // MARK: validate: sizes and numbers

    @Test("strings up to 10 MiB; one byte more is too_large")
    func stringSize() {
        let max = Limits.maxStringBytes
        let ok = String(repeating: "x", count: max)
        #expect(errorCode { try Limits.validate(.string(ok), at: .root) } == nil)
        #expect(errorCode { try Limits.validate(.string(ok + "x"), at: .root) } == .tooLarge)
        let nested = Node.object([.init("a", .object([.init("b", .string(ok + "y"))]))])
        #expect(errorCode { try Limits.validate(nested, at: .root) } == .tooLarge)
        // Counted in UTF-8 bytes, not characters.
        let twoByte = String(repeating: "é", count: max / 2)
        #expect(errorCode { try Limits.validate(.string(twoByte), at: .root) } == nil)
        #expect(errorCode { try Limits.validate(.string(twoByte + "x"), at: .root) } == .tooLarge)
    }

    @Test("non-finite numbers are invalid_data", arguments: [Double.nan, .infinity, -.infinity])
    func nonFinite(d: Double) {
        #expect(errorCode { try Limits.validate(.double(d), at: .root) } == .invalidData)
        #expect(errorCode { try Limits.validate(.object([.init("a", .double(d))]), at: .root) } == .invalidData)
    }

    @Test("finite extremes are fine", arguments: [Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude, -0.0])
    func finite(d: Double) {
        #expect(errorCode { try Limits.validate(.double(d), at: .root) } == nil)
    }

    // MARK: validate: server values

    @Test("valid .sv placeholders", arguments: [
        #"{".sv":"timestamp"}"#, #"{".sv":{"increment":1}}"#, #"{".sv":{"increment":-2.5}}"#,
        #"{".sv":{"increment":0}}"#, #"{".sv":{"increment":9223372036854775807}}"#,
        #"{"a":{"b":{".sv":"timestamp"}},"c":[{".sv":{"increment":1}}]}"#,
    ])
    func validPlaceholders(text: String) throws {
        let n = try node(text)
        #expect(errorCode { try Limits.validate(n, at: try Path("/x")) } == nil)
    }

    @Test("invalid .sv placeholders are invalid_data", arguments: [
        #"{".sv":"now"}"#, #"{".sv":"Timestamp"}"#, #"{".sv":""}"#, #"{".sv":1}"#, #"{".sv":true}"#,
        #"{".sv":[1]}"#, #"{".sv":{"increment":"1"}}"#, #"{".sv":{"increment":true}}"#,
        #"{".sv":{"increment":{"x":1}}}"#, #"{".sv":{"decrement":1}}"#, #"{".sv":{"increment":1,"x":2}}"#,
        #"{".sv":"timestamp","a":1}"#, #"{"n":{".sv":{"increment":1},"m":2}}"#,
        #"{"deep":{"er":{".sv":"nope"}}}"#,
    ])
    func invalidPlaceholders(text: String) throws {
        let n = try node(text)
        #expect(errorCode { try Limits.validate(n, at: .root) } == .invalidData)
    }

    @Test("a non-finite increment is invalid_data")
    func infiniteIncrement() {
        let n = Node.object([.init(".sv", .object([.init("increment", .double(.infinity))]))])
        #expect(errorCode { try Limits.validate(n, at: .root) } == .invalidData)
    }

    // MARK: quote

    @Test("quote renders user text for messages")
    func quote() {
        #expect(Limits.quote("abc") == "\"abc\"")
        #expect(Limits.quote("a\"b\\c") == #""a\"b\\c""#)
        #expect(Limits.quote("\u{1}\u{7F}") == #""\u0001\u007F""#)
        #expect(Limits.quote("é😀") == "\"é😀\"")
        let long = Limits.quote(String(repeating: "x", count: 100))
        #expect(long == "\"" + String(repeating: "x", count: 80) + "…\"")
    }

    @Test("quantities read right: one second, one attempt, several seconds")
    func quantities() {
        #expect(Quantity.seconds(1) == "1 second")
        #expect(Quantity.seconds(2) == "2 seconds")
        #expect(Quantity.seconds(0.5) == "0.5 seconds")
        #expect(Quantity.seconds(1.5) == "1.5 seconds")
        #expect(Quantity.of(1, "attempt") == "1 attempt")
        #expect(Quantity.of(3, "attempt") == "3 attempts")
        #expect(Quantity.of(0, "child", "children") == "0 children")
    }

    @Test func cutKeepsShortTextAndCutsLongTextAt80Characters() {
        #expect(Limits.cut("short key") == "short key")
        let eighty = String(repeating: "é", count: 80)
        #expect(Limits.cut(eighty) == eighty)
        #expect(Limits.cut(eighty + "x") == eighty + "…")
        #expect(Limits.cut(String(repeating: "Z", count: 50_000)) == String(repeating: "Z", count: 80) + "…")
        #expect(Limits.cut("abcdef", 3) == "abc…")
    }
}
