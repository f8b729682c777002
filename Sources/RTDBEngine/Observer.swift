import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Follows one location of an embedded database across processes. It polls SQLite's
/// `data_version` (a cheap shared-memory check that changes when any other connection commits);
/// on a change it reads the write log since its last position and re-reads only the children
/// the new writes touched, or the whole location when a write covered it.
struct Observer {
    let database: EmbeddedDatabase
    let path: Path

    func run(idle: () throws -> Bool, _ onChange: (Node, [String]?) throws -> Bool) throws {
        var value: Node = .null
        var seq: Int64 = 0
        var version: Int64? = nil
        if let snap = try database.snapshot(path) {
            seq = snap.seq
            value = snap.value
            version = try database.dataVersion()
        }
        if try !onChange(value, nil) { return }
        var lastIdle = monotonicNanos()
        while true {
            usleep(database.pollMicros)
            let now = monotonicNanos()
            if now - lastIdle >= 50_000_000 {
                lastIdle = now
                if try !idle() { return }
            }
            guard let v = try database.dataVersion() else { continue }   // no file yet
            if v == version { continue }
            version = v
            guard let change = try database.changes(at: path, after: seq, current: value) else { continue }
            seq = change.seq
            if let keys = change.keys, keys.isEmpty { continue }   // nothing under this location
            value = change.value
            if try !onChange(value, change.keys) { return }
        }
    }
}
