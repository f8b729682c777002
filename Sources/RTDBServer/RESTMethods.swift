import RTDBCore
import RTDBRules
import RTDBWire

/// The REST methods on data paths: each validates its input
/// completely before the database is touched, so a refused request changes nothing.
extension RESTHandler {
    /// GET (and HEAD): the value, a shallow listing or a query window; or, with `Accept:
    /// text/event-stream`, the validated stream to open.
    func get(_ c: Context, method: String) throws -> RESTOutcome {
        let r = c.request
        let shallow = r.queryValue("shallow") == "true"
        let query = try RESTQuery.parse(r.query, defaultToKeyOrder: shallow)
        if shallow, let q = query {
            guard case .key = q.order else {
                throw RESTError(400, "shallow combines only with key-ordered paging (limitToFirst, limitToLast, startAt, startAfter, endAt, endBefore)")
            }
        }
        let filtered = query.map(RESTHandler.hasFilter) ?? false
        let access = try authorizeRead(c, c.principal, query: query)

        if method == "GET" && RESTHandler.wantsStream(r) {
            for name in ["callback", "download"] where r.queryValue(name) != nil {
                throw RESTError(400, "\(name) is not accepted on a stream")
            }
            if shallow { throw RESTError(400, "shallow is not accepted on a stream") }
            if c.silent { throw RESTError(400, "print=silent is not accepted on a stream") }
            var stream = StreamRequest(namespace: c.namespace, path: c.path, query: filtered ? query : nil)
            stream.export = r.queryValue("format") == "export"
            stream.access = access
            return .stream(stream)
        }

        let etagWanted = r.header("x-firebase-etag")?.lowercased() == "true"
        let ifNoneMatch = r.header("if-none-match")
        let export = r.queryValue("format") == "export"
        if (etagWanted || ifNoneMatch != nil) && (shallow || query != nil) {
            throw RESTError(400, "ETags describe a whole location: they cannot be combined with shallow or a query")
        }

        try checkReadBound(c, shallow: shallow, filtered: filtered)
        let db = try c.database(provider)
        if !shallow && !etagWanted && ifNoneMatch == nil && r.queryValue("print") != "pretty",
           let streaming = db.capability(StreamingReads.self),
           let body = try streamedRead(c, streaming, query: filtered ? query : nil, export: export) {
            return try respond(body: body, r, method: method, etag: nil)
        }
        let value: Node
        if shallow, let q = query, filtered, let keys = try db.capability(KeyWindowReads.self)?.windowKeys(c.path, q), !keys.isEmpty {
            // A page of keys, found by seeking to each (no listing of the whole location).
            value = .object(keys.map { Node.Entry($0, .bool(true)) })
        } else if shallow {
            let listing = try db.shallow(c.path)
            if let q = query, listing.isObject {
                value = q.windowValue(of: listing)
            } else {
                value = listing
            }
        } else if let q = query, filtered {
            // Query windows carry their children's priorities (shown only by format=export).
            value = Node.object(normalizing: try db.query(c.path, q))
        } else if export || etagWanted || ifNoneMatch != nil {
            // The node with its priorities: the export form, and what an ETag hashes.
            value = try db.export(c.path)
        } else {
            value = try db.get(c.path)
        }

        var etag: String?
        if etagWanted || ifNoneMatch != nil { etag = ETag.of(value) }
        if let inm = ifNoneMatch, ETag.matches(inm, value) {
            return .response(HTTPResponse(status: 304, headers: [("ETag", etag ?? ETag.of(value))]))
        }
        return try respond(value, r, method: method, etag: etag)
    }

    /// A read's response: silent (204), JSONP (`callback`), an attachment (`download`), or JSON.
    func respond(_ value: Node, _ r: HTTPRequest, method: String, etag: String?) throws -> RESTOutcome {
        if r.queryValue("print") == "silent" { return try respond(body: [], r, method: method, etag: etag) }
        let body = RESTRender.json(value, pretty: r.queryValue("print") == "pretty", export: r.queryValue("format") == "export")
        try checkResponseSize(body)
        return try respond(body: body, r, method: method, etag: etag)
    }

