import RTDBCore

/// A message the server sends unasked, `{"t":"d","d":{"a":ACTION,"b":BODY}}`.
/// Paths go out as production writes them: no leading slash.
public enum RealtimePush: Sendable {
    /// `d`: the value at `path` is now `value` (null: deleted); `tag` names a query listen.
    case put(path: Path, value: Node, tag: Int64?)
    /// `m`: each child path below `path` is now its value (null: deleted).
    case merge(path: Path, children: [(path: Path, value: Node)], tag: Int64?)
    /// `c`: the listen at `path` is revoked (rules); `queryObject` names a query listen's query.
    case listenRevoked(path: Path, queryObject: JSONText?)
    /// `ac`: the credential is revoked or expired.
    case authRevoked(status: String?, reason: String?)
    /// `apc`: the App Check token is revoked.
    case appCheckRevoked(status: String?, reason: String?)
    /// `sd`: a security debug message.
    case securityDebug(String?)
    /// Any other action (`rm`, newer ones), with its body as sent: clients ignore it.
    case other(action: String, body: JSONText)

    public var action: String {
        switch self {
        case .put: return "d"
        case .merge: return "m"
        case .listenRevoked: return "c"
        case .authRevoked: return "ac"
        case .appCheckRevoked: return "apc"
        case .securityDebug: return "sd"
        case .other(let a, _): return a
        }
    }

    /// The push that tells a listen at `location` about one stream event. A one-path patch is a
    /// set there (an onDisconnect set, run as a merge at the root,
    /// reaches a listen above it as a `d` at its own path).
    public init(_ event: StreamEvent, at location: Path, tag: Int64?) {
        switch event {
        case .put(let rel, let value):
            self = .put(path: location.appending(rel), value: value, tag: tag)
        case .patch(let rel, let entries) where entries.count == 1:
            self = .put(path: location.appending(rel).appending(entries[0].path), value: entries[0].value, tag: tag)
        case .patch(let rel, let entries):
            self = .merge(path: location.appending(rel), children: entries, tag: tag)
        }
    }

    func write(_ w: inout RealtimeJSONWriter) {
        w.raw(#"{"t":"d","d":{"a":"#)
        w.string(action)
        w.raw(#","b":"#)
        switch self {
        case .put(let path, _, let tag), .merge(let path, _, let tag):
            w.raw(#"{"p":"#)
            w.pushPath(path)
            w.raw(#","d":"#)
            if case .put(_, let value, _) = self { w.value(value) }
            if case .merge(_, let children, _) = self { w.children(children) }
            if let tag { w.raw(#","t":"#); w.int(tag) }
            w.raw("}")
        case .listenRevoked(let path, let query):
            w.raw(#"{"p":"#)
            w.pushPath(path)
            // The JS SDK rebuilds the query id from an array of query objects.
            if let query { w.raw(#","q":["#); w.text(query); w.raw("]") }
            w.raw("}")
        case .authRevoked(let status, let reason), .appCheckRevoked(let status, let reason):
            w.raw(#"{"s":"#)
            if let status { w.string(status) } else { w.raw("null") }
            w.raw(#","d":"#)
            if let reason { w.string(reason) } else { w.raw("null") }
            w.raw("}")
        case .securityDebug(let message):
            w.raw(#"{"msg":"#)
            if let message { w.string(message) } else { w.raw("null") }
            w.raw("}")
        case .other(_, let body):
            w.text(body)
        }
        w.raw("}}")
    }

    static func decode(_ d: RealtimeFields, source: [UInt8]) throws(RealtimeDecodingError) -> RealtimePush {
        let action = try RealtimeFields(d.value, d.name, .envelope).string("a")
        let m = RealtimeFields(d.value, d.name, .push(action))
        let b = try m.field("b")
        switch action {
        case "d":
            try b.object()
            return .put(path: try b.path("p"), value: try b.field("d").node(in: source), tag: try b.optionalInt("t"))
        case "m":
            try b.object()
            let path = try b.path("p")
            let d = try b.field("d")
            guard let members = d.value.members else { throw m.fail(.wrongType(d.name, expected: "an object")) }
            var children: [(path: Path, value: Node)] = []
            for member in members {
                let child: Path
                do { child = try Path(member.key) } catch {
                    throw m.fail(.invalidData(d.name, (error as? RTDBError) ?? RTDBError(.invalidPath, "\(error)")))
                }
                children.append((child, try RealtimeFields(member.value, d.member(member.key), .push(action)).node(in: source)))
            }
            return .merge(path: path, children: children, tag: try b.optionalInt("t"))
        case "c":
            try b.object()
            var query: JSONText? = nil
            if let q = b.optional("q") {
                guard let items = q.value.items, items.count == 1 else { throw m.fail(.wrongType(q.name, expected: "an array of one query object")) }
                query = JSONText(compacting: items[0])
            }
            return .listenRevoked(path: try b.path("p"), queryObject: query)
        case "ac", "apc":
            try b.object()
            let status = try b.optionalString("s"), reason = try b.optionalString("d")
            return action == "ac" ? .authRevoked(status: status, reason: reason) : .appCheckRevoked(status: status, reason: reason)
        case "sd":
            try b.object()
            return .securityDebug(try b.optionalString("msg"))
        default:
            return .other(action: action, body: JSONText(b.value, in: source))
        }
    }
}
