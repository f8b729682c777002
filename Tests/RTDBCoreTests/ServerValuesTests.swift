import Testing
@testable import RTDBCore

@Suite("ServerValues")
struct ServerValuesTests {
    static let ts = Node.object([.init(".sv", .string("timestamp"))])
    static func inc(_ d: Node) -> Node { .object([.init(".sv", .object([.init("increment", d)]))]) }

    @Test("isPlaceholder")
    func isPlaceholder() throws {
        #expect(ServerValues.isPlaceholder(ServerValuesTests.ts))
        #expect(ServerValues.isPlaceholder(ServerValuesTests.inc(.int(1))))
        #expect(ServerValues.isPlaceholder(try node(#"{".sv":"anything"}"#)))
        #expect(!ServerValues.isPlaceholder(try node(#"{".sv":"timestamp","a":1}"#)))
        #expect(!ServerValues.isPlaceholder(try node(#"{"a":{".sv":"timestamp"}}"#)))
        #expect(!ServerValues.isPlaceholder(.string(".sv")))
        #expect(!ServerValues.isPlaceholder(.null))
        #expect(!ServerValues.isPlaceholder(.int(1)))
    }

    @Test("containsPlaceholder")
    func containsPlaceholder() throws {
        #expect(ServerValues.containsPlaceholder(ServerValuesTests.ts))
        #expect(ServerValues.containsPlaceholder(try node(#"{"a":{"b":[1,{".sv":"timestamp"}]}}"#)))
        #expect(!ServerValues.containsPlaceholder(try node(#"{"a":{"b":[1,{"sv":"timestamp"}]}}"#)))
        #expect(!ServerValues.containsPlaceholder(.string("{\".sv\":\"timestamp\"}")))
        #expect(!ServerValues.containsPlaceholder(.null))
    }

    // MARK: increment

    @Test("increment rules and the worked examples", arguments: [
        (Node.null, Node.int(1), "i1"),                                   // missing → delta
        (.int(5), .int(-2), "i3"),
        (.int(5), .double(0.5), "d5.5"),
        (.string("abc"), .int(2), "i2"),                                  // non-number → delta
        (.int(Int64.max), .int(1), "d9.223372036854776e+18"),             // overflow → double
        (.int(Int64.min), .int(-1), "d-9.223372036854776e+18"),
        (.int(Int64.max - 1), .int(1), "i9223372036854775807"),           // just fits
        (.int(Int64.max), .int(-1), "i9223372036854775806"),
        (.int(Int64.min), .int(Int64.max), "i-1"),
        (.int(-5), .int(5), "i0"),
        (.bool(true), .int(3), "i3"),
        (.bool(false), .double(2.5), "d2.5"),
        (.object([.init("a", .int(1))]), .int(1), "i1"),
        (.double(1.5), .int(1), "d2.5"),
        (.double(0.5), .double(0.5), "d1.0"),                             // doubles stay doubles
        (.int(5), .double(0.0), "d5.0"),
        (.null, .double(-2.5), "d-2.5"),
        (.string("5"), .int(1), "i1"),                                    // numeric strings are strings
        (.int(9007199254740993), .int(1), "i9007199254740994"),           // exact beyond 2^53
    ] as [(Node, Node, String)])
    func increment(existing: Node, delta: Node, expected: String) {
        #expect(shape(ServerValues.increment(existing, by: delta)) == expected)
    }

    @Test("an overflowed sum prints as JavaScript prints 2^63")
    func overflowPrints() {
        let v = ServerValues.increment(.int(Int64.max), by: .int(1))
        #expect(json(v) == "9223372036854776000")
        #expect(NumberOrder.compare(v, .int(Int64.max)) > 0)
    }

    // MARK: resolve

    /// Resolves `text` written at `at` against `old` (the whole tree before the write).
    static func resolve(_ text: String, at: String, old: String, now: Int64 = 1_700_000_000_000) throws -> Node {
        let oldRoot = try node(old)
        return ServerValues.resolve(try node(text), at: try Path(at), now: now) { oldRoot.child(at: $0) }
    }

