import Foundation
import Testing
import RTDBCore
import RTDBEngine
import RTDBRules
import RTDBWire
@testable import RTDBServer

/// The realtime handler without a socket: decoded requests in, the messages to send out, as
/// the bytes of the protocol's recorded transcripts.
final class RealtimeBench {
    let dir = NSTemporaryDirectory() + "rtdb-rt-handler-" + UUID().uuidString
    let namespaces: ServerNamespaces
    let rest: RESTHandler
    let streams = ServerStreams()
    let handler: RealtimeHandler
    let commit: GroupCommit
    let session: RealtimeSession
    /// Pushes of later events, as the server would deliver them.
    var delivered: [String] = []

    init(secret: String? = nil, rules: String? = nil) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        namespaces = ServerNamespaces(file: dir + "/rt.db", timeoutSeconds: 5)
        rest = RESTHandler(provider: namespaces, secret: secret)
        if let rules { rest.security.rules = try RuleSet(rules) }
        handler = RealtimeHandler(rest: rest, namespaces: namespaces, streams: streams, log: ServerLog(requests: false))
        commit = GroupCommit(storage: namespaces)
        session = RealtimeSession(id: "session1", namespace: "demo", host: "127.0.0.1:9555", credentials: RealtimeSession.anonymous)
        streams.deliver = { [unowned self] subs, event in
            for case .realtime(let location, let tag) in subs.map(\.kind) {
                self.delivered.append(Self.text(.push(RealtimePush(event.event, at: location, tag: tag))))
            }
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    static func text(_ m: RealtimeMessage) -> String { String(decoding: m.encode(), as: UTF8.self) }

    func work(_ frame: String) -> RealtimeWork {
        do {
            switch try RealtimeMessage.decode(Array(frame.utf8)) {
            case .request(let r): return .request(r)
            case .control(.ping): return .ping
            default: return .refused(r: -1, action: "?", RTDBError(.internal, "not a request: \(frame)"))
            }
        } catch {
            guard let refused = error.refusedRequest else { return .refused(r: -1, action: "?", RTDBError(.internal, "\(error)")) }
            return .refused(r: refused.r, action: refused.action, refused.error)
        }
    }

    /// What the server answers at once to one client frame.
    func answer(_ frame: String) -> [String] {
        handler.answer(work(frame), session, connection: 16).map(Self.text)
    }

    /// A write, run in a group commit: the pushes it causes, then its answer.
    func write(_ frame: String) -> [String] {
        var answer: RealtimeResponse? = nil
        let w = work(frame)
        commit.submit { [unowned self] in
            let a = self.handler.write(w, self.session)
            return { _ in answer = a }
        }
        commit.run { [unowned self] files in
            for f in files { try? self.streams.pump(file: f, db: try self.namespaces.embedded("demo")) }
        }
        defer { delivered = [] }
        return delivered + (answer.map { [Self.text(.response($0))] } ?? [])
    }

    func seed(_ json: String) throws {
        _ = try namespaces.embedded("demo").set(.root, try JSONReader.parse(json))
    }
}

@Suite(.serialized) struct RealtimeHandlerTests {
    static let seed = #"{"a":{"b":1},"q":{"k1":{"x":1},"k2":{"x":2},"k3":{"x":3}},"counter":5}"#

