import RTDBCore

/// One message of Firebase's realtime protocol, both directions:
/// `{"t":"c","d":…}` control messages, and `{"t":"d","d":…}` data messages, which are requests
/// (`r` and `a`), responses (`r` without `a`) or pushes (`a` without `r`). Server and client
/// both build and read every message through this type; nothing else writes or picks apart the
/// protocol's JSON. (Splitting long messages over frames, and the keep-alive frame `0`, are
/// `RealtimeFraming`'s.)
///
/// `encode` writes the bytes Firebase's servers and SDKs write, member for member (tests and
/// real clients compare them): paths in requests with a leading slash (`/a/b`, the root `/`),
/// as the JS SDK sends them; paths in pushes without (`a/b`, the root ``), as production does.
///
/// `decode` is strict about the envelope and about every member a peer acts on: a member that
/// is missing or of the wrong JSON type is an error naming it. It is lenient only where the
/// protocol asks for it: unknown control types and unknown actions decode (as `.other` and
/// `.raw`), since both ends must ignore or refuse them, not drop the connection. It is bounded
/// by the message it is given (the framing's limit) and by `RawJSON`'s nesting limit.
public enum RealtimeMessage: Sendable {
    case control(RealtimeControl)
    case request(RealtimeRequest)
    case response(RealtimeResponse)
    case push(RealtimePush)

    public func encode() -> [UInt8] {
        var w = RealtimeJSONWriter()
        switch self {
        case .control(let c): c.write(&w)
        case .request(let r): r.write(&w)
        case .response(let r): r.write(&w)
        case .push(let p): p.write(&w)
        }
        return w.out
    }

    public static func decode(_ bytes: [UInt8]) throws(RealtimeDecodingError) -> RealtimeMessage {
        let root: RawJSON
        do { root = try RawJSON.parse(bytes) } catch let e as RawJSON.SyntaxError {
            throw RealtimeDecodingError(.envelope, .notJSON(offset: e.offset, message: e.message))
        } catch {
            throw RealtimeDecodingError(.envelope, .notJSON(offset: 0, message: "\(error)"))
        }
        let m = RealtimeFields(root, "", .envelope)
        try m.object()
        let t = try m.string("t")
        let d = try m.field("d")
        switch t {
        case "c":
            return .control(try RealtimeControl.decode(d))
        case "d":
            try d.object()
            if d.has("r") {
                let r = try d.int("r")
                if d.has("a") { return .request(try RealtimeRequest.decode(r: r, d, source: bytes)) }
                return .response(try RealtimeResponse.decode(r: r, d, source: bytes))
            }
            if d.has("a") { return .push(try RealtimePush.decode(d, source: bytes)) }
            throw RealtimeDecodingError(.envelope, .missing("d.a"))
        default:
            throw RealtimeDecodingError(.envelope, .unknownType(t))
        }
    }
}

/// Why a realtime message could not be decoded: what was being read and what was wrong with it.
public struct RealtimeDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Context: Equatable, Sendable {
        /// The envelope: `t`, `d`, and whether `d` is a request, response or push.
        case envelope
        /// A control message of this type (`h`, `r`, …).
        case control(String)
        /// A request with this action.
        case request(String)
        case response
        /// A push with this action.
        case push(String)
    }

    public enum Reason: Equatable, Sendable {
        /// Not JSON text: where the parser stopped and why.
        case notJSON(offset: Int, message: String)
        /// A member the message needs is absent (`d.b.s`, …).
        case missing(String)
        /// A member has the wrong JSON type.
        case wrongType(String, expected: String)
        /// `t` is neither `c` nor `d`.
        case unknownType(String)
        /// The body of request `r` does not hold what its action needs. The envelope was fine:
        /// the request is answered with this error rather than the connection dropped.
        case invalidBody(r: Int64, RTDBError)
        /// A member that carries database data (or a path) is not valid.
        case invalidData(String, RTDBError)
    }

    public var context: Context
    public var reason: Reason

    public init(_ context: Context, _ reason: Reason) {
        self.context = context
        self.reason = reason
    }

    /// A request whose envelope was readable but whose body was not: its number, action and
    /// the error to answer it with.
    public var refusedRequest: (r: Int64, action: String, error: RTDBError)? {
        guard case .request(let action) = context, case .invalidBody(let r, let e) = reason else { return nil }
        return (r, action, e)
    }

    public var description: String {
        let what: String
        switch context {
        case .envelope: what = "a realtime message"
        case .control(let t): what = "control message \(t)"
        case .request(let a): what = "request \(a)"
        case .response: what = "a response"
        case .push(let a): what = "push \(a)"
        }
        switch reason {
        case .notJSON(let offset, let message): return "\(what) is not JSON (at byte \(offset): \(message))"
        case .missing(let m): return "\(what) lacks \(m)"
        case .wrongType(let m, let expected): return "\(what): \(m) must be \(expected)"
        case .unknownType(let t): return "\(what) has an unknown type \(Limits.quote(t))"
        case .invalidBody(let r, let e): return "\(what) \(r): \(e.message)"
        case .invalidData(let m, let e): return "\(what): \(m): \(e.message)"
        }
    }
}

