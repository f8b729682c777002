import Foundation
import Testing
import RTDBCore
import RTDBEngine
import RTDBRemote
import RTDBRules
import RTDBWire
@testable import RTDBServer

/// The rule vectors again, over Firebase's realtime protocol: each REST request
/// of the table becomes the realtime request a Firebase SDK sends (`g` for a read, its query as
/// a wire query object; `p` for PUT, DELETE and POST; `m` for PATCH), sent by a realtime client
/// to a server running in this process, with the credential where an SDK puts it (`auth` for
/// an ID token, `gauth` for the admin and its `authvar`). Allowed is `ok`, denied is
/// `permission_denied`, and a denied write changes nothing. The two vectors about REST's 400
/// answers (an undeclared index, a rules file error) have no realtime counterpart.
@Suite(.serialized) struct RealtimeRulesVectorTests {
    @Test("each vector over the realtime protocol", arguments: vectors.filter { $0.expected != 400 })
    func vector(_ v: Vector) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-rt-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/v.db"
        if v.data != "{}" { _ = try EmbeddedDatabase(file: file).set(.root, try JSONReader.parse(v.data)) }
        var security = SecurityOptions()
        security.rules = try RuleSet(v.rules)
        security.ownerIsAdmin = true
        var options = Server.Options()
        options.port = 0
        let server = try Server(options: options, namespaces: ServerNamespaces(file: file, timeoutSeconds: 5),
                                watchFolder: nil, security: security)
        try whileRunning(server) { try check(v, server: server, file: file) }
    }

    func check(_ v: Vector, server: Server, file: String) throws {
        let before = try EmbeddedDatabase(file: file).get(.root)

        let target = RemoteTarget(secure: false, host: "127.0.0.1", port: server.port, namespace: "demo", emulator: false)
        let credential: Credential
        switch v.who {
        case .anonymous, .override: credential = .none
        case .user(let uid): credential = .auth(mockToken(uid))
        case .admin: credential = .accessToken("owner")
        case .bearer(let b): credential = .accessToken(b)
        }
        let client = RealtimeClient(target: target, credential: credential, timeoutSeconds: 5, caFile: nil)
        defer { client.close() }
        try client.connect()
        if case .override(let authvar) = v.who {
            let body = authvar == "null" ? #"{"cred":"owner","noauth":true}"# : #"{"cred":"owner","authvar":"# + authvar + "}"
            #expect(try client.call("gauth", body).isOK, "\(v): gauth")
        }

        // The REST request, as a realtime one.
        let request = HTTPRequest(method: v.method, target: v.target)
        let rel = request.rawPath.hasSuffix(".json") ? String(request.rawPath.dropLast(5)) : request.rawPath
        let path = try Path(try PercentCoding.decode(rel))
        let wirePath = JSONText(string: path.description).description
        let answer: RealtimeAnswer
        switch v.method {
        case "GET":
            let query = try RESTQuery.parse(request.query).flatMap(RealtimeQuery.object) ?? "{}"
            answer = try client.call("g", #"{"p":"# + wirePath + #","q":"# + query + "}")
        case "PUT", "DELETE":
            answer = try client.call("p", #"{"p":"# + wirePath + #","d":"# + (v.body ?? "null") + "}")
        case "POST":
            let child = JSONText(string: path.appending("-Nabcdefghijklmnopqr").description).description
            answer = try client.call("p", #"{"p":"# + child + #","d":"# + (v.body ?? "null") + "}")
        case "PATCH":
            answer = try client.call("m", #"{"p":"# + wirePath + #","d":"# + (v.body ?? "{}") + "}")
        default:
            Issue.record("\(v): no realtime form for \(v.method)")
            return
        }
        if v.expected == 200 {
            #expect(answer.isOK, "\(v): \(answer.status) \(answer.message)")
        } else {
            #expect(answer.status == "permission_denied", "\(v): \(answer.status) \(answer.message)")
            #expect(try EmbeddedDatabase(file: file).get(.root).same(as: before), "\(v): a denied request changed the data")
        }
    }
}
