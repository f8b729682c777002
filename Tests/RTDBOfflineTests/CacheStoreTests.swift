import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine
@testable import RTDBOffline

/// The offline cache store (CacheStore.swift, CacheQueries.swift): the queue, tracked queries,
/// the layered read and its completeness, and which handles may write a cache file.
@Suite struct CacheStoreTests {
    func cache(_ t: TempCache) -> CacheStore { t.store() }

    @Test func queuedWritesKeepTheirOrderAndIDsNeverRepeat() throws {
        let t = TempCache()
        let store = cache(t)
        let a = try store.appendWrite(cmd: "set", kind: .set, path: path("/a"), data: json("1"), principal: "anonymous")
        let b = try store.appendWrite(cmd: "update", kind: .update, path: path("/l"), data: CacheStore.updateData([(path("x/y"), json("2")), (path("z"), .null)]), principal: "anonymous")
        #expect(b > a)
        let rows = try store.queuedWrites()
        #expect(rows.map(\.id) == [a, b])
        #expect(rows[1].sets.map { $0.path.description } == ["/l/x/y", "/l/z"])
        #expect(try store.dropWrite(id: b)?.path.description == "/l")
        #expect(try store.dropWrite(id: b) == nil)
        let c = try store.appendWrite(cmd: "set", kind: .set, path: path("/c"), data: json("3"), principal: "anonymous")
        #expect(c > b, "a dropped id is never given out again")
    }

    @Test func sendingCountsAttemptsAndAcknowledgingStoresTheServerValue() throws {
        let t = TempCache()
        let store = cache(t)
        let id = try store.appendWrite(cmd: "set", kind: .set, path: path("/b"), data: json("2"), principal: "anonymous")
        #expect(try store.beginSending(id: id)?.attempts == 0)
        #expect(try store.beginSending(id: id)?.attempts == 1)
        #expect(try store.queuedWrite(id: id)?.state == .sending)
        try store.acknowledge(id: id, store: [(path("/b"), json("2"))], complete: [path("/b")])
        #expect(try store.queuedWrites().isEmpty)
        let r = try store.cachedRead(path("/b"), now: 0)
        #expect(r.complete && text(r.value) == "2")
    }

    @Test func rejectionsAreLoggedAndTheRowReverted() throws {
        let t = TempCache()
        let store = cache(t)
        let id = try store.appendWrite(cmd: "set", kind: .set, path: path("/locked/x"), data: json("1"), principal: "anonymous")
        #expect(text(try store.cachedRead(path("/locked"), now: 0).value) == #"{"x":1}"#)
        try store.reject(id: id, error: RTDBError(.permissionDenied, "Permission denied"))
        #expect(try store.queuedWrites().isEmpty)
        let log = try store.rejections()
        #expect(log.count == 1 && log[0].write.id == id && log[0].error.code == .permissionDenied)
        #expect(try store.cachedRead(path("/locked"), now: 0).value.isNull)
    }

    @Test func aPendingSetCoveringThePathMakesItComplete() throws {
        let t = TempCache()
        let store = cache(t)
        #expect(try !store.cachedRead(path("/b"), now: 0).complete)
        _ = try store.appendWrite(cmd: "set", kind: .set, path: path("/b"), data: json("2"), principal: "anonymous")
        let r = try store.cachedRead(path("/b"), now: 0)
        #expect(r.complete && text(r.value) == "2")
        // A parent is not complete because of one child's set; the child is known.
        let parent = try store.cachedRead(.root, now: 0)
        #expect(!parent.complete && text(parent.value) == #"{"b":2}"#)
    }

