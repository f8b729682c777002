import RTDBCore

/// REST query parameters ↔ `Query`.
///
/// Parameter values are JSON: `orderBy="$key"`, `"$value"`, `"$priority"` or a child path
/// (`"a/b"`); `startAt`, `startAfter`, `endAt`, `endBefore`, `equalTo` take a JSON value with an
/// optional `,` + key argument (`startAt="v","k"`); `limitToFirst` / `limitToLast` take a
/// non-negative integer. In key order a bound is a key: a JSON string, or the raw text when it
/// is not one (`startAfter=-Nabc`, as firebase-tools pages with `shallow=true`; `startAt=007`
/// stays the key `"007"`). Every problem is `invalid_query` with a sentence naming the parameter.
public enum RESTQuery {
    /// The parameter names this codec reads.
    public static let names: Set<String> = ["orderBy", "startAt", "startAfter", "endAt", "endBefore",
                                            "equalTo", "limitToFirst", "limitToLast"]

    /// The query the parameters describe, or nil when none is present. `value(name)` answers a
    /// parameter's (last) value. Without `orderBy`, the other parameters are an error unless
    /// `defaultToKeyOrder` (the `shallow=true` paging form), which orders by key.
    public static func parse(_ value: (String) -> String?, defaultToKeyOrder: Bool = false) throws -> Query? {
        guard names.contains(where: { value($0) != nil }) else { return nil }
        var query = Query()
        if let text = value("orderBy") {
            query.order = try order(text)
        } else if !defaultToKeyOrder {
            throw RTDBError(.invalidQuery, "orderBy must be defined when other query parameters are defined")
        }
        let keyOrder: Bool
        if case .key = query.order { keyOrder = true } else { keyOrder = false }

        let equal = try value("equalTo").map { try bound("equalTo", $0, keyOrder: keyOrder) }
        let startAt = try value("startAt").map { try bound("startAt", $0, keyOrder: keyOrder) }
        let startAfter = try value("startAfter").map { try bound("startAfter", $0, keyOrder: keyOrder) }
        let endAt = try value("endAt").map { try bound("endAt", $0, keyOrder: keyOrder) }
        let endBefore = try value("endBefore").map { try bound("endBefore", $0, keyOrder: keyOrder) }
        if let equal {
            if startAt != nil || startAfter != nil || endAt != nil || endBefore != nil {
                throw RTDBError(.invalidQuery, "equalTo cannot be combined with startAt, startAfter, endAt or endBefore")
            }
            query.start = equal
            query.end = equal
        } else {
            if startAt != nil && startAfter != nil {
                throw RTDBError(.invalidQuery, "startAt and startAfter cannot be combined")
            }
            if endAt != nil && endBefore != nil {
                throw RTDBError(.invalidQuery, "endAt and endBefore cannot be combined")
            }
            query.start = startAt ?? startAfter.map { b in var b = b; b.exclusive = true; return b }
            query.end = endAt ?? endBefore.map { b in var b = b; b.exclusive = true; return b }
        }

        let first = try value("limitToFirst").map { try limit("limitToFirst", $0) }
        let last = try value("limitToLast").map { try limit("limitToLast", $0) }
        if first != nil && last != nil {
            throw RTDBError(.invalidQuery, "limitToFirst and limitToLast cannot be combined")
        }
        query.limit = first.map { .first($0) } ?? last.map { .last($0) }
        do {
            try query.validate()
        } catch let e as RTDBError {
            throw RTDBError(.invalidQuery, e.message)
        }
        return query
    }

    /// `parse` over a request's query list (the last value of each name wins).
    public static func parse(_ params: [(name: String, value: String)], defaultToKeyOrder: Bool = false) throws -> Query? {
        try parse({ name in params.last(where: { $0.name == name })?.value }, defaultToKeyOrder: defaultToKeyOrder)
    }

    static func order(_ text: String) throws -> Query.Order {
        guard case .string(let s)? = try? JSONReader.parse(text) else {
            throw RTDBError(.invalidQuery, "orderBy must be a JSON string such as \"$key\" or \"height\"")
        }
        switch s {
        case "$key": return .key
        case "$value": return .value
        case "$priority": return .priority
        default:
            let path: Path
            do { path = try Path(s) } catch let e as RTDBError {
                throw RTDBError(.invalidQuery, "orderBy: \(e.message)")
            }
            if path.isRoot { throw RTDBError(.invalidQuery, "orderBy needs a child path") }
            return .child(path)
        }
    }

