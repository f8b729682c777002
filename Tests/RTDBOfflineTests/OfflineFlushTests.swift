import Foundation
import Testing
import RTDBCore
import RTDBRemote
@testable import RTDBOffline

/// Sending the queue (OfflineFlush.swift) against a scripted remote: order,
/// batches, refusals, credentials and stops.
@Suite struct OfflineFlushTests {
    /// A JWT (unsigned: only its claims are read) for `sub`, expiring at `exp` (seconds).
    func token(sub: String, exp: Int64) -> Credential {
        func b64(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        return .auth(b64(#"{"alg":"none"}"#) + "." + b64(#"{"sub":"\#(sub)","exp":\#(exp)}"#) + ".")
    }

    func events(_ db: OfflineDatabase) throws -> (lines: [String], stop: FlushStop?) {
        var lines: [String] = []
        let stop = try db.flush { event in
            switch event {
            case .acked(let row, _, let resent): lines.append("acked \(row.id) \(row.path)" + (resent ? " resent" : ""))
            case .rejected(let row, let e): lines.append("rejected \(row.id) \(row.path) \(e.code.rawValue)")
            }
        }
        return (lines, stop)
    }

    @Test func overlappingRowsGoOneAfterAnotherInIdOrder() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/l"), json(#"{"x":1}"#)), .set(path("/l/y"), json("2")), .update(path("/l"), [(path("x"), json("3"))]))
        let (lines, stop) = try events(f.db())
        #expect(stop == nil)
        #expect(lines == ["acked 1 /l", "acked 2 /l/y", "acked 3 /l"])
        #expect(f.remote.lines == ["PUT /l", "PUT /l/y", "PATCH /l"])
        // Any other order leaves another value.
        #expect(text(f.remote.data) == #"{"l":{"x":3,"y":2}}"#)
        #expect(try f.store.queuedWrites().isEmpty)
        let r = try f.store.cachedRead(path("/l"), now: 0)
        #expect(r.complete && text(r.value) == #"{"x":3,"y":2}"#)
    }

    @Test func rowsThatCannotOverlapTravelAsOneUpdate() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/a"), json("1")), .set(path("/b"), json("2")), .push(path("/c"), [json("3"), json("4")]))
        let (lines, stop) = try events(f.db())
        #expect(stop == nil)
        #expect(lines == ["acked 1 /a", "acked 2 /b", "acked 3 /c"])
        #expect(f.remote.lines == ["PATCH /"], "one request for the three rows")
        #expect(f.remote.data.child("c").children.count == 2)
        #expect(try f.store.cachedRead(path("/b"), now: 0).complete)
    }

    @Test func aBatchRefusedWholeIsSentRowByRowAndOnlyTheRefusedRowIsReverted() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/open/a"), json("1")), .set(path("/locked/b"), json("2")), .set(path("/open/c"), json("3")))
        // Rules that deny /locked: a request that touches it is refused whole, as Firebase does.
        f.remote.answer = { r in
            r.path.description.hasPrefix("/locked") || r.bodyText.contains("locked")
                ? ScriptedRemote.reply(401, #"{"error":"Permission denied"}"#) : nil
        }
        #expect(text(try f.store.cachedRead(path("/locked/b"), now: 0).value) == "2")
        let (lines, stop) = try events(f.db())
        #expect(stop == nil)
        #expect(lines == ["acked 1 /open/a", "rejected 2 /locked/b permission_denied", "acked 3 /open/c"])
        #expect(f.remote.lines == ["PATCH /", "PUT /open/a", "PUT /locked/b", "PUT /open/c"])
        #expect(text(f.remote.data) == #"{"open":{"a":1,"c":3}}"#)
        // Reverted: the cache no longer shows it, and the log keeps it.
        #expect(try f.store.cachedRead(path("/locked/b"), now: 0).value.isNull)
        let log = try f.store.rejections()
        #expect(log.count == 1 && log[0].write.id == 2 && log[0].error.code == .permissionDenied)
    }

    @Test func tooLargeAndInvalidAreRejectionsAndAServerErrorStops() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/big"), json("1")))
        f.remote.answer = { _ in ScriptedRemote.reply(413, "") }
        #expect(try events(f.db()).lines == ["rejected 1 /big too_large"])
        try f.queue(.set(path("/bad"), json("1")))
        f.remote.answer = { _ in ScriptedRemote.reply(400, #"{"error":"Invalid data; couldn't parse JSON object"}"#) }
        #expect(try events(f.db()).lines == ["rejected 2 /bad invalid_json"])
        try f.queue(.set(path("/later"), json("1")))
        f.remote.answer = { _ in ScriptedRemote.reply(503, "busy") }
        let (lines, stop) = try events(f.db())
        #expect(lines.isEmpty)
        #expect(stop?.reason == .unavailable && stop?.error.code == .unavailable)
        // Sent and not answered usefully: kept, marked sending (it may have been applied).
        let row = try #require(try f.store.queuedWrite(id: 3))
        #expect(row.state == .sending && row.attempts == 1)
    }

    @Test func aRowSentBeforeACrashIsMarkedResent() throws {
        let f = OfflineFixture()
        try f.queue(.increment(path("/n"), by: json("1")))
        // A flusher marked it sending, then died before the answer.
        _ = try f.store.beginSending(id: 1)
        let (lines, stop) = try events(f.db())
        #expect(stop == nil)
        #expect(lines == ["acked 1 /n resent"])
        #expect(text(f.remote.data) == #"{"n":1}"#)
    }

    @Test func anUnreachableServerStopsTheFlushBeforeAnythingIsMarked() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/a"), json("1")), .set(path("/b"), json("2")))
        f.remote.reachable = false
        let (lines, stop) = try events(f.db())
        #expect(lines.isEmpty)
        #expect(stop?.reason == .offline && stop?.error.code == .unavailable)
        #expect(try f.store.queuedWrites().map { "\($0.state.rawValue) \($0.attempts)" } == ["pending 0", "pending 0"])
        // --offline contacts nothing at all.
        f.remote.reachable = true
        #expect(try f.db(.offline).flush()?.reason == .offline)
        #expect(f.remote.sent.isEmpty)
    }

    @Test func aRefusedTokenPausesTheQueueUntilAFreshOne() throws {
        let f = OfflineFixture()
        let old = token(sub: "joe", exp: 4_102_444_800)
        f.remote.credential = old
        try f.queue(.set(path("/e"), json("1")))
        // The server refuses the token itself (a 401 that is not a rules denial).
        f.remote.answer = { _ in
            if case .auth(let t) = f.remote.credential, case .auth(let o) = old, t == o {
                return ScriptedRemote.reply(401, #"{"error":"Auth token is expired"}"#)
            }
            return nil
        }
        let paused = try events(f.db())
        #expect(paused.lines.isEmpty)
        #expect(paused.stop?.reason == .unauthenticated && paused.stop?.error.code == .unauthenticated)
        #expect(paused.stop?.error.message.contains("auth token is expired") == true, "\(String(describing: paused.stop))")
        // Refused before it was applied: pending and unsent again.
        let row = try #require(try f.store.queuedWrite(id: 1))
        #expect(row.state == .pending && row.attempts == 0)
        // With a way to get a fresh token (the same principal), the flush fetches one once and
        // sends the row again.
        var refreshed = 0
        let db = f.db(refresh: { refreshed += 1; return self.token(sub: "joe", exp: 4_102_444_801) })
        let sent = try events(db)
        #expect(sent.stop == nil && refreshed == 1)
        #expect(sent.lines == ["acked 1 /e"], "not resent: the refused request was never applied")
        #expect(f.remote.lines == ["PUT /e", "PUT /e", "PUT /e"])
        #expect(text(f.remote.data) == #"{"e":1}"#)
    }

    @Test func anExpiredTokenPausesBeforeAnythingIsSent() throws {
        let f = OfflineFixture()
        f.remote.credential = token(sub: "joe", exp: 1_000_000_000)
        try f.queue(.set(path("/e"), json("1")))
        let (lines, stop) = try events(f.db())
        #expect(lines.isEmpty && stop?.reason == .unauthenticated)
        #expect(f.remote.sent.isEmpty)
    }

    @Test func aRowOfAnotherPrincipalStopsTheFlush() throws {
        let f = OfflineFixture()
        f.remote.credential = token(sub: "ann", exp: 4_102_444_800)
        try f.queue(.set(path("/p"), json("1")))
        f.remote.credential = token(sub: "bob", exp: 4_102_444_800)
        let (lines, stop) = try events(f.db())
        #expect(lines.isEmpty && stop?.reason == .principalMismatch && stop?.error.code == .principalMismatch)
        #expect(f.remote.sent.isEmpty)
    }

    /// A flush made on the way to other work (a read, a later write, a transaction) tells
    /// `onIncidentalFlushEvent` of each outcome; a write's own rejection is its error instead.
    @Test func writesSentOnTheWayAreToldAndAWritesOwnRejectionIsItsError() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/locked/a"), json("1")), .set(path("/open/b"), json("2")))
        f.remote.answer = { r in r.path.description.hasPrefix("/locked") || r.bodyText.contains("locked")
            ? ScriptedRemote.reply(401, #"{"error":"Permission denied"}"#) : nil }
        var told: [String] = []
        let db = f.db()
        db.onIncidentalFlushEvent = { event in
            switch event {
            case .acked(let row, _, _): told.append("acked \(row.id) \(row.path)")
            case .rejected(let row, let e): told.append("rejected \(row.id) \(row.path) \(e.code.rawValue)")
            }
        }
        _ = try db.read(path("/open"), query: nil)
        #expect(told == ["rejected 1 /locked/a permission_denied", "acked 2 /open/b"])
        told = []
        try f.queue(.set(path("/locked/c"), json("3")))
        let own = #expect(throws: RTDBError.self) { _ = try db.commit(.set(path("/locked/d"), json("4"))) }
        #expect(own?.code == .permissionDenied)
        #expect(told == ["rejected 3 /locked/c permission_denied"], "the write's own rejection is not told twice")
        // A sibling (a watch's sender) tells the same listener.
        try f.queue(.set(path("/locked/e"), json("5")))
        told = []
        db.sibling().flushIncidentally()
        #expect(told == ["rejected 5 /locked/e permission_denied"])
    }

    @Test func aWriteReturnsTheServersValueOrWhyItWaits() throws {
        let f = OfflineFixture()
        let acked = try f.db().commit(.set(path("/t"), json(#"{".sv":"timestamp"}"#)))
        #expect(acked.queued == nil && !acked.resent)
        #expect(text(acked.values[0].value) == "\(f.remote.now)", "the server's resolution")
        f.remote.reachable = false
        let queued = try f.db().commit(.set(path("/u"), json(#"{".sv":"timestamp"}"#)))
        let q = try #require(queued.queued)
        #expect(q.reason == .offline && q.estimated && q.id == 2)
        #expect(queued.values[0].path.description == "/u")
        // --online never leaves a write queued that was never sent.
        #expect(throws: RTDBError.self) { _ = try f.db(.online).commit(.set(path("/v"), json("1"))) }
        #expect(try f.store.queuedWrites().map(\.id) == [2])
    }
}