/// Reads the members of one JSON object of a message, naming each by its place in the message
/// (`d.b.p`) in the errors it throws.
struct RealtimeFields {
    let value: RawJSON
    let name: String
    let context: RealtimeDecodingError.Context

    init(_ value: RawJSON, _ name: String, _ context: RealtimeDecodingError.Context) {
        self.value = value
        self.name = name
        self.context = context
    }

    func member(_ key: String) -> String { name.isEmpty ? key : name + "." + key }

    func fail(_ reason: RealtimeDecodingError.Reason) -> RealtimeDecodingError { RealtimeDecodingError(context, reason) }

    func object() throws(RealtimeDecodingError) {
        guard value.members != nil else { throw fail(.wrongType(name.isEmpty ? "the message" : name, expected: "an object")) }
    }

    func has(_ key: String) -> Bool { value[key] != nil }

    func field(_ key: String) throws(RealtimeDecodingError) -> RealtimeFields {
        guard let v = value[key] else { throw fail(.missing(member(key))) }
        return RealtimeFields(v, member(key), context)
    }

    /// The member when present and not null.
    func optional(_ key: String) -> RealtimeFields? {
        guard let v = value[key], !v.isNull else { return nil }
        return RealtimeFields(v, member(key), context)
    }

    func string(_ key: String) throws(RealtimeDecodingError) -> String {
        try field(key).asString()
    }

    func optionalString(_ key: String) throws(RealtimeDecodingError) -> String? {
        try optional(key)?.asString()
    }

    func int(_ key: String) throws(RealtimeDecodingError) -> Int64 {
        try field(key).asInt()
    }

    func optionalInt(_ key: String) throws(RealtimeDecodingError) -> Int64? {
        try optional(key)?.asInt()
    }

    func asString() throws(RealtimeDecodingError) -> String {
        guard let s = value.string else { throw fail(.wrongType(name, expected: "a string")) }
        return s
    }

    func asInt() throws(RealtimeDecodingError) -> Int64 {
        guard let n = value.int else { throw fail(.wrongType(name, expected: "an integer")) }
        return n
    }

    /// A path, as either end writes it (`/a/b`, `a/b`, `/`, ``).
    func path(_ key: String) throws(RealtimeDecodingError) -> Path {
        let text = try string(key)
        do { return try Path(text) } catch let e as RTDBError {
            throw fail(.invalidData(member(key), e))
        } catch {
            throw fail(.invalidData(member(key), RTDBError(.invalidPath, "\(error)")))
        }
    }

    /// This member read as database data.
    func node(in source: [UInt8]) throws(RealtimeDecodingError) -> Node {
        do { return try RealtimeFields.node(value, source) } catch { throw fail(.invalidData(name, error)) }
    }

    /// A value read as database data: `null` is `.null`, anything else by JSONReader's rules.
    static func node(_ v: RawJSON, _ source: [UInt8]) throws(RTDBError) -> Node {
        if v.isNull { return .null }
        do { return try v.node(in: source) } catch let e as RTDBError { throw e } catch {
            throw RTDBError(.invalidData, "\(error)")
        }
    }
}

/// Writes a message's JSON: literal punctuation and member names, then JSON-escaped strings,
/// integers, database values and exact JSON texts.
struct RealtimeJSONWriter {
    var out: [UInt8] = []

    init() { out.reserveCapacity(128) }

    mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    mutating func string(_ s: String) { JSONWriter.appendString(s, to: &out) }

    mutating func int(_ n: Int64) { out.append(contentsOf: String(n).utf8) }

    mutating func value(_ node: Node) { JSONWriter(export: true).write(node, into: &out) }

    mutating func text(_ t: JSONText) { out.append(contentsOf: t.bytes) }

    /// A path as a client sends it: with a leading slash, the root as `/`.
    mutating func requestPath(_ p: Path) { string(p.description) }

    /// A path as a server sends it: no leading slash, the root as the empty string.
    mutating func pushPath(_ p: Path) { string(p.unrooted) }

    /// `{"k1":v1,…}` with relative paths as keys (a merge's children), nulls kept.
    mutating func children(_ entries: [(path: Path, value: Node)]) {
        out.append(UInt8(ascii: "{"))
        for (i, e) in entries.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            string(e.path.unrooted)
            out.append(UInt8(ascii: ":"))
            value(e.value)
        }
        out.append(UInt8(ascii: "}"))
    }
}
