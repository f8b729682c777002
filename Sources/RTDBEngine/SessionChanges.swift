import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Changes to a live session's operations on the embedded file (`rtdb on-disconnect`), made by
/// any process through the session's rows (Sessions.swift): a new operation is one more row
/// after the others, so it replaces earlier ones at or below its path when they run; a cancel
/// rewrites the rows as the writes that are left (`DisconnectWrites.cancel`), each a plain
/// `set` or `remove` row that every rtdb reads alike.
///
/// A change is made only to a session that is alive when its transaction runs: its row is there
/// and its lock is held. A reaper takes the lock before it opens its transaction, so a session
/// that dies meanwhile is reaped after the change commits, with it: what an acknowledged change
/// says is what runs.
extension EmbeddedDatabase: SessionStore {
    public func changeSession(_ id: String, _ change: DisconnectChange) throws {
        func notFound(_ why: String) -> RTDBError {
            RTDBError(.notFound, "no live session \(Limits.quote(id)) on \(file): \(why)")
        }
        guard !id.isEmpty, !id.contains("/"), id != ".", id != ".." else { throw notFound("that is not a session id") }
        // Never creates the file: a session that never was has nothing to change.
        guard try FileAccess.exists(file) else { throw notFound("the file does not exist") }
        try writing { c in
            guard try c.integer("SELECT count(*) FROM sqlite_master WHERE name = 'rtdb_sessions'") == 1 else {
                throw notFound("no session was ever started on this file")
            }
            let find = try c.statement("SELECT host FROM rtdb_sessions WHERE id = ?1")
            find.bind(1, text: id)
            defer { find.reset() }
            guard try find.step() else {
                throw notFound("it has ended (when its process died, the operations it had ran), or it was never started on this file")
            }
            guard find.string(0) == EmbeddedDatabase.hostName() else {
                throw notFound("it is held on the machine \(Limits.quote(find.string(0))), whose lock cannot be checked from here")
            }
            guard isLiveSession(id) else { throw notFound("its process is gone; its operations run now") }
            switch change {
            case .register(let op):
                let next = try c.statement("SELECT coalesce(max(seq), -1) + 1 FROM rtdb_ondisconnect WHERE session_id = ?1")
                next.bind(1, text: id)
                defer { next.reset() }
                let seq = try next.step() ? next.int(0) : 0
                try insertOperations(c, id, [op], from: seq)
            case .cancel(let path):
                var writes = try storedOperations(c, id: id)
                writes.cancel(path)
                let delete = try c.statement("DELETE FROM rtdb_ondisconnect WHERE session_id = ?1")
                delete.bind(1, text: id)
                try delete.run()
                try insertOperations(c, id, writes.update.map { $0.value.isNull ? .remove($0.path) : .set($0.path, $0.value) }, from: 0)
            }
        }
    }
}
