import Foundation
import Testing
import RTDBCore
@testable import RTDBOffline

/// Reads through the cache (OfflineReads.swift) against a scripted remote: the
/// three modes, the fallback to the cache, ETags and incomplete answers.
@Suite struct OfflineReadTests {
    let scores = json(#"{"bruhathkayosaurus":55,"lambeosaurus":21,"linhenykus":80,"pterodactyl":93,"stegosaurus":5,"triceratops":22}"#)

    @Test func autoAsksTheServerAndKeepsItsAnswer() throws {
        let f = OfflineFixture()
        f.remote.data = json(#"{"a":{"b":1}}"#)
        let r = try f.db().read(path("/a"), as: .value, partial: false)
        #expect(r.complete && text(r.value) == #"{"b":1}"#)
        #expect(f.remote.lines == ["GET /a"])
        // Kept: --offline answers it without the server.
        f.remote.reachable = false
        #expect(text(try f.db(.offline).get(path("/a/b"))) == "1")
        #expect(f.remote.lines == ["GET /a"])
    }

    @Test func autoFallsBackToTheCacheAndOnlineDoesNot() throws {
        let f = OfflineFixture()
        f.remote.data = json(#"{"a":1}"#)
        _ = try f.db().get(path("/a"))
        f.remote.reachable = false
        #expect(text(try f.db().get(path("/a"))) == "1", "the server cannot be reached: the cache answers")
        do {
            _ = try f.db(.online).get(path("/a"))
            Issue.record("--online answered without the server")
        } catch let e as RTDBError {
            #expect(e.code == .unavailable)
        }
    }

    @Test func aReadSendsTheQueueFirstSoItReadsItsWrites() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/w"), json("7")))
        #expect(text(try f.db().get(path("/w"))) == "7")
        #expect(f.remote.lines == ["PUT /w", "GET /w"])
        #expect(try f.store.queuedWrites().isEmpty)
    }

    @Test func anUnchangedLocationCostsA304() throws {
        let f = OfflineFixture()
        f.remote.data = json(#"{"a":{"b":1}}"#)
        _ = try f.db().get(path("/a"))
        let tag = try #require(try f.store.storedETag(path("/a")))
        #expect(f.remote.sent[0].header("X-Firebase-ETag") == "true")
        #expect(text(try f.db().get(path("/a"))) == #"{"b":1}"#)
        #expect(f.remote.sent[1].header("if-none-match") == tag)
        // The 304 kept the cached value; a change on the server is read again.
        f.remote.data = json(#"{"a":{"b":2}}"#)
        #expect(text(try f.db().get(path("/a"))) == #"{"b":2}"#)
    }

    @Test func deniedIsAnErrorNeverAnAnswerFromTheCache() throws {
        let f = OfflineFixture()
        f.remote.data = json(#"{"a":1}"#)
        _ = try f.db().get(path("/a"))
        f.remote.answer = { _ in ScriptedRemote.reply(403, #"{"error":"Permission denied"}"#) }
        do {
            _ = try f.db().get(path("/a"))
            Issue.record("a denied read was answered from the cache")
        } catch let e as RTDBError {
            #expect(e.code == .permissionDenied)
        }
    }

    @Test func anIncompleteAnswerIsUnavailableUnlessPartialIsAsked() throws {
        let f = OfflineFixture()
        f.remote.data = json(#"{"scores":\#(text(scores))}"#)
        let last4 = Query(order: .value, limit: .last(4))
        let r = try f.db().query(path("/scores"), last4, partial: false)
        #expect(r.complete && r.value.map(\.key) == ["triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"])
        #expect(f.remote.sent[0].params.contains { $0.name == "limitToLast" && $0.value == "4" })
        let offline = f.db(.offline)
        // The same query, offline: complete.
        #expect(try offline.query(path("/scores"), last4, partial: false).complete)
        // A window inside the cached one, in the same order: whole.
        let last2 = Query(order: .value, limit: .last(2))
        let inside = try offline.query(path("/scores"), last2, partial: false)
        #expect(inside.complete && inside.value.map(\.key) == ["linhenykus", "pterodactyl"])
        // A window reaching past it: not in full.
        let last6 = Query(order: .value, limit: .last(6))
        do {
            _ = try offline.query(path("/scores"), last6, partial: false)
            Issue.record("an incomplete answer was given as whole")
        } catch let e as RTDBError {
            #expect(e.code == .unavailable && e.message.contains("--partial"), "\(e)")
        }
        let partial = try offline.query(path("/scores"), last6, partial: true)
        #expect(!partial.complete && partial.value.map(\.key) == ["triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"])
        // The whole location is known only in part; one of its tracked keys is known whole.
        let whole = try offline.read(path("/scores"), as: .shallow, partial: true)
        #expect(!whole.complete && text(whole.value) == #"{"bruhathkayosaurus":true,"linhenykus":true,"pterodactyl":true,"triceratops":true}"#)
        #expect(try offline.read(path("/scores/linhenykus"), as: .value, partial: false).complete)
    }

    @Test func aQueuedWriteShowsAtOnceAndCompletesWhatItSets() throws {
        let f = OfflineFixture()
        try f.queue(.set(path("/q"), json(#"{"x":1}"#)))
        let r = try f.db(.offline).read(path("/q"), as: .value, partial: false)
        #expect(r.complete && text(r.value) == #"{"x":1}"#)
        #expect(!(try f.db(.offline).read(.root, as: .value, partial: true).complete))
    }

    @Test func offlineInfoIsNotConnectedAndShowsTheLastOffset() throws {
        let f = OfflineFixture()
        #expect(text(try f.db(.offline).connectionInfo()) == #"{"connected":false,"serverTimeOffset":null}"#)
        _ = try f.db().connectionInfo()
        #expect(text(try f.db(.offline).connectionInfo()) == #"{"connected":false,"serverTimeOffset":0}"#, "the offset was kept")
    }
}