    /// A read's response with its JSON already rendered.
    func respond(body: [UInt8], _ r: HTTPRequest, method: String, etag: String?) throws -> RESTOutcome {
        var body = body
        var headers: [(name: String, value: String)] = []
        if let etag { headers.append(("ETag", etag)) }
        if r.queryValue("print") == "silent" {
            return .response(HTTPResponse(status: 204, headers: headers))
        }
        var response: HTTPResponse
        if let callback = r.queryValue("callback") {
            body = Array(callback.utf8) + [UInt8(ascii: "(")] + body + Array(");".utf8)
            response = HTTPResponse(status: 200, headers: [("Content-Type", "application/javascript; charset=utf-8")], body: body)
        } else {
            response = HTTPResponse.json(200, bytes: body)
        }
        if let name = r.queryValue("download") {
            response.headers.append(("Content-Disposition", "attachment; filename=\"\(name)\""))
        }
        response.headers += headers
        return .response(headOnly(response, method))
    }

    /// A write's response: 204 with `print=silent`, else 200 with `value` as JSON.
    func written(_ value: Node, _ c: Context, etag: String?) -> HTTPResponse {
        var headers: [(name: String, value: String)] = []
        if let etag { headers.append(("ETag", etag)) }
        if c.silent { return HTTPResponse(status: 204, headers: headers) }
        var r = HTTPResponse.json(200, bytes: RESTRender.json(value, pretty: c.pretty))
        r.headers += headers
        return r
    }

    /// 412 with the current value and its ETag.
    func preconditionFailed(_ current: Node, _ c: Context) -> HTTPResponse {
        var r = HTTPResponse.json(412, bytes: RESTRender.json(current, pretty: c.pretty))
        r.headers.append(("ETag", ETag.of(current)))
        return r
    }

    func wantsETag(_ c: Context) -> Bool {
        c.request.header("x-firebase-etag")?.lowercased() == "true"
    }

    /// PUT: replace the value (null deletes); with `if-match`, only if the ETag still matches.
    func put(_ c: Context) throws -> HTTPResponse {
        try WriteCheck.writable(c.path)
        if let response = try putStreamed(c) { return response }
        let value = try bodyValue(c)
        try WriteCheck.value(value, at: c.path)
        try checkWriteSize(c, sent: c.request.body.count, replaced: [c.path])
        if checksWrites(c.principal, c.namespace) {
            let ifMatch = c.request.header("if-match")
            return try ruledWrite(c, c.principal, [(c.path, value)]) { db, data, resolved in
                // Rules come before the ETag check.
                if let ifMatch {
                    let current = try data.old(c.path)
                    guard ETag.matches(ifMatch, current) else { return preconditionFailed(current, c) }
                }
                let stored = try db.set(c.path, resolved[0].value)
                return written(stored, c, etag: ifMatch != nil || wantsETag(c) ? ETag.of(stored) : nil)
            }
        }
        let db = try c.database(provider)
        if let ifMatch = c.request.header("if-match") {
            switch try db.set(c.path, value, if: { ETag.matches(ifMatch, $0) }) {
            case .committed(let stored): return written(stored, c, etag: ETag.of(stored))
            case .stale(let current): return preconditionFailed(current, c)
            }
        }
        let stored = try db.set(c.path, value)
        return written(stored, c, etag: wantsETag(c) ? ETag.of(stored) : nil)
    }

    /// Bodies from this size on are stored as they are read when they can be (`putStreamed`).
    static let streamedBodyBytes = 1 << 20

