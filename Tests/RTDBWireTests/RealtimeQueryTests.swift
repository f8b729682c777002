import Testing
import RTDBCore
@testable import RTDBWire

/// The Query a realtime query object means, as a short description:
/// `order|start|end|limit`, bounds as value[,key][!] (! = exclusive), "-" when absent.
private func rq(_ json: String, priorityOrder: Query.Order = .priority) throws -> String {
    let src = Array(json.utf8)
    let q = try RealtimeQuery.parse(try RawJSON.parse(src), source: src, priorityOrder: priorityOrder)
    guard let q else { return "nil" }
    let order: String
    switch q.order {
    case .key: order = "key"
    case .value: order = "value"
    case .priority: order = "priority"
    case .child(let p): order = "child:" + p.keys.joined(separator: "/")
    }
    let limit: String
    switch q.limit {
    case .first(let n)?: limit = "first \(n)"
    case .last(let n)?: limit = "last \(n)"
    case nil: limit = "-"
    }
    return [order, desc(q.start), desc(q.end), limit].joined(separator: "|")
}

@Suite("Realtime query objects")
struct RealtimeQueryTests {
    @Test("the spec's table of JS query objects", arguments: [
        // orderByChild('x'), limitToLast(2)
        (#"{"l":2,"vf":"r","i":"x"}"#, "child:x|-|-|last 2"),
        // orderByChild('x'), startAfter(1)
        (#"{"sp":1,"sn":"[MAX_NAME]","sin":false,"i":"x"}"#, "child:x|1!|-|-"),
        // orderByChild('x'), endBefore(3,'k3')
        (#"{"ep":3,"en":"k3","ein":false,"i":"x"}"#, "child:x|-|3,k3!|-"),
        // orderByKey(), startAfter('k1'), limitToFirst(5)
        (#"{"sp":"k1","sin":false,"l":5,"vf":"l","i":".key"}"#, "key|\"k1\"!|-|first 5"),
        // orderByChild('x'), equalTo(2)
        (#"{"sp":2,"sin":true,"ep":2,"ein":true,"i":"x"}"#, "child:x|2|2|-"),
        // orderByValue(), startAt(1,'k'), endAt(9)
        (#"{"sp":1,"sn":"k","sin":true,"ep":9,"ein":true,"i":".value"}"#, "value|1,k|9|-"),
        // limitToFirst(3): priority order
        (#"{"l":3,"vf":"l"}"#, "priority|-|-|first 3"),
    ])
    func table(json: String, expected: String) throws {
        #expect(try rq(json) == expected)
    }

    @Test("no bounds and no limit is the plain view, whatever the order", arguments: [
        "{}", #"{"i":"x"}"#, #"{"i":".key"}"#, #"{"i":".value","vf":"l"}"#,
    ])
    func plain(json: String) throws {
        #expect(try rq(json) == "nil")
        #expect(try RealtimeQuery.parse(nil, source: []) == nil)
    }

    @Test("the sentinels as Android and iOS send them; sin/ein absent means inclusive", arguments: [
        // startAt(v) with the lowest key: every child equal to v.
        (#"{"sp":1,"sn":"[MIN_NAME]","i":"x"}"#, "child:x|1|-|-"),
        // startAfter(v) rewritten as startAt(v, MAX): no child equal to v.
        (#"{"sp":1,"sn":"[MAX_NAME]","i":"x"}"#, "child:x|1!|-|-"),
        // endAt(v, MAX): every child equal to v.
        (#"{"ep":9,"en":"[MAX_NAME]","i":"x"}"#, "child:x|-|9|-"),
        // endBefore(v) rewritten as endAt(v, MIN): no child equal to v.
        (#"{"ep":9,"en":"[MIN_NAME]","i":"x"}"#, "child:x|-|9!|-"),
        (#"{"sp":"a","ep":"b","i":".value"}"#, "value|\"a\"|\"b\"|-"),
        (#"{"sp":null,"ep":null,"l":2,"vf":"l"}"#, "priority|null|null|first 2"),
        (#"{"sp":"a","sn":"k","i":".key"}"#, "key|\"a\"|-|-"),
        (#"{"ep":"z","ein":false,"l":0,"vf":"r","i":"a/b"}"#, "child:a/b|-|\"z\"!|last 0"),
        (#"{"sp":true,"sin":"yes","i":"x"}"#, "child:x|true|-|-"),
    ])
    func sentinels(json: String, expected: String) throws {
        #expect(try rq(json) == expected)
    }

    @Test("without an index the order is the caller's default")
    func defaultOrder() throws {
        #expect(try rq(#"{"l":1,"vf":"l"}"#, priorityOrder: .key) == "key|-|-|first 1")
        #expect(try rq(#"{"l":1}"#) == "priority|-|-|first 1")
    }

    @Test("bad query objects are refused", arguments: [
        #"{"i":5,"l":1}"#, #"{"i":"","l":1}"#, #"{"i":"/","l":1}"#, #"{"i":"a[b","l":1}"#,
        #"{"sp":1,"sn":5}"#, #"{"ep":1,"en":null}"#, #"{"sp":1,"i":".key"}"#, #"{"ep":true,"i":".key"}"#,
        #"{"l":-1}"#, #"{"l":1.5}"#, #"{"l":"3"}"#, #"{"l":2147483648}"#,
    ])
    func invalid(json: String) {
        let src = Array(json.utf8)
        #expect(throws: (any Error).self) { try RealtimeQuery.parse(try RawJSON.parse(src), source: src) }
    }

    @Test("object bounds parse but fail validation, as a REST query's do")
    func objectBounds() throws {
        let json = #"{"sp":{"a":1},"i":"x"}"#
        let src = Array(json.utf8)
        let q = try #require(try RealtimeQuery.parse(try RawJSON.parse(src), source: src))
        #expect(throws: RTDBError.self) { try q.validate() }
        let ok = #"{"sp":1,"l":2147483647,"i":"x"}"#
        let okSrc = Array(ok.utf8)
        #expect(throws: Never.self) { try RealtimeQuery.parse(try RawJSON.parse(okSrc), source: okSrc)?.validate() }
    }
}

/// Query → wire object → Query keeps the query (the client writes what the server reads).
@Suite struct RealtimeQueryObjectTests {
    func roundTrip(_ q: Query) throws -> Query? {
        guard let text = RealtimeQuery.object(q) else { return nil }
        let bytes = Array(text.utf8)
        return try RealtimeQuery.parse(RawJSON.parse(bytes), source: bytes, priorityOrder: .priority)
    }

    func same(_ a: Query.Bound?, _ b: Query.Bound?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?): return JSONWriter.string(x.value) == JSONWriter.string(y.value) && x.key == y.key && x.exclusive == y.exclusive
        default: return false
        }
    }

    @Test func theJSShapesAreWritten() throws {
        #expect(RealtimeQuery.object(Query(order: .child(try Path("x")), limit: .last(2))) == #"{"l":2,"vf":"r","i":"x"}"#)
        #expect(RealtimeQuery.object(Query(order: .priority, limit: .first(3))) == #"{"l":3,"vf":"l"}"#)
        #expect(RealtimeQuery.object(Query(order: .child(try Path("x")), end: Query.Bound(.int(3), key: "k3", exclusive: true)))
                == #"{"ep":3,"en":"k3","ein":false,"i":"x"}"#)
        #expect(RealtimeQuery.object(Query(order: .key, start: Query.Bound(.string("k1"), exclusive: true), limit: .first(5)))
                == #"{"sp":"k1","sin":false,"l":5,"vf":"l","i":".key"}"#)
        #expect(RealtimeQuery.object(Query(order: .child(try Path("a/b")))) == nil)
        #expect(RealtimeQuery.object(Query(order: .value, start: Query.Bound(.string("q\"")))) == #"{"sp":"q\"","i":".value"}"#)
    }

    @Test func writtenObjectsReadBackAsTheSameQuery() throws {
        let queries = [
            Query(order: .child(try Path("x")), limit: .last(2)),
            Query(order: .value, start: Query.Bound(.int(1), key: "k"), end: Query.Bound(.int(9))),
            Query(order: .priority, start: Query.Bound(.null), end: Query.Bound(.string("z"), key: "m", exclusive: true), limit: .first(1)),
            Query(order: .key, start: Query.Bound(.string("a"), exclusive: true)),
            Query(order: .child(try Path("x")), start: Query.Bound(.bool(true)), end: Query.Bound(.bool(true))),
        ]
        for q in queries {
            let back = try #require(try roundTrip(q))
            #expect(same(back.start, q.start) && same(back.end, q.end) && back.limit == q.limit, "\(RealtimeQuery.object(q) ?? "")")
            #expect(RealtimeQuery.object(back) == RealtimeQuery.object(q))
        }
    }
}
