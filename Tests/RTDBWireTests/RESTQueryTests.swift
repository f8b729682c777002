import Testing
import RTDBCore
@testable import RTDBWire

func q(_ params: [(String, String)], shallow: Bool = false) throws -> Query? {
    try RESTQuery.parse(params.map { (name: $0.0, value: $0.1) }, defaultToKeyOrder: shallow)
}

func desc(_ b: Query.Bound?) -> String {
    guard let b else { return "-" }
    return JSONWriter.string(b.value) + (b.key.map { "," + $0 } ?? "") + (b.exclusive ? "!" : "")
}

@Suite("REST query parameters")
struct RESTQueryTests {
    @Test("no query parameters: no query")
    func none() throws {
        #expect(try q([("print", "pretty")]) == nil)
    }

    @Test("orderBy forms")
    func orders() throws {
        if case .key? = try q([("orderBy", "\"$key\"")])?.order {} else { Issue.record("$key") }
        if case .value? = try q([("orderBy", "\"$value\"")])?.order {} else { Issue.record("$value") }
        if case .child(let p)? = try q([("orderBy", "\"ratings/pos\"")])?.order {
            #expect(p.keys == ["ratings", "pos"])
        } else { Issue.record("child") }
    }

    @Test("the spec's examples: orderBy=\"height\"&startAt=3&limitToFirst=2 and the key argument")
    func examples() throws {
        let a = try #require(try q([("orderBy", "\"height\""), ("startAt", "3"), ("limitToFirst", "2")]))
        #expect(desc(a.start) == "3")
        #expect(a.end == nil)
        #expect(a.limit == .first(2))
        let b = try #require(try q([("orderBy", "\"$value\""), ("startAt", "\"v,w\",\"key\""), ("endBefore", "5,k2")]))
        #expect(desc(b.start) == "\"v,w\",key")
        #expect(desc(b.end) == "5,k2!")
        let c = try #require(try q([("orderBy", "\"a\""), ("equalTo", "null"), ("limitToLast", "0")]))
        #expect(desc(c.start) == "null")
        #expect(desc(c.end) == "null")
        #expect(c.limit == .last(0))
        let d = try #require(try q([("orderBy", "\"a\""), ("startAfter", "true"), ("endAt", "\"z\"")]))
        #expect(desc(d.start) == "true!")
        #expect(desc(d.end) == "\"z\"")
    }

    @Test("key order takes keys: JSON strings or raw text")
    func keyBounds() throws {
        let a = try #require(try q([("orderBy", "\"$key\""), ("startAt", "\"b\""), ("endAt", "007")]))
        #expect(desc(a.start) == "\"b\"")
        #expect(desc(a.end) == "\"007\"")
        // firebase-tools' shallow paging: no orderBy, a raw key.
        let b = try #require(try q([("limitToFirst", "100"), ("startAfter", "-Nabc")], shallow: true))
        if case .key = b.order {} else { Issue.record("key order expected") }
        #expect(desc(b.start) == "\"-Nabc\"!")
        #expect(b.limit == .first(100))
    }

    static let invalidCases: [(params: [(String, String)], message: String)] = [
        ([("startAt", "1")], "orderBy must be defined"),
        ([("limitToFirst", "1")], "orderBy must be defined"),
        ([("orderBy", "$key")], "orderBy must be a JSON string"),
        ([("orderBy", "5")], "orderBy must be a JSON string"),
        ([("orderBy", "\"\"")], "child path"),
        ([("orderBy", "\"a.b\"")], "orderBy"),
        ([("orderBy", "\"$other\"")], "orderBy"),
        ([("orderBy", "\"a\""), ("startAt", "{bad")], "startAt must be a JSON value"),
        ([("orderBy", "\"a\""), ("startAt", "")], "startAt must be a JSON value"),
        ([("orderBy", "\"a\""), ("endAt", "{\"x\":1}")], "string, number, boolean or null"),
        ([("orderBy", "\"a\""), ("startAt", "\"x\"y")], "optionally followed by a comma"),
        ([("orderBy", "\"a\""), ("startAt", "1,")], "key argument"),
        ([("orderBy", "\"a\""), ("equalTo", "1"), ("startAt", "1")], "equalTo cannot be combined"),
        ([("orderBy", "\"a\""), ("startAt", "1"), ("startAfter", "1")], "startAt and startAfter"),
        ([("orderBy", "\"a\""), ("endAt", "1"), ("endBefore", "1")], "endAt and endBefore"),
        ([("orderBy", "\"a\""), ("limitToFirst", "1"), ("limitToLast", "1")], "cannot be combined"),
        ([("orderBy", "\"a\""), ("limitToFirst", "-1")], "non-negative integer"),
        ([("orderBy", "\"a\""), ("limitToFirst", "1.5")], "non-negative integer"),
        ([("orderBy", "\"a\""), ("limitToFirst", "99999999999")], "non-negative integer"),
        ([("orderBy", "\"a\""), ("limitToFirst", "")], "non-negative integer"),
        ([("orderBy", "\"$key\""), ("startAt", "\"a\",\"k\"")], "must be a key"),
        ([("orderBy", "\"$key\""), ("startAt", "")], "needs a value"),
    ]

    @Test("invalid combinations and values are invalid_query with a sentence", arguments: 0..<invalidCases.count)
    func invalid(index: Int) {
        let (params, message) = RESTQueryTests.invalidCases[index]
        do {
            _ = try q(params)
            Issue.record("expected an error for \(params)")
        } catch let e as RTDBError {
            #expect(e.code == .invalidQuery)
            #expect(e.message.contains(message), "\(e.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("parameters(for:) writes what parse reads back")
    func roundTrip() throws {
        let queries = [
            Query(order: .key, start: .init(.string("a")), end: .init(.string("m"), exclusive: true), limit: .first(3)),
            Query(order: .value, start: .init(.int(5), key: "k"), limit: .last(2)),
            Query(order: .child(Path(validatedKeys: ["a", "b"])), start: .init(.string("x,y"), exclusive: true),
                  end: .init(.bool(true), key: "z,z")),
        ]
        for query in queries {
            let params = RESTQuery.parameters(query)
            let back = try #require(try RESTQuery.parse(params))
            #expect(desc(back.start) == desc(query.start))
            #expect(desc(back.end) == desc(query.end))
            #expect(back.limit == query.limit)
        }
        #expect(RESTQuery.parameters(queries[0]).map(\.name) == ["orderBy", "startAt", "endBefore", "limitToFirst"])
        #expect(RESTQuery.parameters(queries[0]).first?.value == "\"$key\"")
    }
}