    @Test func laterWritesShadowEarlierOnesAndServerValuesAreEstimated() throws {
        let t = TempCache()
        let store = cache(t)
        try store.storeServerAnswer(path("/n"), params: "{}", value: json("5"))
        _ = try store.appendWrite(cmd: "increment", kind: .set, path: path("/n"), data: json(#"{".sv":{"increment":2}}"#), principal: "anonymous")
        _ = try store.appendWrite(cmd: "increment", kind: .set, path: path("/n"), data: json(#"{".sv":{"increment":3}}"#), principal: "anonymous")
        let r = try store.cachedRead(path("/n"), now: 0)
        #expect(text(r.value) == "10" && r.estimated && r.complete)
        _ = try store.appendWrite(cmd: "set", kind: .set, path: path("/t"), data: json(#"{".sv":"timestamp"}"#), principal: "anonymous")
        #expect(text(try store.cachedRead(path("/t"), now: 1234).value) == "1234")
    }

    /// An increment estimated on a number the cache does not hold says so; one on a number it
    /// holds (from the server, or set by an earlier queued write) does not.
    @Test func anIncrementOfAnUnknownNumberIsAnEstimateOnAnUnknownBase() throws {
        let t = TempCache()
        let store = cache(t)
        let increment = json(#"{".sv":{"increment":2}}"#)
        _ = try store.appendWrite(cmd: "increment", kind: .set, path: path("/n"), data: increment, principal: "anonymous")
        let unknown = try store.cachedRead(path("/n"), now: 0)
        #expect(text(unknown.value) == "2" && unknown.estimated && unknown.unknownBase)
        // Inside a value, and inside an update: the same.
        _ = try store.appendWrite(cmd: "update", kind: .update, path: path("/u"),
                                  data: CacheStore.updateData([(path("a"), json(#"{"hits":{".sv":{"increment":1}}}"#))]), principal: "anonymous")
        #expect(try store.cachedRead(path("/u/a"), now: 0).unknownBase)
        // Known from the server: a real estimate.
        try store.storeServerAnswer(path("/k"), params: "{}", value: json(#"{"n":5}"#))
        _ = try store.appendWrite(cmd: "increment", kind: .set, path: path("/k/n"), data: increment, principal: "anonymous")
        let known = try store.cachedRead(path("/k/n"), now: 0)
        #expect(text(known.value) == "7" && known.estimated && !known.unknownBase)
        // Set by an earlier queued write: known too.
        _ = try store.appendWrite(cmd: "set", kind: .set, path: path("/s"), data: json("10"), principal: "anonymous")
        _ = try store.appendWrite(cmd: "increment", kind: .set, path: path("/s"), data: increment, principal: "anonymous")
        let written = try store.cachedRead(path("/s"), now: 0)
        #expect(text(written.value) == "12" && !written.unknownBase)
        // A timestamp stands on no value.
        _ = try store.appendWrite(cmd: "set", kind: .set, path: path("/t"), data: json(#"{".sv":"timestamp"}"#), principal: "anonymous")
        let stamp = try store.cachedRead(path("/t"), now: 1234)
        #expect(stamp.estimated && !stamp.unknownBase)
    }

    /// `queue --rejected` marks what it listed as seen, and a write's own rejection (its
    /// command's error) is seen at once; only the others are unseen.
    @Test func rejectionsStayUnseenUntilMarked() throws {
        let t = TempCache()
        let store = cache(t)
        #expect(try store.rejections(unseen: true).isEmpty)
        func rejectOne(_ p: String, seen: Bool = false) throws {
            let id = try store.appendWrite(cmd: "set", kind: .set, path: path(p), data: json("1"), principal: "anonymous")
            try store.reject(id: id, error: RTDBError(.permissionDenied, "Permission denied"), seen: seen)
        }
        try rejectOne("/a")
        try rejectOne("/own", seen: true)
        try rejectOne("/b")
        let unseen = try store.rejections(unseen: true)
        #expect(unseen.map { $0.write.path.description } == ["/a", "/b"])
        try store.markRejectionsSeen(unseen.map(\.seq))
        #expect(try store.rejections(unseen: true).isEmpty)
        #expect(try store.rejections().count == 3, "the log keeps them")
        try rejectOne("/c")
        #expect(try store.rejections(unseen: true).map { $0.write.path.description } == ["/c"])
        try store.markRejectionsSeen(unseen.map(\.seq))
        #expect(try store.rejections(unseen: true).map { $0.write.path.description } == ["/c"], "marking again changes nothing")
    }

    @Test func completenessFollowsTrackedQueries() throws {
        let t = TempCache()
        let store = cache(t)
        let scores = json(#"{"bruhathkayosaurus":55,"linhenykus":80,"pterodactyl":93,"triceratops":22}"#)
        let params = #"{"limitToLast":"4","orderBy":"\"$value\""}"#
        try store.storeServerAnswer(path("/scores"), params: params, value: scores)
        // The same query: complete, its keys.
        let same = try store.cachedRead(path("/scores"), params: params, now: 0)
        #expect(same.complete && text(same.value) == text(scores))
        // Another query or the whole location: only the tracked keys are known.
        let other = try store.cachedRead(path("/scores"), params: #"{"limitToLast":"2","orderBy":"\"$value\""}"#, now: 0)
        #expect(!other.complete && text(other.value) == text(scores))
        #expect(try !store.cachedRead(path("/scores"), now: 0).complete)
        // A tracked key of a complete filtered query is complete by itself.
        #expect(try store.cachedRead(path("/scores/linhenykus"), now: 0).complete)
        #expect(try !store.cachedRead(path("/scores/stegosaurus"), now: 0).complete)
        // A complete default query completes everything below it.
        try store.storeServerAnswer(path("/"), params: "{}", value: json(#"{"a":{"b":1}}"#), etag: "E1")
        #expect(try store.cachedRead(path("/a/b"), now: 0).complete)
        #expect(try store.cachedRead(path("/nothing/here"), now: 0).complete)
        #expect(try store.storedETag(path("/")) == "E1")
    }

    /// The read rules beyond a complete default query: a window inside a complete cached window of the same order
    /// (one-shot reads), and a window's own keys before an older whole copy (a live window
    /// stream); priorities kept in what is read.
    @Test func readRulesAnswerContainedWindowsAndPreferALiveWindow() throws {
        let t = TempCache()
        let store = cache(t)
        let top4 = #"{"limitToLast":"4","orderBy":"\"$value\""}"#
        let top2 = #"{"limitToLast":"2","orderBy":"\"$value\""}"#
        try store.storeServerAnswer(path("/s"), params: top4, value: json(#"{"b":55,"l":80,"p":{".value":93,".priority":1},"t":22}"#))
        #expect(try !store.cachedRead(path("/s"), params: top2, now: 0).complete)
        let contained = try store.cachedRead(path("/s"), params: top2, now: 0, rules: .containingWindows)
        #expect(contained.complete && JSONWriter.string(contained.value, export: true) == #"{"b":55,"l":80,"p":{".value":93,".priority":1},"t":22}"#)
        #expect(try !store.cachedRead(path("/s"), params: #"{"limitToLast":"5","orderBy":"\"$value\""}"#, now: 0, rules: .containingWindows).complete)
        #expect(try !store.cachedRead(path("/s"), params: #"{"limitToLast":"2","orderBy":"\"$key\""}"#, now: 0, rules: .containingWindows).complete)
        // An older whole copy under the window: by default it answers; a live window's keys win.
        try store.storeServerAnswer(path("/w"), params: "{}", value: json(#"{"a":1,"b":2,"c":3,"d":10}"#))
        try store.storeServerAnswer(path("/w"), params: top2, value: json(#"{"b":2,"c":3}"#))
        #expect(text(try store.cachedRead(path("/w"), params: top2, now: 0).value) == #"{"a":1,"b":2,"c":3,"d":10}"#)
        let own = try store.cachedRead(path("/w"), params: top2, now: 0, rules: .ownWindowFirst)
        #expect(own.complete && text(own.value) == #"{"b":2,"c":3}"#)
    }

    @Test func readsFromTheCacheSetLastUseAtMostOnceAMinute() throws {
        final class Clock: @unchecked Sendable { var now: Int64 = 1_700_000_000_000 }
        let clock = Clock()
        let t = TempCache(clock: { clock.now })
        let store = cache(t)
        try store.storeServerAnswer(path("/a"), params: "{}", value: json("1"))
        let r = try store.cachedRead(path("/a"), now: 0)
        #expect(r.usedQueries.count == 1)
        clock.now += 30_000
        try store.touchQueries(r.usedQueries)
        #expect(try store.trackedQueries().first?.lastUseMillis == 1_700_000_000_000)
        clock.now += 60_000
        try store.touchQueries(r.usedQueries)
        #expect(try store.trackedQueries().first?.lastUseMillis == 1_700_000_090_000)
    }

    @Test func aCacheOfAnotherURLIsRefused() throws {
        let t = TempCache()
        _ = try cache(t).appendWrite(cmd: "set", kind: .set, path: path("/a"), data: json("1"), principal: "anonymous")
        let other = CacheStore(t.another(), url: "http://127.0.0.1:9001?ns=t", namespace: "t")
        #expect(throws: RTDBError.self) { _ = try other.queuedWrites() }
        #expect(throws: RTDBError.self) { _ = try other.appendWrite(cmd: "set", kind: .set, path: path("/a"), data: json("1"), principal: "anonymous") }
        do {
            _ = try other.queuedWrites()
        } catch let e as RTDBError {
            #expect(e.code == .usage && e.message.contains("9000"))
        }
    }

    @Test func anEmbeddedWriteIntoACacheFileIsAUsageErrorAndChangesNothing() throws {
        let t = TempCache()
        _ = try cache(t).appendWrite(cmd: "set", kind: .set, path: path("/a"), data: json("1"), principal: "anonymous")
        // A handle as `--db` opens one: with the guard that keeps it out of offline caches.
        let plain = t.another()
        plain.companion = CacheFileGuard()
        do {
            _ = try plain.set(path("/x"), json("1"))
            Issue.record("the write was accepted")
        } catch let e as RTDBError {
            #expect(e.code == .usage)
        }
        #expect(try plain.get(path("/x")).isNull)
        // Reading it as an embedded file is fine: it shows the server cache.
        #expect(try plain.get(.root).isNull)
    }

    @Test func anEmbeddedFileIsNotTakenAsACache() throws {
        let t = TempCache()
        _ = try t.another().set(path("/x"), json("1"))
        let store = t.store()
        #expect(throws: RTDBError.self) { _ = try store.cachedRead(path("/x"), now: 0) }
    }
}