    /// A huge PUT whose body is plain JSON (`PlainJSON`) is stored by the streaming importer
    /// (`StreamingWrites`), never read into a tree of values, when nothing needs that tree: no
    /// rules to check it against, no `if-match` or ETag to hash, no pretty answer. Its answer,
    /// the stored value, is rendered from the text as well. Any other write takes the ordinary
    /// path (nil).
    func putStreamed(_ c: Context) throws -> HTTPResponse? {
        let body = c.request.body
        guard body.count >= RESTHandler.streamedBodyBytes, body.count <= sizeLimits.maxWriteBytes,
              !checksWrites(c.principal, c.namespace), c.request.header("if-match") == nil, !wantsETag(c), !c.pretty,
              !c.path.isPriority, body.withUnsafeBufferPointer({ PlainJSON.isPlain($0, depth: c.path.count) }),
              let db = try c.database(provider).capability(StreamingWrites.self) else { return nil }
        try checkWriteSize(c, sent: body.count, replaced: [c.path])
        // The body is read in place; values past a small size are walked, not built whole.
        _ = try db.importJSON(c.path, from: BytesSource(body), as: .set, window: RESTHandler.streamedBodyBytes,
                              progress: Progress.none)
        if c.silent { return HTTPResponse(status: 204) }
        return HTTPResponse.json(200, bytes: try body.withUnsafeBufferPointer { b in
            // Most often the body is its own answer: then it is sent as it is, not copied.
            PlainJSON.rendersAsItself(b, members: false) ? nil : try PlainJSON.render(b)
        } ?? body)
    }

