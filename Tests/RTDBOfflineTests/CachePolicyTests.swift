import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine
@testable import RTDBOffline
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The offline cache's kept queries, active queries and LRU purge (CachePolicy.swift).
@Suite struct CachePolicyTests {
    func cache(_ t: TempCache) -> CacheStore { t.store() }

    /// A string of `n` bytes, as JSON.
    func blob(_ n: Int) -> Node { .string(String(repeating: "z", count: n)) }

    @Test func aPurgeGoesOldestFirstAndSparesKeptQueriesQueuedWritesAndDataOfStayingQueries() throws {
        let t = TempCache()
        let store = cache(t)
        try store.storeServerAnswer(path("/old"), params: "{}", value: blob(1000))
        try store.storeServerAnswer(path("/p"), params: "{}", value: .object([Node.Entry("x", blob(1000)), Node.Entry("y", blob(1000))]))
        try store.storeServerAnswer(path("/p/x"), params: "{}", value: blob(1000))
        try store.storeServerAnswer(path("/kept"), params: "{}", value: blob(1000))
        #expect(try store.keep(path("/kept"), params: "{}"))
        #expect(try !store.keep(path("/kept"), params: "{}"), "kept already")
        _ = try store.appendWrite(cmd: "set", kind: .set, path: path("/old/q"), data: json("1"), principal: "anonymous")
        let before = try store.counts()
        #expect(before.queries == 4 && before.kept == 1 && before.pending == 1)

        let pruned = try store.prune(limit: 2500)
        // Round 1: 3 prunable (kept is not), keep ⌊2.4⌋ = 2, prune /old. Round 2: keep 1, prune /p.
        #expect(pruned.map { $0.path.description } == ["/old", "/p"])
        let after = try store.counts()
        #expect(after.bytes <= 2500, "\(after.bytes)")
        #expect(after.queries == 2 && after.pending == 1)
        // /p/x is tracked still: its data stayed; /p/y went with /p.
        #expect(try store.cachedRead(path("/p/x"), now: 0).complete)
        #expect(text(try store.db.get(path("/p"))) == text(.object([Node.Entry("x", blob(1000))])))
        #expect(try store.cachedRead(path("/kept"), now: 0).complete)
        // The queued write is still there and still shows.
        #expect(try store.queuedWrites().count == 1)
        #expect(text(try store.cachedRead(path("/old/q"), now: 0).value) == "1")
        #expect(try !store.cachedRead(path("/old"), now: 0).complete)
    }

    @Test func underTheLimitNothingIsPruned() throws {
        let t = TempCache()
        let store = cache(t)
        try store.storeServerAnswer(path("/a"), params: "{}", value: blob(100))
        #expect(try store.prune(limit: 1 << 20).isEmpty)
        #expect(try store.counts().queries == 1)
    }

    @Test func aQueryActiveInALiveSessionIsNotPrunedAndADeadSessionDoesNotProtect() throws {
        let t = TempCache()
        let store = cache(t)
        try store.storeServerAnswer(path("/w"), params: "{}", value: blob(1000))
        let session = try store.db.beginSession([])
        try store.activateQuery(path("/w"), params: "{}", session: session.id)
        #expect(store.db.isLiveSession(session.id))
        #expect(try store.prune(limit: 1).isEmpty)
        // The holder dies: its lock is free, the activation no longer counts.
        close(session.lockFD)
        session.lockFD = -1
        #expect(!store.db.isLiveSession(session.id))
        #expect(try store.prune(limit: 1).map { $0.path.description } == ["/w"])
    }

    @Test func deactivatingEndsTheProtection() throws {
        let t = TempCache()
        let store = cache(t)
        let session = try store.db.beginSession([])
        try store.activateQuery(path("/s"), params: #"{"limitToLast":"2","orderBy":"\"$value\""}"#, session: session.id)
        let q = try #require(try store.trackedQueries().first)
        #expect(q.activeSession == session.id && !q.complete, "activating an untracked query tracks it, incomplete")
        try store.deactivateQueries(session: session.id)
        #expect(try store.trackedQueries().first?.activeSession == nil)
        try store.db.endSession(session)
    }

    @Test func aStoreOfOneMebibyteChecksAtOnceAndSparesItself() throws {
        let t = TempCache()
        let store = cache(t)
        store.limit = 1 << 20
        try store.storeServerAnswer(path("/small"), params: "{}", value: blob(1000))
        try store.storeServerAnswer(path("/huge"), params: "{}", value: blob(1_200_000))
        // /small went at once; /huge, being stored, stayed.
        #expect(try store.trackedQueries().map { $0.path.description } == ["/huge"])
        #expect(try store.cachedRead(path("/huge"), now: 0).complete)
        // Still above the limit: the next store checks again and /huge goes.
        try store.storeServerAnswer(path("/next"), params: "{}", value: blob(10))
        #expect(try store.trackedQueries().map { $0.path.description } == ["/next"])
        #expect(try store.counts().bytes <= 1 << 20)
    }

    @Test func moreThanAThousandStoresCheck() throws {
        let t = TempCache()
        let store = cache(t)
        store.limit = 1 << 20
        // Small stores never reach the limit, but more than 1000 prunable queries are too
        // many. The check after store 1001 finds 1000 prunable (the one being stored is
        // spared): not too many. The next check, after store 2002, finds 2001 and keeps the
        // newest 1000 of them (plus the one being stored).
        for i in 0..<2002 { try store.storeServerAnswer(path("/q/\(i)"), params: "{}", value: json("\(i)")) }
        let left = try store.trackedQueries().map { $0.path.description }
        #expect(left.count == 1001, "\(left.count)")
        #expect(left.first == "/q/1001" && left.last == "/q/2001")
    }

    @Test func unkeepAndClear() throws {
        let t = TempCache()
        let store = cache(t)
        try store.storeServerAnswer(path("/a"), params: "{}", value: json("1"))
        try store.keep(path("/a"), params: "{}")
        #expect(try store.unkeep(path("/a"), params: "{}"))
        #expect(try !store.unkeep(path("/a"), params: "{}"))
        try store.keep(path("/b"), params: "{}")
        _ = try store.appendWrite(cmd: "set", kind: .set, path: path("/c"), data: json("3"), principal: "anonymous")
        #expect(try store.clearCache() == 1)
        let info = try store.counts()
        #expect(info.bytes == 0 && info.queries == 0 && info.kept == 1 && info.pending == 1)
        #expect(text(try store.cachedRead(path("/c"), now: 0).value) == "3")
    }

    @Test func aStreamStoresChildrenWithoutChangingTrackedQueries() throws {
        let t = TempCache()
        let store = cache(t)
        try store.storeServerAnswer(path("/r"), params: "{}", value: json(#"{"a":1,"b":2}"#))
        try store.storeServerChildren(path("/r"), [("a", .null), ("c", json("3"))])
        let r = try store.cachedRead(path("/r"), now: 0)
        #expect(r.complete && text(r.value) == #"{"b":2,"c":3}"#)
        #expect(try store.trackedQueries().count == 1)
    }
}
