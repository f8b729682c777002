import RTDBCore

/// The query object of a realtime listen or get: `i` (index: `.key`,
/// `.value`, a child path, absent = priority), `sp`/`sn`/`sin` and `ep`/`en`/`ein` (bounds,
/// their keys and inclusiveness; the keys `[MIN_NAME]`/`[MAX_NAME]` are sentinels), `l` and `vf`
/// (`l` = limitToFirst, `r` = limitToLast).
public enum RealtimeQuery {
    public struct Invalid: Error, Sendable { public var message: String }

    static let minName = "[MIN_NAME]"
    static let maxName = "[MAX_NAME]"

    /// nil for the plain view of a location (no bounds and no limit, whatever the order).
    public static func parse(_ q: RawJSON?, source: [UInt8], priorityOrder: Query.Order = .key) throws -> Query? {
        guard let q, let members = q.members, !members.isEmpty else { return nil }
        var query = Query()
        if let i = q["i"] {
            guard let s = i.string else { throw Invalid(message: "index must be a string") }
            switch s {
            case ".key": query.order = .key
            case ".value": query.order = .value
            default:
                guard let p = try? Path(s), !p.isRoot else { throw Invalid(message: "invalid index \(Limits.cut(s))") }
                query.order = .child(p)
            }
        } else {
            query.order = priorityOrder
        }
        func bound(_ vKey: String, _ nKey: String, _ inKey: String, isStart: Bool) throws -> Query.Bound? {
            guard let v = q[vKey] else { return nil }
            let value = v.isNull ? Node.null : try v.node(in: source)
            var key: String? = nil
            var exclusive = false
            if let inc = q[inKey], case .bool(let b) = inc.kind { exclusive = !b }
            if let n = q[nKey] {
                guard let s = n.string else { throw Invalid(message: "\(nKey) must be a string") }
                switch s {
                // (v, MAX) as a start skips every child equal to v; as an end it keeps them all.
                case maxName: key = nil; exclusive = isStart
                case minName: key = nil; exclusive = !isStart
                default: key = s
                }
            }
            if case .key = query.order {
                guard case .string = value else { throw Invalid(message: "key-ordered bounds must be strings") }
                key = nil
            }
            return Query.Bound(value, key: key, exclusive: exclusive)
        }
        query.start = try bound("sp", "sn", "sin", isStart: true)
        query.end = try bound("ep", "en", "ein", isStart: false)
        if let l = q["l"] {
            guard let n = l.int, n >= 0, n <= Int64(Int32.max) else { throw Invalid(message: "invalid limit") }
            query.limit = (q["vf"]?.string == "r") ? .last(Int(n)) : .first(Int(n))
        }
        if query.start == nil && query.end == nil && query.limit == nil { return nil }
        return query
    }

    /// The wire query object of `query` (the inverse of `parse`, as the JS SDK writes it, with
    /// `sin`/`ein` for exclusive bounds); nil when it has no bounds and no limit, which is sent
    /// as a plain listen of the location.
    public static func object(_ query: Query) -> String? {
        if query.start == nil && query.end == nil && query.limit == nil { return nil }
        var out: [UInt8] = [UInt8(ascii: "{")]
        func member(_ name: String, _ json: [UInt8]) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
            out += json
        }
        func string(_ s: String) -> [UInt8] {
            var b: [UInt8] = []
            JSONWriter.appendString(s, to: &b)
            return b
        }
        func bound(_ b: Query.Bound?, _ v: String, _ n: String, _ inc: String) {
            guard let b else { return }
            var value: [UInt8] = []
            JSONWriter().write(b.value, into: &value)
            member(v, value)
            if let key = b.key { member(n, string(key)) }
            if b.exclusive { member(inc, Array("false".utf8)) }
        }
        bound(query.start, "sp", "sn", "sin")
        bound(query.end, "ep", "en", "ein")
        switch query.limit {
        case .first(let n)?: member("l", Array(String(n).utf8)); member("vf", string("l"))
        case .last(let n)?: member("l", Array(String(n).utf8)); member("vf", string("r"))
        case nil: break
        }
        switch query.order {
        case .key: member("i", string(".key"))
        case .value: member("i", string(".value"))
        case .child(let p): member("i", string(p.unrooted))
        case .priority: break
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
