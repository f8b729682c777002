import RTDBCore
import RTDBWire
@testable import RTDBRemote
import Testing

private func node(_ json: String) -> Node { (try? JSONReader.parse(json)) ?? .null }
private func text(_ n: Node) -> String { JSONWriter.string(n) }

@Suite struct CredentialTests {
    let key = #"{"type":"service_account","client_email":"sa@p.iam.gserviceaccount.com","private_key_id":"k1","private_key":"-----BEGIN PRIVATE KEY-----\nAA\n-----END PRIVATE KEY-----\n","token_uri":"http://127.0.0.1:9/token"}"#

    func resolve(options: [String: String] = [:], env: [String: String] = [:]) throws -> Credential {
        try Credential.resolve(accessToken: options["--access-token"], auth: options["--auth"], credentials: options["--credentials"],
                               env: { env[$0] }, readFile: { _ in Array(key.utf8) }, cacheFolder: nil, now: { 1_700_000_000_000 })
    }

    @Test func mostSpecificWins() throws {
        let all = ["--access-token": "A", "--auth": "B", "--credentials": "f"]
        let envAll = ["RTDB_ACCESS_TOKEN": "EA", "RTDB_AUTH": "EB", "GOOGLE_APPLICATION_CREDENTIALS": "f"]
        guard case .accessToken("A") = try resolve(options: all, env: envAll) else { Issue.record("access token option"); return }
        guard case .auth("B") = try resolve(options: ["--auth": "B"], env: envAll) else { Issue.record("auth option"); return }
        guard case .serviceAccount = try resolve(options: ["--credentials": "f"], env: envAll) else { Issue.record("credentials"); return }
        guard case .accessToken("EA") = try resolve(env: envAll) else { Issue.record("env access token"); return }
        guard case .auth("EB") = try resolve(env: ["RTDB_AUTH": "EB", "GOOGLE_APPLICATION_CREDENTIALS": "f"]) else { Issue.record("env auth"); return }
        guard case .none = try resolve() else { Issue.record("none"); return }
    }

    @Test func tokensMustBeOneVisibleLine() {
        for bad in ["a b", "a\r\nX: 1", "é"] {
            #expect(throws: RTDBError.self) { try resolve(options: ["--access-token": bad]) }
        }
    }

    @Test func descriptionsNeverShowTheSecret() throws {
        #expect(!Credential.accessToken("s3cret").description.contains("s3cret"))
        #expect(!Credential.auth("s3cret").description.contains("s3cret"))
    }

    @Test func keyFilesAreChecked() {
        for bad in ["{", "[]", #"{"type":"authorized_user","client_email":"a","private_key":"PRIVATE KEY"}"#,
                    #"{"private_key":"-----BEGIN PRIVATE KEY-----"}"#, #"{"client_email":"a"}"#,
                    #"{"client_email":"a","private_key":"PRIVATE KEY","token_uri":"ftp://x"}"#] {
            #expect {
                try ServiceAccount(file: "k.json", bytes: Array(bad.utf8), cacheFolder: nil, now: { 0 })
            } throws: { e in
                (e as? RTDBError)?.code == .usage && ((e as? RTDBError)?.message.contains("k.json") ?? false)
            }
        }
    }

    @Test func theJWTCarriesTheClaimsGoogleExpects() throws {
        let sa = try ServiceAccount(file: "k.json", bytes: Array(key.utf8), cacheFolder: nil, now: { 0 })
        let parts = sa.signingInput(issuedAt: 1_700_000_000).split(separator: ".")
        #expect(parts.count == 2)
        func decode(_ s: Substring) -> String {
            var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while t.count % 4 != 0 { t += "=" }
            return String(decoding: Base64Decode.decode(t), as: UTF8.self)
        }
        #expect(decode(parts[0]) == #"{"alg":"RS256","kid":"k1","typ":"JWT"}"#)
        #expect(decode(parts[1]) == #"{"aud":"http://127.0.0.1:9/token","exp":1700003600,"iat":1700000000,"iss":"sa@p.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/firebase.database https://www.googleapis.com/auth/userinfo.email"}"#)
        #expect(!parts[0].contains("=") && !parts[1].contains("="))
    }
}

/// A small base64 decoder for checking JWT parts.
enum Base64Decode {
    static func decode(_ s: String) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var acc = 0, bits = 0
        for c in s.utf8 where c != UInt8(ascii: "=") {
            guard let v = alphabet.firstIndex(of: c) else { continue }
            acc = (acc << 6) | v
            bits += 6
            if bits >= 8 { bits -= 8; out.append(UInt8((acc >> bits) & 0xFF)) }
        }
        return out
    }
}

extension Substring {
    func replacingOccurrences(of a: String, with b: String) -> String {
        String(self).split(separator: Character(a), omittingEmptySubsequences: false).joined(separator: b)
    }
}
extension String {
    func replacingOccurrences(of a: String, with b: String) -> String {
        split(separator: Character(a), omittingEmptySubsequences: false).joined(separator: b)
    }
}

@Suite struct StreamEventTests {
    func event(_ name: String, _ data: String) -> SSEDecoder.Event { SSEDecoder.Event(event: name, data: data) }

    func stream(_ path: Path = .root, query: Query? = nil) throws -> RemoteStream {
        let db = RemoteDatabase(target: try RemoteTarget.parse("http://127.0.0.1:9?ns=x"), credential: .none,
                                timeoutSeconds: 1, caFile: nil)
        return RemoteStream(db: db, path: path, query: query)
    }

