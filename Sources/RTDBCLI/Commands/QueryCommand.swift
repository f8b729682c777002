import RTDBCore

enum QueryCommand {
    static let spec = CommandSpec(
        name: "query", summary: "print the children of a path, filtered and ordered",
        usage: "rtdb query PATH [ORDER] [RANGE] [LIMIT]",
        arguments: [("PATH", .path, "database path whose children are queried")],
        options: [Registry.rawOption.spec, Registry.partialOption.spec] + Registry.queryOptions,
        exclusions: { QueryOptions.exclusions },
        description: "Prints one {\"key\":K,\"value\":V} line per child, in query order. Orders: by key (default), value, child "
            + "or priority. Bounds are JSON when they parse as JSON, otherwise strings; with --order-by-key they are always keys; "
            + "with --order-by-priority they are null, numbers or strings. With --raw, only the values print, one per line, "
            + "strings as bare text.",
        examples: ["rtdb query /scores --order-by-value --limit-to-last 3",
                   "rtdb query /users --order-by-child age --start-at 18",
                   "rtdb query /posts --order-by-child metrics/views --limit-to-last 10 | jq -r .key",
                   "rtdb query /users --order-by-child age --limit-to-last 3 -r"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        let query = try QueryOptions.parse(inv)
        let r = try inv.database(reading: true).query(path, query, partial: inv.has(Registry.partialOption))
        let out = inv.output()
        let raw = inv.has(Registry.rawOption)
        for e in r.value {
            if raw {
                try out.rawValue(e.node)
            } else {
                try out.record([("key", .string(e.key)), ("value", .node(e.node))])
            }
        }
        try out.flush()
        // Only an offline cache answers in part, and only with --partial.
        if !r.complete { throw ReadResult<[Node.Entry]>.incomplete(path) }
    }
}

/// Turns the query options of `query`, `watch` and `keep` into a checked `Query`. The options
/// and the ones that exclude each other are declared in SharedOptions.swift (the parser has
/// refused those already).
enum QueryOptions {
    static func parse(_ inv: Invocation) throws -> Query {
        let hasStart = inv.has(startAt) || inv.has(startAfter) || inv.has(equalTo)
        let hasEnd = inv.has(endAt) || inv.has(endBefore) || inv.has(equalTo)
        if inv.has(startKey) && !hasStart { throw inv.usageError("--start-key needs --start-at, --start-after or --equal-to") }
        if inv.has(endKey) && !hasEnd { throw inv.usageError("--end-key needs --end-at, --end-before or --equal-to") }

        var query = Query()
        if inv.has(orderByValue) { query.order = .value }
        if inv.has(orderByPriority) { query.order = .priority }
        if let child = try inv.value(orderByChild) {
            let p: Path
            do { p = try Path(child) } catch let e as RTDBError { throw RTDBError(.invalidQuery, "--order-by-child: \(e.message)") }
            if p.isRoot { throw RTDBError(.invalidQuery, "--order-by-child needs a child path") }
            if p.isPriority { throw RTDBError(.invalidQuery, "--order-by-child cannot name .priority; use --order-by-priority") }
            query.order = .child(p)
        }
        let byKey: Bool
        if case .key = query.order { byKey = true } else { byKey = false }
        if byKey && (inv.has(startKey) || inv.has(endKey)) {
            throw inv.usageError("--start-key and --end-key need --order-by-value, --order-by-child or --order-by-priority (with key order the bound is the key)")
        }
        let byPriority: Bool
        if case .priority = query.order { byPriority = true } else { byPriority = false }
        func bound(_ text: String) throws -> Node {
            if byKey { return .string(text) }
            var v: Node
            do { v = try JSONReader.parse(text) } catch { v = .string(text) }
            v = v.withoutPriorities
            if v.isObject { throw RTDBError(.invalidQuery, "query bounds must be primitive values, not \(Limits.quote(text))") }
            if byPriority, case .bool = v {
                throw RTDBError(.invalidQuery, "bounds of --order-by-priority must be null, numbers or strings, not \(Limits.quote(text))")
            }
            return v
        }
        let sk = try inv.value(startKey), ek = try inv.value(endKey)
        if let v = try inv.value(equalTo) {
            if let sk, let ek, !KeyOrder.same(sk, ek) { throw inv.usageError("--equal-to takes one key: --start-key and --end-key differ") }
            let key = sk ?? ek
            query.start = Query.Bound(try bound(v), key: key)
            query.end = Query.Bound(try bound(v), key: key)
        }
        if let v = try inv.value(startAt) { query.start = Query.Bound(try bound(v), key: sk) }
        if let v = try inv.value(startAfter) { query.start = Query.Bound(try bound(v), key: sk, exclusive: true) }
        if let v = try inv.value(endAt) { query.end = Query.Bound(try bound(v), key: ek) }
        if let v = try inv.value(endBefore) { query.end = Query.Bound(try bound(v), key: ek, exclusive: true) }
        if let n = try inv.value(limitToFirst) { query.limit = .first(n) }
        if let n = try inv.value(limitToLast) { query.limit = .last(n) }
        try query.validate()
        return query
    }
}
