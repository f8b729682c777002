import RTDBCore
import RTDBEngine
import RTDBRemote

/// Reads under `/.info` (firebase-semantics §11), which is client state, not data: the
/// embedded file is always "connected" with no clock offset; a `--url` target answers from a
/// realtime handshake (connected and the server's clock offset, or not connected).
enum InfoTree {
    static func value(_ path: Path, _ db: Database) throws -> Node {
        let info: Node
        if let remote = db as? RemoteDatabase {
            info = try remote.realtimeInfo()
        } else {
            info = Node.object([Node.Entry("connected", .bool(true)), Node.Entry("serverTimeOffset", .int(0))])
        }
        return info.child(at: Path(validatedKeys: Array(path.keys.dropFirst())))
    }

    /// `--shallow` of an `/.info` value: objects show `true` per child.
    static func shallow(_ node: Node) -> Node {
        guard case .object(let entries) = node else { return node }
        return .object(entries.map { Node.Entry($0.key, .bool(true)) })
    }
}