    /// A huge PATCH whose body is a plain JSON object (`PlainJSON`: distinct keys of one level,
    /// nothing to normalize) is stored by the streaming importer as an update of those children
    /// (`StreamingWrites.importChildren`), and its answer, the members written, rendered from the
    /// text, when nothing needs a tree: no rules, no write size budget to weigh the replaced
    /// children against, no pretty answer. A million children then cost about their text.
    func patchStreamed(_ c: Context) throws -> HTTPResponse? {
        let body = c.request.body
        guard body.count >= RESTHandler.streamedBodyBytes, body.count <= sizeLimits.maxWriteBytes,
              !checksWrites(c.principal, c.namespace), !c.pretty, !c.path.isPriority, try writeBudget(c) == nil,
              body.withUnsafeBufferPointer({ b in
                  b.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{")
                      && PlainJSON.isPlain(b, depth: c.path.count)
              }),
              let db = try c.database(provider).capability(StreamingWrites.self) else { return nil }
        try db.importChildren(c.path, from: BytesSource(body), window: RESTHandler.streamedBodyBytes)
        if c.silent { return HTTPResponse(status: 204) }
        return HTTPResponse.json(200, bytes: try body.withUnsafeBufferPointer { b in
            PlainJSON.rendersAsItself(b, members: true) ? nil : try PlainJSON.renderMembers(b)
        } ?? body)
    }

    /// POST: a new child under a server push ID; answers `{"name": id}`.
    func post(_ c: Context) throws -> HTTPResponse {
        try WriteCheck.writable(c.path)
        try refuseIfMatch(c, "POST")
        let value = try bodyValue(c)
        // Validated where it will live: one level below the location.
        try WriteCheck.value(value, at: c.path.appending("-AAAAAAAAAAAAAAAAAAA"))
        try checkWriteSize(c, sent: c.request.body.count, replaced: [])
        if checksWrites(c.principal, c.namespace) {
            // The new key is chosen first: rules see it (`$id`) before anything is written.
            let key = pushIDs.next(now: clock())
            let at = c.path.appending(key)
            return try ruledWrite(c, c.principal, [(at, value)]) { db, _, resolved in
                _ = try db.set(at, resolved[0].value)
                return written(.object([Node.Entry("name", .string(key))]), c, etag: nil)
            }
        }
        let pushed = try c.database(provider).push(c.path, [value])
        guard let key = pushed.first?.key else { throw RESTError(500, "internal error: no push ID") }
        return written(.object([Node.Entry("name", .string(key))]), c, etag: nil)
    }

    /// PATCH: a multi-path update, all paths at once; a `null` body deletes the location
    /// (firebase-tools clears paths this way). Answers the members as written.
    func patch(_ c: Context) throws -> HTTPResponse {
        try WriteCheck.writable(c.path)
        try refuseIfMatch(c, "PATCH")
        if let response = try patchStreamed(c) { return response }
        let bytes = try bodyBytes(c)
        let raw: [Node.Entry]?
        do {
            raw = try bytes.withUnsafeBufferPointer { try JSONReader.parseEntries($0) }
        } catch let e as RTDBError where e.code == .invalidJSON {
            throw RESTError.invalidJSON
        }
        guard let raw else {
            guard try JSONReader.parse(bytes).isNull else {
                throw RESTError(400, "a PATCH body must be a JSON object of paths and values")
            }
            try checkWriteSize(c, sent: bytes.count, replaced: [c.path])
            if checksWrites(c.principal, c.namespace) {
                return try ruledWrite(c, c.principal, [(c.path, .null)]) { db, _, _ in
                    written(try db.set(c.path, .null), c, etag: nil)
                }
            }
            let stored = try c.database(provider).set(c.path, .null)
            return written(stored, c, etag: nil)
        }
        let entries = try WriteCheck.update(raw, at: c.path)
        try checkWriteSize(c, sent: bytes.count, replaced: entries.map { c.path.appending($0.path) })
        let resolved: [(path: Path, value: Node)]
        if checksWrites(c.principal, c.namespace) && !entries.isEmpty {
            // All paths are checked against one new tree; any refusal refuses them all.
            let full = entries.map { (path: c.path.appending($0.path), value: $0.value) }
            resolved = try ruledWrite(c, c.principal, full) { db, _, done in
                let relative = zip(entries, done).map { (path: $0.0.path, value: $0.1.value) }
                return try db.update(c.path, relative)
            }
        } else {
            resolved = entries.isEmpty ? [] : try c.database(provider).update(c.path, entries)
        }
        if c.silent { return HTTPResponse(status: 204) }
        let members = resolved.map { (key: $0.path.unrooted, value: $0.value) }
        return HTTPResponse.json(200, bytes: RESTRender.members(members, pretty: c.pretty))
    }

    /// DELETE: remove the location; with `if-match`, only if the ETag still matches.
    func delete(_ c: Context) throws -> HTTPResponse {
        try WriteCheck.writable(c.path)
        try checkWriteSize(c, sent: 0, replaced: [c.path])
        if checksWrites(c.principal, c.namespace) {
            let ifMatch = c.request.header("if-match")
            return try ruledWrite(c, c.principal, [(c.path, .null)]) { db, data, _ in
                if let ifMatch {
                    let current = try data.old(c.path)
                    guard ETag.matches(ifMatch, current) else { return preconditionFailed(current, c) }
                }
                _ = try db.set(c.path, .null)
                return written(.null, c, etag: ifMatch != nil || wantsETag(c) ? ETag.null : nil)
            }
        }
        let db = try c.database(provider)
        if let ifMatch = c.request.header("if-match") {
            switch try db.set(c.path, .null, if: { ETag.matches(ifMatch, $0) }) {
            case .committed: return written(.null, c, etag: ETag.null)
            case .stale(let current): return preconditionFailed(current, c)
            }
        }
        _ = try db.set(c.path, .null)
        return written(.null, c, etag: wantsETag(c) ? ETag.null : nil)
    }

    func refuseIfMatch(_ c: Context, _ method: String) throws {
        if c.request.header("if-match") != nil {
            throw RESTError(400, "if-match is accepted on PUT and DELETE, not on \(method)")
        }
    }

    /// The request body, within the REST write limit (256 MiB), and not empty.
    func bodyBytes(_ c: Context) throws -> [UInt8] {
        let body = c.request.body
        if body.count > sizeLimits.maxWriteBytes {
            throw RESTError(400, "the write is \(body.count) bytes; the limit is \(sizeLimits.maxWriteBytes)")
        }
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) { throw RESTError.invalidJSON }
        return body
    }

    /// The body as a value (invalid JSON is Firebase's 400).
    func bodyValue(_ c: Context) throws -> Node {
        let bytes = try bodyBytes(c)
        do {
            return try JSONReader.parse(bytes)
        } catch let e as RTDBError where e.code == .invalidJSON {
            throw RESTError.invalidJSON
        }
    }

    static func hasFilter(_ q: Query) -> Bool {
        q.start != nil || q.end != nil || q.limit != nil
    }
}
