import Testing
import RTDBCore
import RTDBRules
import RTDBWire
@testable import RTDBServer

/// Who sends a request in a rules test.
enum Who: CustomStringConvertible {
    case anonymous
    case user(String)            // auth=<unsigned ID token with sub=uid>
    case admin                   // Authorization: Bearer owner
    case override(String)        // admin + auth_variable_override=<JSON>
    case bearer(String)          // Authorization: Bearer <value>

    var description: String {
        switch self {
        case .anonymous: return "anon"
        case .user(let u): return "u:\(u)"
        case .admin: return "admin"
        case .override(let o): return "ov\(o)"
        case .bearer(let b): return "Bearer \(b)"
        }
    }
}

/// An unsigned ID token as `@firebase/rules-unit-testing` makes it (alg none, base64url, empty
/// signature).
func mockToken(_ uid: String, extra: String = "") -> String {
    let header = #"{"alg":"none","type":"JWT"}"#
    let payload = #"{"iss":"https://securetoken.google.com/demo-project","aud":"demo-project","iat":0,"exp":3600,"auth_time":0,"sub":"\#(uid)","user_id":"\#(uid)","firebase":{"sign_in_provider":"custom","identities":{}}\#(extra)}"#
    return base64url(Array(header.utf8)) + "." + base64url(Array(payload.utf8)) + "."
}

func base64url(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    var out = ""
    var i = 0
    while i < bytes.count {
        let n = min(3, bytes.count - i)
        var v: UInt32 = 0
        for k in 0..<3 { v = v << 8 | UInt32(k < n ? bytes[i + k] : 0) }
        for k in 0..<(n + 1) { out.append(alphabet[Int((v >> UInt32(18 - 6 * k)) & 63)]) }
        i += 3
    }
    return out
}

func percent(_ s: String) -> String {
    var out = ""
    for b in s.utf8 {
        let c = Character(UnicodeScalar(b))
        if c.isLetter || c.isNumber || "-_.~".contains(c) { out.append(c) } else {
            let h = String(b, radix: 16, uppercase: true)
            out += "%" + (h.count == 1 ? "0" + h : h)
        }
    }
    return out
}

/// One test vector of the rules.
struct Vector: CustomStringConvertible {
    var n: Int
    var rules: String
    var who: Who
    var data: String
    var method: String
    var target: String
    var body: String?
    var expected: Int
    var description: String { "#\(n) \(who) \(method) \(target)" }
}

let widgetRules = #"""
{"rules":{".write":true,
  "widget":{".validate":"newData.hasChildren(['color','size'])",
    "size":{".validate":"newData.isNumber() && newData.val() >= 0 && newData.val() <= 99"},
    "color":{".validate":"root.child('valid_colors/' + newData.val()).exists()"}}}}
