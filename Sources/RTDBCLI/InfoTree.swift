import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `/.info` is client state, not data: a target with
/// a connection (`ConnectionInfo`) tells it; one without (the embedded file) is always
/// connected with no clock offset.
enum InfoTree {
    /// The value at `path` (under `/.info`) now.
    static func value(_ path: Path, _ info: ConnectionInfo?) throws -> Node {
        try (info?.connectionInfo() ?? InfoTree.alwaysConnected).child(at: below(path))
    }

    static let alwaysConnected = Node.object([Node.Entry("connected", .bool(true)), Node.Entry("serverTimeOffset", .int(0))])

    /// `path` relative to `/.info`.
    static func below(_ path: Path) -> Path { Path(validatedKeys: Array(path.keys.dropFirst())) }
}

/// `watch`'s views: of the data through the database's own `observeViews`, or under `/.info`
/// of the connection, as it comes and goes (a target without one: one value, then nothing).
enum InfoWatch {
    static func observe(_ db: Database, _ info: ConnectionInfo?, _ path: Path, query: Query, idle: () throws -> Bool,
                        onChange: (ObservedView) throws -> Bool) throws {
        guard path.isInfo else { return try db.observeViews(path, query: query, idle: idle, onChange: onChange) }
        guard let info else {
            guard try onChange(ObservedView(value: try InfoTree.value(path, nil), changedKeys: nil, complete: nil)) else { return }
            while try idle() { usleep(250_000) }
            return
        }
        let below = InfoTree.below(path)
        var last: Node? = nil
        try info.observeConnection(idle: idle) { node in
            // Only a change of the watched value is one.
            let value = node.child(at: below)
            if let l = last, l.same(as: value) { return true }
            last = value
            return try onChange(ObservedView(value: value, changedKeys: nil, complete: nil))
        }
    }
}
