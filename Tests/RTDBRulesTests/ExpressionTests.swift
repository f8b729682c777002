import Testing
import RTDBCore
@testable import RTDBRules

/// One expression as a root `.read` rule: is it valid, and what does it give?
enum Outcome: Equatable, CustomStringConvertible {
    case invalid
    case allow
    case deny

    var description: String {
        switch self {
        case .invalid: return "invalid"
        case .allow: return "allow"
        case .deny: return "deny"
        }
    }
}

let bob = try! JSONReader.parse(#"{"uid":"custom:bob","provider":"custom","someBool":true,"someInt":1,"someString":"one","foo":{"bar":true}}"#)

func run(_ expr: String, auth: Node? = nil, data: String = "null", path: String = "/", wildcard: String? = nil) -> Outcome {
    var doc = "{\"rules\":"
    var rule: String = "{\".read\":" + quote(expr) + "}"
    if let wildcard {
        // `$name` bound at the first path segment.
        rule = "{\"\(wildcard)\":" + rule + "}"
    }
    doc += rule + "}"
    guard let rules = try? RuleSet(doc) else { return .invalid }
    let tree = (try? JSONReader.parse(data)) ?? .null
    let rd = RuleData(read: { tree.child(at: $0) })
    let principal: Principal = auth.map { .user(auth: $0) } ?? .anonymous
    let p = (try? Path(path)) ?? .root
    return rules.canRead(p, principal: principal, now: 1_700_000_000_000, data: rd) ? .allow : .deny
}

func quote(_ s: String) -> String {
    var out = "\""
    for c in s.unicodeScalars {
        switch c {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        default: out.unicodeScalars.append(c)
        }
    }
    return out + "\""
}

struct Row: CustomStringConvertible {
    var expr: String
    var auth: Node?
    var data: String = "null"
    var expected: Outcome
    var description: String { expr }
}

/// Expressions whose validity and result are known from live Firebase runs:
/// a runtime error counts as deny.
let rows: [Row] = [
    Row(expr: "1 < 2", expected: .allow),
    Row(expr: "true", expected: .allow),
    Row(expr: "'foo'.contains('o')", expected: .allow),
    Row(expr: "auth !== null", expected: .deny),
    Row(expr: "auth.uid !== 'eviluser'", expected: .allow),
    Row(expr: "auth.someInt < 5", auth: bob, expected: .allow),
    Row(expr: "auth.provider === 'custom'", auth: bob, expected: .allow),
    Row(expr: "auth.contains('75')", expected: .deny),
    Row(expr: "auth.notfound.contains('75')", auth: bob, expected: .deny),
    Row(expr: "auth.not.found.length > 0", auth: bob, expected: .deny),
    Row(expr: "auth.isTernary === true ? root.child('x').exists() : true", auth: bob, expected: .allow),
    Row(expr: "root.isBoolean()", expected: .deny),
    Row(expr: "root.hasChildren()", expected: .deny),
    Row(expr: "root.hasChildren(['foo', 'bar', 'baz'])", expected: .deny),
    Row(expr: "root.hasChildren([auth.uid])", expected: .deny),
    Row(expr: "root.child('foo').val().matches(/bar/)", data: #"{"foo":"bar"}"#, expected: .allow),
    Row(expr: "root.child('foo').val().matches(/BAR/i)", data: #"{"foo":"bar"}"#, expected: .allow),
    Row(expr: "root.child('foo').val().matches(/bar/ig)", expected: .invalid),
    Row(expr: "root.child('users/' + auth.uid).exists()", expected: .deny),
    Row(expr: "root.child('users/' + auth.uid).exists() || true", expected: .deny),
    Row(expr: "true || root.child('users/' + auth.uid).exists()", expected: .allow),
    Row(expr: "var foo = 8", expected: .invalid),
    Row(expr: "root = 5", expected: .invalid),
    Row(expr: "auth.uid === '5'; auth.id === 5", expected: .invalid),
    Row(expr: "7", expected: .invalid),
    Row(expr: "'foo'", expected: .invalid),
    Row(expr: "auth.someString === 'one' ? 7 : true", auth: bob, expected: .invalid),
    Row(expr: "auth.foo.contains(7)", expected: .invalid),
    Row(expr: "skies === 'blue'", expected: .invalid),
    Row(expr: "root.hasChildren('foo', 'bar')", expected: .invalid),
    Row(expr: "root.hasChildren(['foo', 7])", expected: .invalid),
    Row(expr: "root.hasChildren([])", expected: .invalid),
    Row(expr: "root.child('str').val().matches('/foo/')", expected: .invalid),
    Row(expr: "auth.foo.notFound() == false", expected: .invalid),
    Row(expr: "root.val().notFound == false", expected: .invalid),
    Row(expr: "root.child('foo') != null", expected: .invalid),
    Row(expr: "root.val() > true", expected: .invalid),
    Row(expr: "root.val() <= true", expected: .invalid),
    Row(expr: "newData.isArray()", expected: .invalid),
    Row(expr: "newData.exists()", expected: .invalid),   // reads have no newData
    Row(expr: "query.foo == true", expected: .invalid),
    Row(expr: "!newData", expected: .invalid),
    Row(expr: "!root.val()", expected: .invalid),
    Row(expr: "root.val() == true", data: "true", expected: .allow),
    Row(expr: "(2**2) == 4", expected: .invalid),
    Row(expr: "auth.dreams.length > 1", expected: .deny),
    Row(expr: "!(auth.dreams.length > 1)", expected: .deny),
    Row(expr: "root.val() == 'bar'", data: #""bar""#, expected: .allow),
    Row(expr: "root.val().contains('ba')", data: #""bar""#, expected: .allow),
    Row(expr: "root.val().matches(/^ba/)", data: #""bar""#, expected: .allow),
    Row(expr: "root.val().matches(/^wa/)", data: #""bar""#, expected: .deny),
    Row(expr: "root.val().matches(/^foo$/)", data: #""foo""#, expected: .allow),
    Row(expr: "root.val().matches(/(^foo$|bar)/)", expected: .invalid),
    Row(expr: "root.val().matches(/^(a|)$/)", expected: .invalid),
    Row(expr: "auth.foo['bar'] == true", auth: bob, expected: .allow),
    Row(expr: "auth.foo.bar == true", auth: bob, expected: .allow),
    Row(expr: "auth.foo.baz == null", expected: .allow),
    Row(expr: "root['exists']()", data: "1", expected: .allow),
    Row(expr: "root['ex' + 'ists']()", expected: .invalid),
    Row(expr: "root.child('foo').child(auth.foo).exists()", data: #"{"foo":{"bar":true}}"#, expected: .deny),
    Row(expr: "'foo1'.contains(auth.someInt)", auth: bob, expected: .deny),
    Row(expr: "'foo'.replace(auth.foo, 'bar') == 'foo'", expected: .deny),
    Row(expr: "-auth.foo == -1", expected: .deny),
    Row(expr: "-auth.someString == -1", auth: bob, expected: .deny),
    Row(expr: "!(auth.foo == null)", expected: .deny),
    Row(expr: "!(auth.someString == null)", auth: bob, expected: .allow),
    Row(expr: "(auth.someInt + 1) == 2", auth: bob, expected: .allow),
    Row(expr: "(auth.someInt / 2) == 0.5", auth: bob, expected: .allow),
    Row(expr: "(1 % auth.someInt) == 1", auth: bob, expected: .deny),
    Row(expr: "(auth.someString + 'two') == 'onetwo'", auth: bob, expected: .allow),
    Row(expr: "(auth.someString + 1) == 'one1'", auth: bob, expected: .allow),
    Row(expr: "(1 + auth.someString) == 2", auth: bob, expected: .deny),
    Row(expr: "(auth.someString - 1) == 0", auth: bob, expected: .deny),
    Row(expr: "(1 + auth.someBool) == 2", auth: bob, expected: .deny),
    Row(expr: "(1/0 + '') == 'NaN'", expected: .allow),
    Row(expr: "-7 % 3 == -1", expected: .allow),
    Row(expr: "1 == 1.0 && 1 === 1", expected: .allow),
    Row(expr: "1 == '1'", expected: .deny),
    Row(expr: "null == false", expected: .deny),
    Row(expr: "'a' < 'b' && 'B' < 'a' && 10 > 9", expected: .allow),
    Row(expr: "'a' < 1", expected: .deny),
    Row(expr: "null < 1", expected: .deny),
    Row(expr: "'abcabc'.replace('b', 'x') == 'axcaxc'", expected: .allow),
    Row(expr: "'AbC'.toLowerCase() == 'abc' && 'AbC'.toUpperCase() == 'ABC'", expected: .allow),
    Row(expr: "'abc'.beginsWith('ab') && 'abc'.endsWith('bc') && !'abc'.contains('x')", expected: .allow),
    Row(expr: "'héllo'.length == 5", expected: .allow),
    Row(expr: "query.orderByKey == true && query.orderByValue == false", expected: .allow),
    Row(expr: "query.limitToFirst <= 1000", expected: .deny),
    Row(expr: "now > 1600000000000 && now < 1800000000000", expected: .allow),
    Row(expr: "root.child('a').val() != null", data: #"{"a":{"b":1}}"#, expected: .allow),
    Row(expr: "root.child('a').val() == 1", data: #"{"a":{"b":1}}"#, expected: .deny),
    Row(expr: "root.child('a').val().length > 0", data: #"{"a":{"b":1}}"#, expected: .deny),
    Row(expr: "root.child('a/b').val() == 1 && root.child('a').hasChild('b')", data: #"{"a":{"b":1}}"#, expected: .allow),
    Row(expr: "root.child('a').child('b').parent().parent().hasChildren(['a', 'a/b'])", data: #"{"a":{"b":1}}"#, expected: .allow),
    Row(expr: "root.parent() == null", expected: .invalid),
    Row(expr: "root.parent().exists()", expected: .deny),
    Row(expr: "root.child('a.b').exists() || true", expected: .deny),
    Row(expr: "root.child('a').isNumber() && !root.child('a').isString()", data: #"{"a":2.5}"#, expected: .allow),
    Row(expr: "root.child('s').isString() && root.child('b').isBoolean()", data: #"{"s":"x","b":false}"#, expected: .allow),
    Row(expr: "root.getPriority() == null", expected: .allow),
    // A priority never hides the value's type: every check sees the value beneath it.
    Row(expr: "root.child('s').isString() && !root.child('s').isNumber() && !root.child('s').isBoolean()",
        data: #"{"s":{".value":"far too long",".priority":1}}"#, expected: .allow),
    Row(expr: "root.child('s').val().length == 12 && root.child('s').val() == 'far too long'",
        data: #"{"s":{".value":"far too long",".priority":1}}"#, expected: .allow),
    Row(expr: "root.child('n').isNumber() && !root.child('n').isString() && root.child('n').val() == 5",
        data: #"{"n":{".value":5,".priority":"p"}}"#, expected: .allow),
    Row(expr: "root.child('d').isNumber() && root.child('d').val() == 2.5",
        data: #"{"d":{".value":2.5,".priority":1}}"#, expected: .allow),
    Row(expr: "root.child('b').isBoolean() && root.child('b').val() == true && !root.child('b').isNumber()",
        data: #"{"b":{".value":true,".priority":1}}"#, expected: .allow),
    Row(expr: "root.child('o').hasChildren() && root.child('o').hasChild('x') && !root.child('o').isString() && root.child('o').exists()",
        data: #"{"o":{"x":1,".priority":2}}"#, expected: .allow),
    Row(expr: "root.child('s').getPriority() == 1 && root.child('n').getPriority() == 'p' && root.child('o').getPriority() == 2",
        data: #"{"s":{".value":"x",".priority":1},"n":{".value":5,".priority":"p"},"o":{"x":1,".priority":2}}"#, expected: .allow),
    Row(expr: "root.child('s').getPriority() == null", data: #"{"s":"x"}"#, expected: .allow),
    Row(expr: "auth.token.firebase.sign_in_provider == 'custom'", auth: try! JSONReader.parse(#"{"uid":"a","token":{"firebase":{"sign_in_provider":"custom"}}}"#), expected: .allow),
    Row(expr: "true ? false : true", expected: .deny),
    Row(expr: "(true ? 'a' : 'b') == 'a'", expected: .allow),
    Row(expr: "(false ? 1 : 'b') == 'b'", expected: .allow),
    Row(expr: "'a' == 'a' &&", expected: .invalid),
    Row(expr: "auth.uid == 'x' & true", expected: .invalid),
    Row(expr: "{}", expected: .invalid),
    Row(expr: "root.val().matches(/^[a-z0-9_-]{3,16}$/)", data: #""ada_l-99""#, expected: .allow),
    Row(expr: "root.val().matches(/^[a-z0-9_-]{3,16}$/)", data: #""Ada""#, expected: .deny),
    Row(expr: "root.val().matches(/\\d+@\\w+\\.com/)", data: #""x 12@mail.com y""#, expected: .allow),
    Row(expr: "root.val().matches(/^(ab)+c?$/)", data: #""ababc""#, expected: .allow),
    Row(expr: "root.val().matches(/^[^0-9]*$/)", data: #""abc1""#, expected: .deny),
    Row(expr: "root.val().matches(/a.c/)", data: #""zabcz""#, expected: .allow),
    Row(expr: "root.val().matches(/^(a+)+$/)", data: #""aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab""#, expected: .deny),
]

@Suite("Rules expressions: validity and results")
struct ExpressionTests {
    @Test("each expression", arguments: rows)
    func expression(_ row: Row) {
        #expect(run(row.expr, auth: row.auth, data: row.data) == row.expected, "\(row.expr)")
    }

    @Test("$ variables are strings bound below their wildcard, unknown elsewhere")
    func wildcards() {
        #expect(run("$color == 'blue'", path: "/blue", wildcard: "$color") == .allow)
        #expect(run("$color == 'green'", path: "/orange", wildcard: "$color") == .deny)
        #expect(run("$color == 'red'") == .invalid)
        #expect(run("auth.foo[$bar] == true", auth: bob, path: "/bar", wildcard: "$bar") == .allow)
        #expect(run("$x.contains('pub')", path: "/public-9", wildcard: "$x") == .allow)
    }
}