"""#
let svcRules = #"{"rules":{"pub":{".read":true,".write":true},"some":{".read":"auth.uid === 'svc'"},"another":{".read":"auth.uid === 'svc'",".write":"auth.uid === 'svc'"}}}"#
let pyRules = #"{"rules":{"p":{"protected":{"$uid":{".read":"auth != null",".write":"$uid === auth.uid"}},"admin":{".read":"false",".write":"false"},"public":{".read":"true"}}}}"#
let javaRules = #"{"rules":{"users":{".read":true,".write":true,"$u":{".validate":"newData.hasChildren(['name','age'])","name":{".validate":"newData.isString() == true"},"age":{".validate":"newData.isNumber() && newData.val() > 13"}}}}}"#
let multiRules = #"{"rules":{"g":{"$g":{"m":{"$u":{".write":"newData.parent().parent().parent().parent().child('u/'+$u+'/g/'+$g).exists()"}}}},"u":{"$u":{"g":{"$g":{".write":"newData.parent().parent().parent().parent().child('g/'+$g+'/m/'+$u).exists()"}}}}}}"#
let wRules = #"{"rules":{"w":{".write":true,"title":{".validate":true},"color":{".validate":true},"$other":{".validate":false}}}}"#
let basketRules = #"{"rules":{"baskets":{".read":"auth.uid != null && query.orderByChild === 'owner' && query.equalTo === auth.uid",".indexOn":"owner"}}}"#
let oneVal = #"{"valid_colors":{"blue":true}}"#
let withWidget = #"{"valid_colors":{"blue":true},"widget":{"size":1,"color":"blue"}}"#

func rootRead(_ e: String) -> String { #"{"rules":{".read":"# + quoteJSON(e) + "}}" }
func quoteJSON(_ s: String) -> String {
    var out: [UInt8] = []
    JSONWriter.appendString(s, to: &out)
    return String(decoding: out, as: UTF8.self)
}

let vectors: [Vector] = [
    Vector(n: 1, rules: #"{"rules":{"foo":{".read":"data.child('baz').val() === true","bar":{".read":false}}}}"#, who: .anonymous, data: #"{"foo":{"baz":true,"bar":1}}"#, method: "GET", target: "/foo/bar.json", expected: 200),
    Vector(n: 2, rules: #"{"rules":{"foo":{".read":"data.child('baz').val() === true","bar":{".read":false}}}}"#, who: .anonymous, data: #"{"foo":{"baz":false,"bar":1}}"#, method: "GET", target: "/foo/bar.json", expected: 401),
    Vector(n: 3, rules: #"{"rules":{"records":{"r1":{".read":true},"r2":{".read":false}}}}"#, who: .anonymous, data: #"{"records":{"r1":1,"r2":2}}"#, method: "GET", target: "/records.json", expected: 401),
    Vector(n: 4, rules: #"{"rules":{"records":{"r1":{".read":true},"r2":{".read":false}}}}"#, who: .anonymous, data: #"{"records":{"r1":1,"r2":2}}"#, method: "GET", target: "/records/r1.json", expected: 200),
    Vector(n: 5, rules: #"{"rules":{"rooms":{"$room":{"topic":{".write":"$room.contains('public')"}}}}}"#, who: .anonymous, data: "{}", method: "PUT", target: "/rooms/public-9/topic.json", body: #""x""#, expected: 200),
    Vector(n: 6, rules: #"{"rules":{"rooms":{"$room":{"topic":{".write":"$room.contains('public')"}}}}}"#, who: .anonymous, data: "{}", method: "PUT", target: "/rooms/team/topic.json", body: #""x""#, expected: 401),
    Vector(n: 7, rules: #"{"rules":{"users":{"$uid":{".write":"$uid === auth.uid"}}}}"#, who: .user("alice"), data: "{}", method: "PUT", target: "/users/alice/name.json", body: #""A""#, expected: 200),
    Vector(n: 8, rules: #"{"rules":{"users":{"$uid":{".write":"$uid === auth.uid"}}}}"#, who: .user("alice"), data: "{}", method: "PUT", target: "/users/bob/name.json", body: #""A""#, expected: 401),
    Vector(n: 9, rules: wRules, who: .anonymous, data: "{}", method: "PUT", target: "/w.json", body: #"{"title":"t"}"#, expected: 200),
    Vector(n: 10, rules: wRules, who: .anonymous, data: "{}", method: "PUT", target: "/w.json", body: #"{"title":"t","size":3}"#, expected: 401),
    Vector(n: 11, rules: wRules, who: .anonymous, data: #"{"w":{"title":"t","size":3}}"#, method: "DELETE", target: "/w/size.json", expected: 200),
    Vector(n: 12, rules: widgetRules, who: .anonymous, data: oneVal, method: "PUT", target: "/widget.json", body: #""foo""#, expected: 401),
    Vector(n: 13, rules: widgetRules, who: .anonymous, data: oneVal, method: "PUT", target: "/widget.json", body: #"{"size":22}"#, expected: 401),
    Vector(n: 14, rules: widgetRules, who: .anonymous, data: oneVal, method: "PUT", target: "/widget.json", body: #"{"size":"foo","color":"red"}"#, expected: 401),
    Vector(n: 15, rules: widgetRules, who: .anonymous, data: oneVal, method: "PUT", target: "/widget.json", body: #"{"size":21,"color":"blue"}"#, expected: 200),
    Vector(n: 16, rules: widgetRules, who: .anonymous, data: withWidget, method: "PUT", target: "/widget/size.json", body: "99", expected: 200),
    Vector(n: 17, rules: widgetRules, who: .anonymous, data: oneVal, method: "PUT", target: "/widget/size.json", body: "99", expected: 401),
    Vector(n: 18, rules: widgetRules, who: .anonymous, data: withWidget, method: "DELETE", target: "/widget.json", expected: 200),
    Vector(n: 19, rules: #"{"rules":{"x":{".write":"!data.exists() || !newData.exists()"}}}"#, who: .anonymous, data: "{}", method: "PUT", target: "/x.json", body: "1", expected: 200),
    Vector(n: 20, rules: #"{"rules":{"x":{".write":"!data.exists() || !newData.exists()"}}}"#, who: .anonymous, data: #"{"x":1}"#, method: "DELETE", target: "/x.json", expected: 200),
    Vector(n: 21, rules: #"{"rules":{"x":{".write":"!data.exists() || !newData.exists()"}}}"#, who: .anonymous, data: #"{"x":1}"#, method: "PUT", target: "/x.json", body: "2", expected: 401),
    Vector(n: 22, rules: basketRules, who: .user("alice"), data: #"{"baskets":{"b1":{"owner":"alice"}}}"#, method: "GET", target: "/baskets.json?orderBy=%22owner%22&equalTo=%22alice%22", expected: 200),
    Vector(n: 23, rules: basketRules, who: .user("alice"), data: #"{"baskets":{"b1":{"owner":"alice"}}}"#, method: "GET", target: "/baskets.json", expected: 401),
    Vector(n: 24, rules: #"{"rules":{"m":{".read":"query.orderByKey && query.limitToFirst <= 1000"}}}"#, who: .anonymous, data: #"{"m":{"a":1}}"#, method: "GET", target: "/m.json?orderBy=%22$key%22&limitToFirst=1001", expected: 401),
    Vector(n: 25, rules: #"{"rules":{"m":{".read":"query.orderByKey && query.limitToFirst <= 1000"}}}"#, who: .anonymous, data: #"{"m":{"a":1}}"#, method: "GET", target: "/m.json", expected: 401),
    Vector(n: 26, rules: #"{"rules":{".read":true,"dinos":{".indexOn":["height","length"]}}}"#, who: .anonymous, data: #"{"dinos":{"a":{"height":2}}}"#, method: "GET", target: "/dinos.json?orderBy=%22height%22", expected: 200),
    Vector(n: 27, rules: #"{"rules":{".read":true,"dinos":{".indexOn":["height","length"]}}}"#, who: .anonymous, data: #"{"dinos":{"a":{"height":2}}}"#, method: "GET", target: "/dinos.json?orderBy=%22weight%22", expected: 400),
    Vector(n: 28, rules: #"{"rules":{".read":true,"dinos":{".indexOn":["height","length"]}}}"#, who: .anonymous, data: #"{"dinos":{"a":{"height":2}}}"#, method: "GET", target: "/dinos.json?orderBy=%22$key%22&limitToFirst=1", expected: 200),
    Vector(n: 29, rules: svcRules, who: .override(#"{"uid":"svc"}"#), data: "{}", method: "PUT", target: "/some.json", body: "1", expected: 401),
    Vector(n: 30, rules: svcRules, who: .override(#"{"uid":"svc"}"#), data: #"{"some":1}"#, method: "GET", target: "/some.json", expected: 200),
    Vector(n: 31, rules: svcRules, who: .override(#"{"uid":"svc"}"#), data: "{}", method: "PUT", target: "/another.json", body: "1", expected: 200),
    Vector(n: 32, rules: pyRules, who: .override(#"{"uid":"user1"}"#), data: #"{"p":{"protected":{"user2":"t"}}}"#, method: "GET", target: "/p/protected/user2.json", expected: 200),
    Vector(n: 33, rules: pyRules, who: .override(#"{"uid":"user1"}"#), data: #"{"p":{"protected":{"user2":"t"}}}"#, method: "PUT", target: "/p/protected/user2.json", body: #""t2""#, expected: 401),
    Vector(n: 34, rules: pyRules, who: .override(#"{"uid":"user1"}"#), data: #"{"p":{"protected":{"user2":"t"}}}"#, method: "GET", target: "/p/protected.json?orderBy=%22$key%22&limitToFirst=2", expected: 401),
    Vector(n: 35, rules: pyRules, who: .override("null"), data: #"{"p":{"public":"t","protected":{"user1":"t"}}}"#, method: "GET", target: "/p/public.json", expected: 200),
    Vector(n: 36, rules: pyRules, who: .override("null"), data: #"{"p":{"public":"t","protected":{"user1":"t"}}}"#, method: "GET", target: "/p/protected/user1.json", expected: 401),
    Vector(n: 37, rules: pyRules, who: .admin, data: #"{"p":{"public":"t","protected":{"user1":"t"}}}"#, method: "PUT", target: "/p/admin.json", body: #""x""#, expected: 200),
    Vector(n: 38, rules: javaRules, who: .override(#"{"uid":"w"}"#), data: "{}", method: "PUT", target: "/users/fred.json", body: #"{"name":"Fred","age":19}"#, expected: 200),
    Vector(n: 39, rules: javaRules, who: .override(#"{"uid":"w"}"#), data: #"{"users":{"fred":{"name":"Fred","age":19}}}"#, method: "PUT", target: "/users/fred/age.json", body: "12", expected: 401),
    Vector(n: 40, rules: javaRules, who: .override(#"{"uid":"w"}"#), data: #"{"users":{"fred":{"name":"Fred","age":19}}}"#, method: "PATCH", target: "/users/fred.json", body: #"{"age":12}"#, expected: 401),
    Vector(n: 41, rules: #"{"rules":{"ro":{".read":true}}}"#, who: .override(#"{"uid":"w"}"#), data: "{}", method: "PUT", target: "/ro.json", body: #""v""#, expected: 401),
    Vector(n: 42, rules: #"{"rules":{"rev":{".write":true,".read":"data.child('public').val() == true && data.child('hidden').val() != true"}}}"#, who: .override(#"{"uid":"w"}"#), data: #"{"rev":{"public":false,"data":2}}"#, method: "GET", target: "/rev/data.json", expected: 401),
    Vector(n: 43, rules: rootRead("auth.uid !== 'eviluser'"), who: .anonymous, data: "{}", method: "GET", target: "/.json", expected: 200),
    Vector(n: 44, rules: rootRead("root.child('users/' + auth.uid).exists() || true"), who: .anonymous, data: "{}", method: "GET", target: "/.json", expected: 401),
    Vector(n: 45, rules: rootRead("auth.foo.baz == null"), who: .anonymous, data: "{}", method: "GET", target: "/.json", expected: 200),
    Vector(n: 46, rules: rootRead("(1/0 + '') == 'NaN'"), who: .anonymous, data: "{}", method: "GET", target: "/.json", expected: 200),
    Vector(n: 47, rules: rootRead("root.val().matches(/^foo$/)"), who: .anonymous, data: #""foo""#, method: "GET", target: "/.json", expected: 200),
    Vector(n: 48, rules: rootRead("true"), who: .admin, data: "{}", method: "PUT", target: "/.settings/rules.json", body: rootRead("root.val().matches(/(^foo$|bar)/)"), expected: 400),
    Vector(n: 49, rules: rootRead("true"), who: .admin, data: "{}", method: "PUT", target: "/.settings/rules.json", body: rootRead("$color == 'red'"), expected: 400),
    Vector(n: 50, rules: rootRead("query.orderByKey == true && query.orderByValue == false"), who: .anonymous, data: "{}", method: "GET", target: "/.json", expected: 200),
    Vector(n: 51, rules: #"{"rules":{"docs":{"$u":{"create":{".write":"data.val() == null"}}}}}"#, who: .user("m"), data: #"{"docs":{"m":{"create":"c"}}}"#, method: "PUT", target: "/docs/m/create.json", body: #""u""#, expected: 401),
    Vector(n: 52, rules: #"{"rules":{"docs":{"$u":{"delete":{".write":"data.val() != null && newData.val() == null"}}}}}"#, who: .user("m"), data: #"{"docs":{"m":{"delete":"c"}}}"#, method: "DELETE", target: "/docs/m/delete.json", expected: 200),
    Vector(n: 53, rules: #"{"rules":{"posts":{"$id":{".write":true,"created":{".validate":"newData.val() == (data.val() == null ? now : data.val())"}}}}}"#, who: .anonymous, data: "{}", method: "POST", target: "/posts.json", body: #"{"created":{".sv":"timestamp"}}"#, expected: 200),
    Vector(n: 54, rules: #"{"rules":{"a":{"b":{".write":true}}}}"#, who: .anonymous, data: "{}", method: "PUT", target: "/a.json", body: #"{"b":1}"#, expected: 401),
    Vector(n: 55, rules: rootRead("false"), who: .admin, data: #"{"x":1}"#, method: "GET", target: "/x.json", expected: 200),
    Vector(n: 56, rules: rootRead("false"), who: .bearer("xyz"), data: #"{"x":1}"#, method: "GET", target: "/x.json", expected: 200),
    Vector(n: 57, rules: rootRead("auth.uid == 'alice' && auth.token.firebase.sign_in_provider == 'custom'"), who: .user("alice"), data: "{}", method: "GET", target: "/.json", expected: 200),
    Vector(n: 58, rules: multiRules, who: .anonymous, data: "{}", method: "PATCH", target: "/.json", body: #"{"g/x/m/al":true,"u/al/g/x":true}"#, expected: 200),
    Vector(n: 59, rules: multiRules, who: .anonymous, data: "{}", method: "PUT", target: "/g/x/m/al.json", body: "true", expected: 401),
]

/// A handler with `rules` loaded (strict indexes on) and `data` stored.
func rulesHarness(_ rules: String, data: String, strictIndexes: Bool = true) throws -> Harness {
    let h = Harness()
    h.handler.security.rules = try RuleSet(rules)
    h.handler.security.strictIndexes = strictIndexes
    if data != "{}" {
        let put = h.send("PUT", "/.json", data, headers: [("Authorization", "Bearer owner")])
        #expect(put.status == 200, "seeding: \(put.text)")
    }
    return h
}

extension Harness {
    /// Sends as `who`; the credential goes where Firebase clients put it.
    func send(_ who: Who, _ method: String, _ target: String, _ body: String? = nil,
              headers: [(String, String)] = []) -> Reply {
        var target = target
        var h = headers
        let join = target.contains("?") ? "&" : "?"
        switch who {
        case .anonymous: break
        case .user(let uid): target += join + "auth=" + mockToken(uid)
        case .admin: h.append(("Authorization", "Bearer owner"))
        case .override(let o):
            h.append(("Authorization", "Bearer owner"))
            target += join + "auth_variable_override=" + percent(o)
        case .bearer(let b): h.append(("Authorization", "Bearer " + b))
        }
        return send(method, target, body, headers: h)
    }
}

@Suite("Rules over REST: the test vectors")
struct RulesVectorTests {
    @Test("each vector", arguments: vectors)
    func vector(_ v: Vector) throws {
        let h = try rulesHarness(v.rules, data: v.data)
        let before = h.stored("/")
        let reply = h.send(v.who, v.method, v.target, v.body)
        #expect(reply.status == v.expected, "\(v): \(reply.text)")
        switch reply.status {
        case 401:
            #expect(reply.value.child("error").same(as: .string("Permission denied")), "\(v): \(reply.text)")
            // A denied write changes nothing.
            #expect(h.stored("/") == before)
        case 400 where v.n == 27:
            #expect(reply.value.child("error").same(as: .string("Index not defined, add \".indexOn\": \"weight\", for path \"/dinos\", to the rules")))
        case 400 where v.n == 49:
            #expect(reply.text.contains("Unknown variable '$color'."))
        default: break
        }
    }

    @Test("a write allowed by rules stores the value; a timestamp equals the rules' now")
    func allowedWritesStore() throws {
        let h = try rulesHarness(vectors[52].rules, data: "{}")
        let r = h.send(.anonymous, "POST", "/posts.json", #"{"created":{".sv":"timestamp"}}"#)
        #expect(r.status == 200)
        guard case .string(let key) = r.value.child("name") else { Issue.record("no name: \(r.text)"); return }
        guard case .int(let t) = node(h.stored("/posts/\(key)/created")) else { Issue.record("no timestamp"); return }
        #expect(t > 1_600_000_000_000)
        let m = try rulesHarness(multiRules, data: "{}")
        #expect(m.send(.anonymous, "PATCH", "/.json", #"{"g/x/m/al":true,"u/al/g/x":true}"#).status == 200)
        #expect(m.stored("/") == #"{"g":{"x":{"m":{"al":true}}},"u":{"al":{"g":{"x":true}}}}"#)
    }
}
