import Foundation
import Testing
import RTDBNet
@testable import RTDBEngine
@testable import RTDBServer

/// The events of a write too large for the change feed to copy are built away from the loop
/// (`EventBuilder`), over a real server: every stream still hears what concerns it, in commit
/// order, and a stream elsewhere hears nothing.
@Suite(.serialized) struct BuiltEventsTests {
    /// An object of `count` children `k0` … with their index as value, and a `pad` of 256 KiB:
    /// over the feed's copy limit, yet a body under 1 MiB (written on the loop, not detached).
    func children(_ count: Int, plus: Int = 0) -> String {
        "{" + (0..<count).map { "\"k\($0)\":\($0 + plus)" }.joined(separator: ",") + ",\"pad\":\"" + BuiltEventsTests.pad + "\"}"
    }

    /// Makes every written value larger than `EventBuilder.threshold`: built off the loop.
    static let pad = String(repeating: "p", count: EventBuilder.threshold)

    @Test func streamsAtAboveAndInsideALargeWriteHearItInOrder() throws {
        try withServerOnFreshFile { server, _ in
            let s = try connect(server)
            defer { s.close() }
            #expect(try exchange(s, "PUT", "/other.json", "0").0 == 200)
            let whole = try SSEClient(server, "/big.json")
            let child = try SSEClient(server, "/big/k5.json")
            let root = try SSEClient(server, "/.json")
            let other = try SSEClient(server, "/other.json")
            #expect(try whole.next() == #"put {"path":"/","data":null}"#)
            #expect(try child.next() == #"put {"path":"/","data":null}"#)
            #expect(try root.next() == #"put {"path":"/","data":{"other":0}}"#)
            #expect(try other.next() == #"put {"path":"/","data":0}"#)

            let count = EmbeddedDatabase.changeDataLeaves + 500
            let value = children(count)
            let (status, rendered) = try exchange(s, "PUT", "/big.json", value)
            #expect(status == 200)
            // Writes right behind the large one: each stream hears them after it.
            #expect(try exchange(s, "PUT", "/big/k5.json", "\"five\"").0 == 200)
            #expect(try exchange(s, "PUT", "/other.json", "1").0 == 200)

            let got = try #require(try whole.next())
            let wholeRight = got == #"put {"path":"/","data":"# + rendered + "}"
            #expect(wholeRight, "the stream on the written path: the whole value")
            #expect(try whole.next() == #"put {"path":"/k5","data":"five"}"#)
            #expect(try child.next() == #"put {"path":"/","data":5}"#)
            #expect(try child.next() == #"put {"path":"/","data":"five"}"#)
            let rootEvent = try #require(try root.next())
            let rootRight = rootEvent == #"put {"path":"/big","data":"# + rendered + "}"
            #expect(rootRight, "the stream on the root: the whole value at /big")
            #expect(try root.next() == #"put {"path":"/big/k5","data":"five"}"#)
            #expect(try root.next() == #"put {"path":"/other","data":1}"#)
            // The stream elsewhere hears its own write only.
            #expect(try other.next() == #"put {"path":"/","data":1}"#)
        }
    }

    @Test func aLargeWriteThatChangesNothingForAStreamSendsItNothing() throws {
        try withServerOnFreshFile { server, _ in
            let s = try connect(server)
            defer { s.close() }
            let count = EmbeddedDatabase.changeDataLeaves + 100
            #expect(try exchange(s, "PUT", "/big.json", children(count)).0 == 200)
            let child = try SSEClient(server, "/big/k7.json")
            #expect(try child.next() == #"put {"path":"/","data":7}"#)
            // The same value again, then every child but k7 changed: the stream on k7 is
            // sent nothing until k7 itself changes.
            #expect(try exchange(s, "PUT", "/big.json", children(count)).0 == 200)
            var changed = children(count, plus: 1000)
            changed = changed.replacingOccurrences(of: "\"k7\":1007", with: "\"k7\":7")
            #expect(try exchange(s, "PUT", "/big.json", changed).0 == 200)
            #expect(try exchange(s, "PUT", "/big/k7.json", "8").0 == 200)
            #expect(try child.next() == #"put {"path":"/","data":8}"#)
        }
    }
}