    /// Streams ask for priorities (`format=export`); a filtered query's parameters go with
    /// them, so the server sends the window; a priority path streams its node.
    @Test func aStreamAsksForPrioritiesAndItsWindow() throws {
        let plain = try stream(Path("/a"))
        #expect(plain.params.map { "\($0.name)=\($0.value)" } == ["format=export"])
        #expect(plain.location.same(as: try Path("/a")))
        let window = try stream(Path("/a"), query: Query(order: .value, limit: .last(3)))
        #expect(window.params.map { "\($0.name)=\($0.value)" } == [#"orderBy="$value""#, "limitToLast=3", "format=export"])
        let priority = try stream(Path("/a/b/.priority"), query: Query(order: .value, limit: .last(3)))
        #expect(priority.params.map { "\($0.name)=\($0.value)" } == ["format=export"])
        #expect(priority.location.same(as: try Path("/a/b")))
    }

    /// Values in the export form keep their priorities; an event at a `.priority` path sets
    /// its node's priority; a priority path passes on its node's priority alone.
    @Test func prioritiesInEventsReachTheLocalCopy() throws {
        var s = try stream(Path("/t/.priority"))
        let steps: [(SSEDecoder.Event, String, String)] = [
            (event("put", #"{"path":"/","data":{"a":{".value":1,".priority":5},".priority":"p"}}"#),
             #"{"a":{".value":1,".priority":5},".priority":"p"}"#, #""p""#),
            (event("put", #"{"path":"/.priority","data":7}"#), #"{"a":{".value":1,".priority":5},".priority":7}"#, "7"),
            (event("patch", #"{"path":"/","data":{"a/.priority":null,"b":{"x":1,".priority":2}}}"#),
             #"{"a":1,"b":{"x":1,".priority":2},".priority":7}"#, "7"),
            (event("put", #"{"path":"/","data":null}"#), "null", "null"),
        ]
        for (e, expected, delivered) in steps {
            let change = try #require(RemoteStream.parse(e), "\(e)")
            _ = s.apply(change)
            #expect(JSONWriter.string(s.local, export: true) == expected)
            #expect(JSONWriter.string(s.delivery, export: true) == delivered)
        }
    }

    @Test func putsAndPatchesBuildTheLocalCopy() throws {
        var s = try stream()
        let steps: [(SSEDecoder.Event, String, [String]?)] = [
            (event("put", #"{"path":"/","data":{"a":1,"b":{"c":2}}}"#), #"{"a":1,"b":{"c":2}}"#, nil),
            (event("put", #"{"path":"/b/d","data":3}"#), #"{"a":1,"b":{"c":2,"d":3}}"#, ["b"]),
            (event("patch", #"{"path":"/","data":{"a":null,"e/f":"x"}}"#), #"{"b":{"c":2,"d":3},"e":{"f":"x"}}"#, ["a", "e"]),
            (event("patch", #"{"data":{"c":null},"path":"/b"}"#), #"{"b":{"d":3},"e":{"f":"x"}}"#, ["b"]),
            (event("put", #"{"path":"/b","data":null}"#), #"{"e":{"f":"x"}}"#, ["b"]),
            (event("put", #"{"path":"/","data":null}"#), "null", nil),
        ]
        for (e, expected, keys) in steps {
            let change = try #require(RemoteStream.parse(e), "\(e)")
            let touched = s.apply(change)
            #expect(text(s.local) == expected)
            #expect(touched == keys)
        }
    }

    @Test(arguments: ["", "null", "[]", #"{"path":"/"}"#, #"{"data":1}"#, #"{"path":"a.b","data":1}"#, #"{"path":1,"data":1}"#, #"{"path":"/","data":"#])
    func malformedEventsAreRefused(_ data: String) {
        #expect(RemoteStream.parse(event("put", data)) == nil)
    }

    @Test func patchDataMustBeAnObject() {
        #expect(RemoteStream.parse(event("patch", #"{"path":"/","data":5}"#)) == nil)
    }

    @Test func membersKeepTheirRawText() throws {
        let text = #" { "a" : {"x":[1,{"y":"}"}]} , "b\"c":null,"d":"s,t" } "#
        let m = try #require(JSONMembers.spans(Array(text.utf8)))
        let bytes = Array(text.utf8)
        #expect(m.map(\.key) == ["a", "b\"c", "d"])
        #expect(m.map { String(decoding: bytes[$0.span], as: UTF8.self) } == [#"{"x":[1,{"y":"}"}]}"#, "null", #""s,t""#])
    }
}

@Suite struct RemoteErrorTests {
    let target = (try? RemoteTarget.parse("http://127.0.0.1:9?ns=x"))!

    func error(_ status: Int, _ body: String) -> RTDBError {
        RemoteErrors.error(HTTPClientResponse(head: HTTPResponseHead(status: status), body: Array(body.utf8)), target: target, what: "a read of /a")
    }

    @Test func statusesMapToTheContract() {
        #expect(error(401, #"{"error":"Permission denied"}"#).code == .permissionDenied)
        #expect(error(403, "").code == .permissionDenied)
        #expect(error(404, "").code == .unavailable)
        #expect(error(412, "1").code == .notCommitted)
        #expect(error(429, "").code == .unavailable)
        #expect(error(500, "").code == .unavailable)
        #expect(error(503, "<html>busy</html>").message.contains("<html>busy</html>"))
    }

    @Test func badRequestsKeepTheServersMessage() {
        let e = error(400, #"{"error":"Index not defined, add \".indexOn\": \"h\", for path \"/d\", to the rules"}"#)
        #expect(e.code == .invalidQuery)
        #expect(e.message.contains("Index not defined"))
        #expect(error(400, #"{"error":"Invalid data; couldn't parse JSON object"}"#).code == .invalidJSON)
        #expect(error(400, #"{"error":"Invalid path"}"#).code == .invalidPath)
        #expect(error(400, #"{"error":"something else"}"#).code == .invalidData)
        #expect(error(400, #"{"error":"something else"}"#).code.exitStatus == 3)
    }
}
