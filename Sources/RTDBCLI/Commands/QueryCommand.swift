import RTDBCore

enum QueryCommand {
    static let spec = CommandSpec(
        name: "query", summary: "print the children of a path, filtered and ordered",
        usage: "rtdb query PATH [ORDER] [RANGE] [LIMIT]",
        arguments: [("PATH", .path, "database path whose children are queried")],
        options: [Registry.rawOption, Registry.partialOption] + Registry.queryOptions,
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
        let r = try inv.database(reading: true).query(path, query, partial: inv.has("--partial"))
        let out = inv.output()
        let raw = inv.has("--raw")
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

/// Turns the query options of `query` and `watch` into a checked `Query`.
enum QueryOptions {
    static func parse(_ inv: Invocation) throws -> Query {
        let orders = ["--order-by-key", "--order-by-value", "--order-by-child", "--order-by-priority"].filter { inv.has($0) }
        if orders.count > 1 { throw inv.usageError("give one order option at most (\(orders.joined(separator: ", ")))") }
        if inv.has("--limit-to-first") && inv.has("--limit-to-last") {
            throw inv.usageError("--limit-to-first and --limit-to-last exclude each other")
        }
        if inv.has("--equal-to"), let other = ["--start-at", "--start-after", "--end-at", "--end-before"].first(where: { inv.has($0) }) {
            throw inv.usageError("--equal-to excludes \(other)")
        }
        if inv.has("--start-at") && inv.has("--start-after") { throw inv.usageError("--start-at and --start-after exclude each other") }
        if inv.has("--end-at") && inv.has("--end-before") { throw inv.usageError("--end-at and --end-before exclude each other") }
        let hasStart = inv.has("--start-at") || inv.has("--start-after") || inv.has("--equal-to")
        let hasEnd = inv.has("--end-at") || inv.has("--end-before") || inv.has("--equal-to")
        if inv.has("--start-key") && !hasStart { throw inv.usageError("--start-key needs --start-at, --start-after or --equal-to") }
        if inv.has("--end-key") && !hasEnd { throw inv.usageError("--end-key needs --end-at, --end-before or --equal-to") }

        var query = Query()
        if inv.has("--order-by-value") { query.order = .value }
        if inv.has("--order-by-priority") { query.order = .priority }
        if let child = inv.value("--order-by-child") {
            let p: Path
            do { p = try Path(child) } catch let e as RTDBError { throw RTDBError(.invalidQuery, "--order-by-child: \(e.message)") }
            if p.isRoot { throw RTDBError(.invalidQuery, "--order-by-child needs a child path") }
            if p.isPriority { throw RTDBError(.invalidQuery, "--order-by-child cannot name .priority; use --order-by-priority") }
            query.order = .child(p)
        }
        let byKey: Bool
        if case .key = query.order { byKey = true } else { byKey = false }
        if byKey && (inv.has("--start-key") || inv.has("--end-key")) {
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
        if let v = inv.value("--equal-to") {
            let sk = inv.value("--start-key"), ek = inv.value("--end-key")
            if let sk, let ek, !KeyOrder.same(sk, ek) { throw inv.usageError("--equal-to takes one key: --start-key and --end-key differ") }
            let key = sk ?? ek
            query.start = Query.Bound(try bound(v), key: key)
            query.end = Query.Bound(try bound(v), key: key)
        }
        if let v = inv.value("--start-at") { query.start = Query.Bound(try bound(v), key: inv.value("--start-key")) }
        if let v = inv.value("--start-after") { query.start = Query.Bound(try bound(v), key: inv.value("--start-key"), exclusive: true) }
        if let v = inv.value("--end-at") { query.end = Query.Bound(try bound(v), key: inv.value("--end-key")) }
        if let v = inv.value("--end-before") { query.end = Query.Bound(try bound(v), key: inv.value("--end-key"), exclusive: true) }
        for name in ["--limit-to-first", "--limit-to-last"] {
            guard let text = inv.value(name) else { continue }
            // Firebase's SDKs refuse limits below 1; a window of nothing is a mistake, not a query.
            guard let n = Int(text), n >= 1 else { throw inv.usageError("\(name) needs a whole number ≥ 1, not \(Limits.quote(text))") }
            query.limit = name == "--limit-to-first" ? .first(n) : .last(n)
        }
        try query.validate()
        return query
    }
}