    @Test("stats, get, listen, a write under it, a tagged window, a transaction")
    func transcript() throws {
        let t = try RealtimeBench()
        try t.seed(Self.seed)
        #expect(t.answer(#"{"t":"d","d":{"r":1,"a":"s","b":{"c":{"sdk.node.12-18-0":1}}}}"#) == [#"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":2,"a":"g","b":{"p":"/a","q":{}}}}"#) == [#"{"t":"d","d":{"r":2,"b":{"s":"ok","d":{"b":1}}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":3,"a":"q","b":{"p":"/a","h":""}}}"#) == [
            #"{"t":"d","d":{"a":"d","b":{"p":"a","d":{"b":1}}}}"#, #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":{}}}}"#])
        #expect(t.write(#"{"t":"d","d":{"r":4,"a":"p","b":{"p":"/a/b","d":2}}}"#) == [
            #"{"t":"d","d":{"a":"d","b":{"p":"a/b","d":2}}}"#, #"{"t":"d","d":{"r":4,"b":{"s":"ok","d":""}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":5,"a":"q","b":{"p":"/q","q":{"l":2,"vf":"r","i":"x"},"t":1,"h":""}}}"#) == [
            #"{"t":"d","d":{"a":"d","b":{"p":"q","d":{"k2":{"x":2},"k3":{"x":3}},"t":1}}}"#, #"{"t":"d","d":{"r":5,"b":{"s":"ok","d":{}}}}"#])
        #expect(t.write(#"{"t":"d","d":{"r":6,"a":"p","b":{"p":"/q/k4","d":{"x":4}}}}"#) == [
            #"{"t":"d","d":{"a":"m","b":{"p":"q","d":{"k4":{"x":4},"k2":null},"t":1}}}"#, #"{"t":"d","d":{"r":6,"b":{"s":"ok","d":""}}}"#])
        _ = t.answer(#"{"t":"d","d":{"r":7,"a":"q","b":{"p":"/counter","h":""}}}"#)
        #expect(t.write(#"{"t":"d","d":{"r":8,"a":"p","b":{"p":"/counter","d":1,"h":""}}}"#) == [
            #"{"t":"d","d":{"r":8,"b":{"s":"datastale","d":"hash mismatch"}}}"#])
        #expect(t.write(#"{"t":"d","d":{"r":9,"a":"p","b":{"p":"/counter","d":6,"h":"w28swksk9+tXf5jEdS9R5oSFAv8="}}}"#) == [
            #"{"t":"d","d":{"a":"d","b":{"p":"counter","d":6}}}"#, #"{"t":"d","d":{"r":9,"b":{"s":"ok","d":""}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":10,"a":"n","b":{"p":"/counter"}}}"#) == [#"{"t":"d","d":{"r":10,"b":{"s":"ok","d":""}}}"#])
        #expect(t.session.listens.count == 2)
        #expect(t.answer(#"{"t":"c","d":{"t":"p","d":{}}}"#) == [#"{"t":"c","d":{"t":"o","d":null}}"#])
    }

    @Test("unknown actions and unreadable bodies are refused in their turn; a refused write names the path fault")
    func refusals() throws {
        let t = try RealtimeBench()
        #expect(t.answer(#"{"t":"d","d":{"r":1,"a":"zz","b":{}}}"#) == [#"{"t":"d","d":{"r":1,"b":{"s":"failure","d":"unknown action zz"}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":2,"a":"q","b":{"h":""}}}"#) == [#"{"t":"d","d":{"r":2,"b":{"s":"failure","d":"a path (p) is needed"}}}"#])
        #expect(t.write(#"{"t":"d","d":{"r":3,"a":"m","b":{"p":"/a","d":5}}}"#) == [#"{"t":"d","d":{"r":3,"b":{"s":"failure","d":"a merge needs an object"}}}"#])
        #expect(t.write(#"{"t":"d","d":{"r":4,"a":"p","b":{"p":"/.info/x","d":1}}}"#) == [#"{"t":"d","d":{"r":4,"b":{"s":"failure","d":"cannot write under /.info"}}}"#])
    }

    @Test("onDisconnect writes are checked at registration and handed over when the session ends")
    func onDisconnect() throws {
        let t = try RealtimeBench()
        #expect(t.answer(#"{"t":"d","d":{"r":2,"a":"o","b":{"p":"/presence/u1","d":{"at":{".sv":"timestamp"},"state":"offline"}}}}"#)
                == [#"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":3,"a":"om","b":{"p":"/presence","d":{"u2/state":"gone"}}}}"#) == [#"{"t":"d","d":{"r":3,"b":{"s":"ok","d":""}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":4,"a":"oc","b":{"p":"/presence/u2","d":null}}}"#) == [#"{"t":"d","d":{"r":4,"b":{"s":"ok","d":""}}}"#])
        let d = try #require(t.handler.end(t.session))
        #expect(d.session == "session1" && d.entries.map(\.path.unrooted) == ["presence/u1"])
        #expect(t.handler.end(t.session) == nil)
        t.commit.submitDisconnect { t.handler.runDisconnect(d) }
        t.commit.run { _ in }
        let stored = try t.namespaces.embedded("demo").get(try Path("/presence/u1"))
        #expect(stored.child("state").same(as: .string("offline")))
        guard case .int = stored.child("at") else { Issue.record("the timestamp did not resolve: \(stored)"); return }
    }

    @Test("credentials are judged like REST's; a wrong one answers invalid_token")
    func authentication() throws {
        let t = try RealtimeBench(secret: "s3cret")
        #expect(t.answer(#"{"t":"d","d":{"r":1,"a":"g","b":{"p":"/a","q":{}}}}"#) == [#"{"t":"d","d":{"r":1,"b":{"s":"permission_denied","d":"Permission denied"}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":2,"a":"auth","b":{"cred":"wrong"}}}"#) == [#"{"t":"d","d":{"r":2,"b":{"s":"invalid_token","d":"Invalid claim"}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":3,"a":"auth","b":{"cred":"s3cret"}}}"#) == [#"{"t":"d","d":{"r":3,"b":{"s":"ok","d":{"auth":null,"expires":null}}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":4,"a":"g","b":{"p":"/a","q":{}}}}"#) == [#"{"t":"d","d":{"r":4,"b":{"s":"ok","d":null}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":5,"a":"unauth","b":{}}}"#) == [#"{"t":"d","d":{"r":5,"b":{"s":"ok","d":"unauthenticated"}}}"#])
        #expect(t.answer(#"{"t":"d","d":{"r":6,"a":"g","b":{"p":"/a","q":{}}}}"#).first?.contains("permission_denied") == true)
    }

    @Test("rules: a listen the data no longer lets the session read is revoked with c")
    func revokedListen() throws {
        let rules = #"{"rules":{"room":{".read":"root.child('open').val() == true"}}}"#
        let t = try RealtimeBench(rules: rules)
        try t.seed(#"{"open":true,"room":{"x":1}}"#)
        #expect(t.answer(#"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/room","q":{"l":1,"vf":"l"},"t":7,"h":""}}}"#).last
                == #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":{}}}}"#)
        #expect(t.handler.recheck(t.session).isEmpty)
        _ = try t.namespaces.embedded("demo").set(try Path("/open"), .bool(false))
        #expect(t.handler.recheck(t.session).map(RealtimeBench.text) == [#"{"t":"d","d":{"a":"c","b":{"p":"room","q":[{"l":1,"vf":"l"}]}}}"#])
        #expect(t.session.listens.isEmpty)
    }
}