    /// Parses `VALUE[,KEY]`.
    static func bound(_ name: String, _ text: String, keyOrder: Bool) throws -> Query.Bound {
        let u = Array(text.utf8)
        if keyOrder {
            if u.first == UInt8(ascii: "\"") {
                let end = stringEnd(u)
                guard end == u.count, case .string(let s)? = try? JSONReader.parse(text) else {
                    throw RTDBError(.invalidQuery, "\(name) must be a key when ordering by key")
                }
                return Query.Bound(.string(s))
            }
            if text.isEmpty { throw RTDBError(.invalidQuery, "\(name) needs a value") }
            return Query.Bound(.string(text))
        }
        let valueEnd: Int
        if u.first == UInt8(ascii: "\"") {
            valueEnd = stringEnd(u)
        } else {
            valueEnd = u.firstIndex(of: UInt8(ascii: ",")) ?? u.count
        }
        let valueText = String(decoding: u[..<min(valueEnd, u.count)], as: UTF8.self)
        guard let value = try? JSONReader.parse(valueText), !text.isEmpty else {
            throw RTDBError(.invalidQuery, "\(name) must be a JSON value (strings in double quotes)")
        }
        if value.isObject {
            throw RTDBError(.invalidQuery, "\(name) must be a string, number, boolean or null")
        }
        guard valueEnd < u.count else { return Query.Bound(value) }
        guard u[valueEnd] == UInt8(ascii: ",") else {
            throw RTDBError(.invalidQuery, "\(name) must be a JSON value, optionally followed by a comma and a key")
        }
        let keyText = String(decoding: u[(valueEnd + 1)...], as: UTF8.self)
        if keyText.utf8.first == UInt8(ascii: "\"") {
            guard case .string(let k)? = try? JSONReader.parse(keyText) else {
                throw RTDBError(.invalidQuery, "the key argument of \(name) must be a JSON string")
            }
            return Query.Bound(value, key: k)
        }
        if keyText.isEmpty { throw RTDBError(.invalidQuery, "the key argument of \(name) is empty") }
        return Query.Bound(value, key: keyText)
    }

    /// The index just past the JSON string that starts at 0 (or `u.count` when unterminated).
    static func stringEnd(_ u: [UInt8]) -> Int {
        var i = 1
        while i < u.count {
            if u[i] == UInt8(ascii: "\\") { i += 2; continue }
            if u[i] == UInt8(ascii: "\"") { return i + 1 }
            i += 1
        }
        return u.count
    }

    static func limit(_ name: String, _ text: String) throws -> Int {
        let u = text.utf8
        guard !u.isEmpty, u.count <= 10, u.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(text),
              n <= Int(Int32.max) else {
            throw RTDBError(.invalidQuery, "\(name) must be a non-negative integer")
        }
        return n
    }

    /// The parameters that ask a REST server for `query` (values JSON, not yet percent-encoded),
    /// in the order a client sends them.
    public static func parameters(_ query: Query) -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        let orderText: String
        switch query.order {
        case .key: orderText = "$key"
        case .value: orderText = "$value"
        case .priority: orderText = "$priority"
        case .child(let p): orderText = p.unrooted
        }
        out.append(("orderBy", JSONWriter.string(.string(orderText))))
        func text(_ b: Query.Bound) -> String {
            var s = JSONWriter.string(b.value)
            if let k = b.key { s += "," + JSONWriter.string(.string(k)) }
            return s
        }
        if let s = query.start { out.append((s.exclusive ? "startAfter" : "startAt", text(s))) }
        if let e = query.end { out.append((e.exclusive ? "endBefore" : "endAt", text(e))) }
        switch query.limit {
        case .first(let n)?: out.append(("limitToFirst", String(n)))
        case .last(let n)?: out.append(("limitToLast", String(n)))
        case nil: break
        }
        return out
    }
}
