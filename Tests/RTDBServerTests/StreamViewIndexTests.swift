import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine
import RTDBWire
@testable import RTDBServer

private func p(_ s: String) -> Path { (try? Path(s)) ?? Path(validatedKeys: ["<<bad test path>>"]) }

/// A write reaches the streams at, above and below what it wrote, and no other: found by
/// walking its own path (`ViewIndex`), so its cost does not grow with streams elsewhere. A
/// write too large for the change feed to copy is read back only where a stream looks.
@Suite struct StreamViewIndexTests {
    /// A server's streams over a fresh database file, recording what each subscriber is sent.
    final class Bench {
        let dir = NSTemporaryDirectory() + "rtdb-view-index-" + UUID().uuidString
        let file: String
        let db: EmbeddedDatabase
        let streams = ServerStreams()
        var sent: [UInt64: [String]] = [:]
        var subscribers: [String: StreamSubscriber] = [:]

        init() throws {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            file = dir + "/v.db"
            db = EmbeddedDatabase(file: file, timeoutSeconds: 5)
            _ = try db.set(p("/seed"), .int(1))
            streams.deliver = { [weak self] subs, event in
                for s in subs { self?.sent[s.id, default: []].append("\(event.event.name) \(event.event.data)") }
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: dir) }

        /// Opens a stream named `name` on `path` (a query with `query`).
        func open(_ name: String, _ path: String, query: Query? = nil) throws {
            let sub = streams.subscriber(connection: 1, kind: .sse(export: false))
            _ = try streams.open(sub, file: file, db: db, path: p(path), query: query)
            subscribers[name] = sub
        }

        /// Runs the feed and returns, for each named stream, what it was sent since last time.
        func pump() throws -> [String: [String]] {
            sent = [:]
            try streams.pump(file: file, db: db)
            var out: [String: [String]] = [:]
            for (name, sub) in subscribers { if let got = sent[sub.id] { out[name] = got } }
            return out
        }

        var group: ServerStreams.FileViews? { streams.views(of: file) }
    }

    @Test func aWriteReachesTheStreamsAtAboveAndBelowItAndNoOthers() throws {
        let b = try Bench()
        for (name, path) in [("root", "/"), ("a", "/a"), ("ab", "/a/b"), ("abc", "/a/b/c"), ("abb", "/a/bb"), ("x", "/x")] {
            try b.open(name, path)
        }
        _ = try b.db.set(p("/a/b"), node(#"{"c":1,"d":2}"#))
        #expect(try b.pump() == [
            "root": [#"put {"path":"/a/b","data":{"c":1,"d":2}}"#],
            "a": [#"put {"path":"/b","data":{"c":1,"d":2}}"#],
            "ab": [#"put {"path":"/","data":{"c":1,"d":2}}"#],
            "abc": [#"put {"path":"/","data":1}"#],
        ])
        // A multi-path update: each stream hears of the paths that concern it.
        _ = try b.db.update(p("/a"), [(p("b/c"), .int(5)), (p("bb"), .string("z"))])
        #expect(try b.pump() == [
            "root": [#"patch {"path":"/a","data":{"b/c":5,"bb":"z"}}"#],
            "a": [#"patch {"path":"/","data":{"b/c":5,"bb":"z"}}"#],
            "ab": [#"patch {"path":"/","data":{"c":5}}"#],
            "abc": [#"put {"path":"/","data":5}"#],
            "abb": [#"put {"path":"/","data":"z"}"#],
        ])
        // Closing streams takes their views out; the others go on.
        b.streams.close(b.subscribers.removeValue(forKey: "ab")!)
        b.streams.close(b.subscribers.removeValue(forKey: "root")!)
        _ = try b.db.set(p("/x"), .int(9))
        #expect(try b.pump() == ["x": [#"put {"path":"/","data":9}"#]])
        #expect(b.group?.all.count == 4)
    }

    @Test func aQueryStreamIsReadAgainOnlyWhenAWriteConcernsIt() throws {
        let b = try Bench()
        let q = Query(order: .key, limit: .first(2))
        try b.open("q", "/list", query: q)
        try b.open("other", "/other")
        _ = try b.db.set(p("/other"), .int(1))
        #expect(try b.pump() == ["other": [#"put {"path":"/","data":1}"#]])
        _ = try b.db.set(p("/list/a"), .int(1))
        #expect(try b.pump()["q"]?.isEmpty == false)
    }

    @Test func aWriteVisitsOnlyTheViewsItConcernsWhateverTheNumberElsewhere() throws {
        let b = try Bench()
        for i in 0..<5_000 { try b.open("e\(i)", "/elsewhere/\(i)") }
        try b.open("target", "/target")
        try b.open("root", "/")
        _ = try b.db.set(p("/target/x"), .int(1))
        let entries = try b.db.feed(after: 0).entries
        let last = try #require(entries.last)
        let group = try #require(b.group)
        let visited = group.views(concernedBy: last).map { $0.path.description }.sorted()
        #expect(visited == ["/", "/target"])
        #expect(group.all.count == 5_002)
    }

    /// A write larger than the feed copies (`changeDataLeaves`): a stream elsewhere reads
    /// nothing back; a stream inside the written value reads its own part alone.
    @Test func aLargeWriteIsReadBackOnlyWhereAStreamLooks() throws {
        let b = try Bench()
        try b.open("elsewhere", "/elsewhere")
        try b.open("child", "/big/k7")
        try b.open("big", "/big")
        var entries: [Node.Entry] = []
        for i in 0..<(EmbeddedDatabase.changeDataLeaves + 10) { entries.append(Node.Entry("k\(i)", .int(Int64(i)))) }
        _ = try b.db.set(p("/big"), Node.object(normalizing: entries))
        let feed = try b.db.feed(after: 0).entries
        let entry = try #require(feed.last)
        #expect(!entry.exact)
        let elsewhere = try b.db.change(of: entry, at: p("/elsewhere"))
        #expect(elsewhere == nil)
        if case .set(let at, let value)? = try b.db.change(of: entry, at: p("/big/k7")) {
            #expect(at.description == "/big/k7")
            #expect(value.same(as: .int(7)))
        } else {
            Issue.record("the child's stream should read its own value")
        }
        let got = try b.pump()
        #expect(got["elsewhere"] == nil)
        #expect(got["child"] == [#"put {"path":"/","data":7}"#])
        #expect(got["big"]?.count == 1)
    }

    /// A large multi-path update (a PATCH of thousands of children): a stream below one of the
    /// children hears of it alone, as a put; the stream on the updated node hears all of it.
    @Test func aLargeUpdateIsReadBackOnlyWhereAStreamLooks() throws {
        let b = try Bench()
        try b.open("one", "/m/c12")
        try b.open("outside", "/n")
        try b.open("m", "/m")
        var list: [(path: Path, value: Node)] = []
        for i in 0..<(EmbeddedDatabase.changeDataLeaves + 10) { list.append((p("c\(i)"), .int(Int64(i)))) }
        _ = try b.db.update(p("/m"), list)
        let entry = try #require(try b.db.feed(after: 0).entries.last)
        #expect(!entry.exact)
        let got = try b.pump()
        #expect(got["outside"] == nil)
        #expect(got["one"] == [#"put {"path":"/","data":12}"#])
        let m = try #require(got["m"]?.first)
        let whole = m.contains(#""c12":12"#) && m.contains(#""c2009":2009"#)
        #expect(whole, "the event on /m names every child")
    }
}
