import Foundation
import Testing
import RTDBCore
import RTDBNet
@testable import RTDBEngine
@testable import RTDBServer

/// Every REST write streams the event Firebase sends for it, whoever writes and whether rules
/// are loaded or not: PUT a `put` at the written path, PATCH a `patch` of the merged children at
/// the patched location, POST a `put` at the new child, DELETE a `put` of null at the path.
/// Over a real server, with a stream on the written list and one on the root.
@Suite struct WriteEventsTests {
    enum Setting: String, CaseIterable, CustomStringConvertible, Sendable {
        case openAnonymous = "no rules, anonymous"
        case openAdmin = "no rules, admin"
        case rulesAnonymous = "rules, anonymous"
        case rulesAdmin = "rules, admin"
        var description: String { rawValue }
        var rules: Bool { self == .rulesAnonymous || self == .rulesAdmin }
        var headers: [(String, String)] {
            self == .openAdmin || self == .rulesAdmin ? WriteEventsTests.owner : []
        }
    }

    enum Method: String, CaseIterable, CustomStringConvertible, Sendable {
        case put = "PUT", patch = "PATCH", post = "POST", delete = "DELETE"
        var description: String { rawValue }
    }

    static let owner = [("Authorization", "Bearer owner")]

    /// A server on a fresh file holding `/list` = `{"a":{"n":1},"b":2}`, with rules that let
    /// anyone read and write when `rules`; `body` gets the server and a connection to it.
    func withList(rules: Bool, _ body: (Server, TCPStream) throws -> Void) throws {
        try withServerOnFreshFile { server, _ in
            let s = try connect(server)
            defer { s.close() }
            if rules {
                let loaded = try exchange(s, "PUT", "/.settings/rules.json", #"{"rules":{".read":true,".write":true}}"#,
                                          headers: WriteEventsTests.owner)
                #expect(loaded.0 == 200)
            }
            #expect(try exchange(s, "PUT", "/list.json", #"{"a":{"n":1},"b":2}"#, headers: WriteEventsTests.owner).0 == 200)
            try body(server, s)
        }
    }

    @Test(arguments: Setting.allCases, Method.allCases)
    func aWriteStreamsTheEventFirebaseSendsForIt(_ setting: Setting, _ method: Method) throws {
        try withList(rules: setting.rules) { server, s in
            let list = try SSEClient(server, "/list.json")
            let root = try SSEClient(server, "/.json")
            #expect(try list.next() == #"put {"path":"/","data":{"a":{"n":1},"b":2}}"#)
            #expect(try root.next() == #"put {"path":"/","data":{"list":{"a":{"n":1},"b":2}}}"#)

            // The event on /list, as `name path data` with the path relative to /list.
            let expected: (name: String, path: String, data: String)
            switch method {
            case .put:
                #expect(try exchange(s, "PUT", "/list/c.json", "3", headers: setting.headers).0 == 200)
                expected = ("put", "/c", "3")
            case .patch:
                #expect(try exchange(s, "PATCH", "/list.json", #"{"a/n":5,"d":true}"#, headers: setting.headers).0 == 200)
                expected = ("patch", "/", #"{"a/n":5,"d":true}"#)
            case .post:
                let (status, answer) = try exchange(s, "POST", "/list.json", #"{"text":"hi"}"#, headers: setting.headers)
                #expect(status == 200)
                guard case .string(let key) = node(answer).child("name") else {
                    Issue.record("no push ID in \(answer)")
                    return
                }
                expected = ("put", "/" + key, #"{"text":"hi"}"#)
            case .delete:
                #expect(try exchange(s, "DELETE", "/list/b.json", "", headers: setting.headers).0 == 200)
                expected = ("put", "/b", "null")
            }
            let below = expected.path == "/" ? "/list" : "/list" + expected.path
            #expect(try list.next() == #"\#(expected.name) {"path":"\#(expected.path)","data":\#(expected.data)}"#)
            #expect(try root.next() == #"\#(expected.name) {"path":"\#(below)","data":\#(expected.data)}"#)
        }
    }

    /// A write too large for the change feed to copy is read back from the data; it keeps its
    /// kind all the same.
    @Test(arguments: [Setting.openAdmin, .rulesAnonymous])
    func aWriteTooLargeToCopyKeepsItsEvent(_ setting: Setting) throws {
        let big = "{" + (0...EmbeddedDatabase.changeDataLeaves).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
        try withList(rules: setting.rules) { server, s in
            let list = try SSEClient(server, "/list.json")
            #expect(try list.next() == #"put {"path":"/","data":{"a":{"n":1},"b":2}}"#)

            // One child patched: still a patch of that child.
            #expect(try exchange(s, "PATCH", "/list.json", #"{"big":\#(big)}"#, headers: setting.headers).0 == 200)
            // Compared by its start: a failure shows that much, not the whole value.
            let patched = try #require(try list.next())
            let patchStart = #"patch {"path":"/","data":{"big":{"k0":0,"#
            #expect(String(patched.prefix(patchStart.count)) == patchStart)

            // One child pushed: a put of it.
            let (status, answer) = try exchange(s, "POST", "/list.json", big, headers: setting.headers)
            #expect(status == 200)
            guard case .string(let key) = node(answer).child("name") else {
                Issue.record("no push ID in \(answer)")
                return
            }
            let pushed = try #require(try list.next())
            let pushStart = #"put {"path":"/\#(key)","data":{"k0":0,"#
            #expect(String(pushed.prefix(pushStart.count)) == pushStart)
        }
    }
}
