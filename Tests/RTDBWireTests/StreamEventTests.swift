import Testing
import RTDBCore
@testable import RTDBWire

private func line(_ e: StreamEvent?) -> String { e.map { "\($0.name) \($0.data)" } ?? "none" }

/// The pure encoding of stream events: a query window's changes, the `data:` line of each event
/// and its whole Server-Sent Events frame.
@Suite struct StreamEventTests {
    @Test func queryWindowChangesArePatches() {
        let a = [Node.Entry("a", .int(1)), Node.Entry("b", .int(2))]
        let b = [Node.Entry("b", .int(3)), Node.Entry("c", .int(4))]
        #expect(line(QueryStreamDiff.events(old: a, new: b)) == #"patch {"path":"/","data":{"b":3,"c":4,"a":null}}"#)
        #expect(line(QueryStreamDiff.events(old: a, new: a)) == "none")
        #expect(line(QueryStreamDiff.events(old: a, new: [])) == #"put {"path":"/","data":null}"#)
        // Keys that differ only in Unicode normalisation are two children.
        let nfc = [Node.Entry("\u{E9}", .int(1))]
        let nfd = [Node.Entry("e\u{301}", .int(1))]
        #expect(line(QueryStreamDiff.events(old: nfc, new: nfd)) == "patch {\"path\":\"/\",\"data\":{\"e\u{301}\":1,\"\u{E9}\":null}}")
    }

    @Test func eventsEncodeAsFirebaseSendsThem() throws {
        let put = StreamEvent.put(try Path("/a/b"), .object([Node.Entry("x", .int(1))]))
        #expect(put.name == "put")
        #expect(put.data == #"{"path":"/a/b","data":{"x":1}}"#)
        #expect(put.sseFrame(export: false) == Array("event: put\ndata: {\"path\":\"/a/b\",\"data\":{\"x\":1}}\n\n".utf8))
        // A patch keeps its relative paths as keys, its nulls, and index-like keys as an object.
        let patch = StreamEvent.patch(.root, [(try Path("0"), .string("a")), (try Path("c/d"), .null)])
        #expect(patch.name == "patch")
        #expect(patch.data == #"{"path":"/","data":{"0":"a","c/d":null}}"#)
        // Export form carries priorities.
        let prio = StreamEvent.put(.root, .prioritized(.int(1), priority: .int(2)))
        #expect(prio.data(export: true) == #"{"path":"/","data":{".value":1,".priority":2}}"#)
        #expect(prio.data(export: false) == #"{"path":"/","data":1}"#)
    }
}