    @Test("worked examples", arguments: [
        (#"{".sv":{"increment":1}}"#, "/n", "null", "i1"),
        (#"{".sv":{"increment":-2}}"#, "/n", #"{"n":5}"#, "i3"),
        (#"{".sv":{"increment":0.5}}"#, "/n", #"{"n":5}"#, "d5.5"),
        (#"{".sv":{"increment":2}}"#, "/n", #"{"n":"abc"}"#, "i2"),
        (#"{".sv":{"increment":1}}"#, "/n", #"{"n":9223372036854775807}"#, "d9.223372036854776e+18"),
        // PUT /c {"n": inc 1} when /c = {n: 4, m: 1}: n is looked up in the old data.
        (#"{"n":{".sv":{"increment":1}}}"#, "/c", #"{"c":{"n":4,"m":1}}"#, #"{"n":i5}"#),
        // PATCH-like: /c/n += 1, /c/t = now.
        (#"{"n":{".sv":{"increment":1}},"t":{".sv":"timestamp"}}"#, "/c", #"{"c":{"n":4}}"#,
         #"{"n":i5,"t":i1700000000000}"#),
        (#"{".sv":"timestamp"}"#, "/", "null", "i1700000000000"),
        (#"{"a":{"b":{".sv":{"increment":10}}},"x":1}"#, "/r", #"{"r":{"a":{"b":0.5}}}"#, #"{"a":{"b":d10.5},"x":i1}"#),
        (#"[{".sv":{"increment":1}},{".sv":{"increment":1}}]"#, "/l", #"{"l":[7,"s"]}"#, #"{"0":i8,"1":i1}"#),
        (#"{"plain":true}"#, "/", "null", #"{"plain":true}"#),
        ("42", "/x", #"{"x":1}"#, "i42"),
    ])
    func workedExamples(text: String, at: String, old: String, expected: String) throws {
        #expect(shape(try ServerValuesTests.resolve(text, at: at, old: old)) == expected)
    }

    @Test("every timestamp in one write gets the same instant")
    func sameTimestamp() throws {
        let text = #"{"a":{".sv":"timestamp"},"b":{"c":{".sv":"timestamp"},"d":[{".sv":"timestamp"},{".sv":"timestamp"}]},"e":{".sv":"timestamp"}}"#
        let r = try ServerValuesTests.resolve(text, at: "/w", old: "null", now: 1234)
        #expect(json(r) == #"{"a":1234,"b":{"c":1234,"d":[1234,1234]},"e":1234}"#)
        #expect(!ServerValues.containsPlaceholder(r))
    }

    @Test("each increment consults the old value at its own path; timestamps consult nothing")
    func lookups() throws {
        let text = #"{"a":{".sv":{"increment":1}},"b":{"c":{".sv":{"increment":2}}},"t":{".sv":"timestamp"},"k":5}"#
        final class Log: @unchecked Sendable { var paths: [String] = [] }
        let log = Log()
        let r = ServerValues.resolve(try node(text), at: try Path("/root/x"), now: 9) { p in
            log.paths.append(p.description)
            return .int(100)
        }
        #expect(log.paths.sorted() == ["/root/x/a", "/root/x/b/c"])
        #expect(json(r) == #"{"a":101,"b":{"c":102},"k":5,"t":9}"#)
    }

    @Test("a failing lookup propagates")
    func lookupErrorsPropagate() throws {
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            _ = try ServerValues.resolve(ServerValuesTests.inc(.int(1)), at: .root, now: 0) { _ in throw Boom() }
        }
    }

    @Test("placeholder validation via validatePlaceholder")
    func validatePlaceholder() {
        #expect(errorCode { try ServerValues.validatePlaceholder(ServerValuesTests.ts, at: []) } == nil)
        #expect(errorCode { try ServerValues.validatePlaceholder(ServerValuesTests.inc(.double(-0.5)), at: ["a"]) } == nil)
        #expect(errorCode { try ServerValues.validatePlaceholder(ServerValuesTests.inc(.string("1")), at: []) } == .invalidData)
        #expect(errorCode { try ServerValues.validatePlaceholder(ServerValuesTests.inc(.double(.nan)), at: []) } == .invalidData)
        #expect(errorCode { try ServerValues.validatePlaceholder(.object([.init(".sv", .string("time"))]), at: []) } == .invalidData)
    }
}
