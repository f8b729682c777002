import RTDBCore
import RTDBWire

/// Reads through the cache.
extension OfflineDatabase {
    /// A read's answer from the cache's point of view.
    struct CacheAnswer {
        /// With a filtered query, the children the cache knows (the caller applies the window).
        var value: Node
        var complete: Bool
        var estimated: Bool
        /// Answered by the server (else from the cache).
        var fromServer: Bool
    }

    /// Reads `path` (with `query` when filtered) by the mode's rule: auto flushes, asks the
    /// server and stores its answer as a complete tracked query, falling back to the cache
    /// when the server cannot be reached; `--offline` reads the cache; `--online` requires the
    /// server. 401/403 are errors, never answered from the cache.
    func read(_ path: Path, query: Query?) throws -> CacheAnswer {
        let params = TrackedParams.canonical(query)
        if mode == .auto, let r = try cache.streamedRead(path, params: params, now: estimatedServerTime()) {
            // A live watch streams this location into the cache: no request needed.
            return CacheAnswer(value: r.value, complete: true, estimated: false, fromServer: false)
        }
        if mode != .offline {
            flushIncidentally()
            do {
                try remote.connect()   // a server that is down answers at once, without retries
                try fetch(path, query: query, params: params)
            } catch let e as RTDBError where mode == .auto && (e.code == .unavailable || e.code == .timeout) {
                // The server cannot be reached: the cache answers.
            }
        }
        // A window held whole inside a cached window of the same order is answered whole.
        let r = try cache.cachedRead(path, params: params, now: estimatedServerTime(), rules: .containingWindows)
        if mode == .offline {
            // Every read sets last_use_ms (a read from the server did when it stored the answer).
            try? cache.touchQueries(r.usedQueries)
        }
        return CacheAnswer(value: r.value, complete: r.complete, estimated: r.estimated, fromServer: mode != .offline)
    }

    /// Asks the server and stores the answer (a default query with its ETag, reused as
    /// `if-none-match`; a filtered query with its keys), priorities included (`format=export`)
    /// as the server holds them: a priority order needs them, and `get --export` shows them.
    func fetch(_ path: Path, query: Query?, params: String) throws {
        let export: [(name: String, value: String)] = [("format", "export")]
        if params == TrackedParams.defaultParams {
            var headers: [(name: String, value: String)] = [("X-Firebase-ETag", "true")]
            let stored = try cache.storedETag(path)
            if let stored { headers.append(("if-none-match", stored)) }
            let r = try remote.request("GET", path, params: export, headers: headers, idempotent: true)
            if r.status == 304, stored != nil {
                try cache.touchQuery(path, params: params)
                return
            }
            guard r.status == 200 else { throw remote.failure(for: r, what: "a read of \(path)").error }
            let v = try parse(r, path)
            try cache.storeServerAnswer(path, params: params, value: v, etag: r.header("etag"))
        } else if let query {
            let r = try remote.request("GET", path, params: RESTQuery.parameters(query) + export, idempotent: true)
            guard r.status == 200 else { throw remote.failure(for: r, what: "a query of \(path)").error }
            let v = try parse(r, path)
            try cache.storeServerAnswer(path, params: params, value: Node.object(normalizing: query.window(of: v)))
        }
    }

    private func parse(_ r: HTTPClientResponse, _ path: Path) throws -> Node {
        do { return try JSONReader.parse(r.body) } catch {
            throw RTDBError(.unavailable, "\(remote.display) answered a read of \(path) with a body that is not JSON")
        }
    }

    /// A read whose answer is incomplete is `unavailable`, unless the caller takes a partial one.
    private func checked(_ r: CacheAnswer, _ path: Path, partial: Bool) throws -> CacheAnswer {
        if !r.complete && !partial {
            throw RTDBError(.unavailable, "\(path) is not in the offline cache \(cache.file) in full"
                            + (mode == .offline ? "" : " and the server could not be reached")
                            + "; --partial prints what it holds")
        }
        return r
    }

    public func read(_ path: Path, as form: ReadForm, partial: Bool) throws -> ReadResult<Node> {
        if path.isPriority {
            // A priority belongs to its node (the cache stores none without it): the node is
            // read, and cached, and its priority answered.
            let r = try checked(read(path.node, query: nil), path, partial: partial)
            return ReadResult(r.value.priority, complete: r.complete)
        }
        let r = try checked(read(path, query: nil), path, partial: partial)
        let value: Node
        switch form {
        case .value: value = r.value.withoutPriorities
        case .export: value = r.value
        case .shallow: value = r.value.withoutPriorities.shallowView
        }
        return ReadResult(value, complete: r.complete)
    }

    public func query(_ path: Path, _ query: Query, partial: Bool) throws -> ReadResult<[Node.Entry]> {
        let r = try checked(read(path, query: query), path, partial: partial)
        return ReadResult(query.window(of: r.value), complete: r.complete)
    }
}
