import RTDBCore
import RTDBEngine
import RTDBRules
import RTDBWire

/// The realtime writes, run inside the group commit: sets (`p`, compare-and-set with `h`),
/// merges (`m`), and the onDisconnect writes of sessions that ended.
extension RealtimeHandler {
    /// A set or a merge under the credentials and rules REST applies; the answer to send once
    /// the batch has committed. Credentials are judged first: a client they refuse learns
    /// nothing of what was wrong with its request.
    func write(_ work: RealtimeWork, _ session: RealtimeSession) -> RealtimeResponse {
        guard let r = work.r else { return .failure(0, .failure, "no request") }
        do {
            let principal = try principal(session)
            switch work {
            case .refused(_, _, let error): throw error
            case .request(let request):
                switch request.action {
                case .put(let path, let value, let hash):
                    return try put(session, principal, r, path, value, hash)
                case .merge(let path, let children):
                    return try merge(session, principal, r, path, children)
                default:
                    return .failure(r, .failure, "not a write")
                }
            case .ping:
                return .failure(r, .failure, "not a write")
            }
        } catch {
            return ErrorStatus.refusal(r, error)
        }
    }

    private func context(_ session: RealtimeSession, _ principal: Principal, _ path: Path) -> RESTHandler.Context {
        RESTHandler.Context(request: session.credentials, namespace: session.namespace, path: path, principal: principal)
    }

    private func put(_ session: RealtimeSession, _ principal: Principal, _ r: Int64, _ path: Path, _ value: Node,
                     _ hash: String?) throws -> RealtimeResponse {
        let db = try namespaces.embedded(session.namespace)
        try WriteCheck.value(value, at: path)
        if rest.checksWrites(principal, session.namespace) {
            let stale: Bool = try rest.ruledWrite(context(session, principal, path), principal, [(path, value)]) { db, data, resolved in
                if let hash, NodeHash.hash(try data.old(path)) != hash { return true }
                _ = try db.set(path, resolved[0].value)
                return false
            }
            if stale { return .failure(r, .dataStale, "hash mismatch") }
        } else if let hash {
            // A transaction's put: only if the value is still the one the client hashed.
            if case .stale = try db.set(path, value, if: { NodeHash.hash($0) == hash }) {
                return .failure(r, .dataStale, "hash mismatch")
            }
        } else {
            _ = try db.set(path, value)
        }
        return .ok(r)
    }

    private func merge(_ session: RealtimeSession, _ principal: Principal, _ r: Int64, _ path: Path,
                       _ children: [Node.Entry]) throws -> RealtimeResponse {
        let db = try namespaces.embedded(session.namespace)
        let list = try WriteCheck.update(children, at: path)
        if list.isEmpty { return .ok(r) }
        if rest.checksWrites(principal, session.namespace) {
            let full = list.map { (path: path.appending($0.path), value: $0.value) }
            _ = try rest.ruledWrite(context(session, principal, path), principal, full) { db, _, done in
                try db.update(path, zip(list, done).map { (path: $0.0.path, value: $0.1.value) })
            }
        } else {
            _ = try db.update(path, list)
        }
        return .ok(r)
    }

    /// One ended session's onDisconnect writes, as one update at the root. Under rules they are
    /// checked again with the session's last credentials, each on its own: one that is now
    /// refused is dropped, the others are made.
    func runDisconnect(_ d: PendingDisconnect) {
        do {
            let db = try namespaces.embedded(d.namespace)
            let principal = try rest.principal(d.credentials, namespace: d.namespace)
            if rest.checksWrites(principal, d.namespace) {
                for e in d.entries {
                    let c = RESTHandler.Context(request: d.credentials, namespace: d.namespace, path: e.path, principal: principal)
                    do {
                        try rest.ruledWrite(c, principal, [e]) { db, _, resolved in _ = try db.set(e.path, resolved[0].value) }
                    } catch {
                        log.event("ondisconnect_refused", [("path", e.path.description)])
                    }
                }
                return
            }
            _ = try db.update(.root, d.entries)
        } catch {
            log.error("onDisconnect writes of session \(d.session) failed: \(error)")
        }
    }
}
