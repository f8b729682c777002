import Testing
import RTDBCore
import RTDBEngine
import RTDBWire
@testable import RTDBServer


private func p(_ s: String) -> Path { (try? Path(s)) ?? Path(validatedKeys: ["<<bad test path>>"]) }
private func line(_ e: StreamEvent?) -> String { e.map { "\($0.name) \($0.data)" } ?? "none" }

/// Writes, in the shapes the change feed reports them, and the events a stream sends for each.
@Suite struct StreamEventsTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var location: String
        var before: String
        var change: LoggedChange
        var event: String
        var after: String
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "set at the location", location: "/rooms/1", before: #"{"name":"lobby"}"#,
             change: .set(p("/rooms/1"), node(#"{"name":"hall"}"#)),
             event: #"put {"path":"/","data":{"name":"hall"}}"#, after: #"{"name":"hall"}"#),
        Case(name: "set below", location: "/rooms/1", before: #"{"name":"lobby"}"#,
             change: .set(p("/rooms/1/messages/m1"), node(#"{"text":"hi"}"#)),
             event: #"put {"path":"/messages/m1","data":{"text":"hi"}}"#,
             after: #"{"messages":{"m1":{"text":"hi"}},"name":"lobby"}"#),
        Case(name: "delete below", location: "/rooms/1", before: #"{"count":2,"name":"lobby"}"#,
             change: .set(p("/rooms/1/count"), .null),
             event: #"put {"path":"/count","data":null}"#, after: #"{"name":"lobby"}"#),
        Case(name: "set above that changes the location", location: "/rooms/1", before: #"{"n":1}"#,
             change: .set(p("/rooms"), node(#"{"1":{"n":2},"2":{"n":3}}"#)),
             event: #"put {"path":"/","data":{"n":2}}"#, after: #"{"n":2}"#),
        Case(name: "set above that leaves the location as it was", location: "/rooms/1", before: #"{"n":1}"#,
             change: .set(p("/rooms"), node(#"{"1":{"n":1},"2":{"n":3}}"#)),
             event: "none", after: #"{"n":1}"#),
        Case(name: "a set elsewhere", location: "/rooms/1", before: #"{"n":1}"#,
             change: .set(p("/rooms/10"), node("5")), event: "none", after: #"{"n":1}"#),
        Case(name: "a write that changes nothing", location: "/a", before: #"{"x":1}"#,
             change: .set(p("/a/x"), node("1")), event: "none", after: #"{"x":1}"#),
        Case(name: "update at the location", location: "/rooms/1", before: #"{"count":2,"name":"lobby"}"#,
             change: .update(p("/rooms/1"), [(p("count"), node("3"))]),
             event: #"patch {"path":"/","data":{"count":3}}"#, after: #"{"count":3,"name":"lobby"}"#),
        Case(name: "multi-path update below, with a delete", location: "/", before: #"{"u":{"a":{"n":1},"b":{"n":2}}}"#,
             change: .update(p("/u"), [(p("a/n"), node("5")), (p("b"), .null)]),
             event: #"patch {"path":"/u","data":{"a/n":5,"b":null}}"#, after: #"{"u":{"a":{"n":5}}}"#),
        Case(name: "update above: only the paths inside", location: "/u/a", before: #"{"n":1}"#,
             change: .update(p("/u"), [(p("a/n"), node("5")), (p("b/n"), node("7"))]),
             event: #"patch {"path":"/","data":{"n":5}}"#, after: #"{"n":5}"#),
        Case(name: "update above covering the location", location: "/u/a/deep", before: "1",
             change: .update(p("/u"), [(p("a"), node(#"{"deep":2}"#)), (p("b"), node("7"))]),
             event: #"put {"path":"/","data":2}"#, after: "2"),
        Case(name: "update above touching nothing inside", location: "/u/a", before: #"{"n":1}"#,
             change: .update(p("/u"), [(p("b/n"), node("7"))]), event: "none", after: #"{"n":1}"#),
        Case(name: "index-like patch keys stay an object", location: "/", before: "null",
             change: .update(p("/list"), [(p("0"), node(#""a""#)), (p("1"), node(#""b""#))]),
             event: #"patch {"path":"/list","data":{"0":"a","1":"b"}}"#, after: #"{"list":["a","b"]}"#),
    ]

    @Test(arguments: cases) func writeBecomesEvent(_ c: Case) {
        var stream = LocationStream(location: p(c.location), value: node(c.before))
        #expect(line(stream.apply(c.change)) == c.event)
        #expect(JSONWriter.string(stream.value) == c.after)
    }

    @Test func firstEventIsTheWholeValue() {
        let stream = LocationStream(location: p("/a"), value: node(#"{"b":[1,2]}"#))
        #expect(line(stream.initialEvent) == #"put {"path":"/","data":{"b":[1,2]}}"#)
        #expect(line(LocationStream(location: .root, value: .null).initialEvent) == #"put {"path":"/","data":null}"#)
    }
}
