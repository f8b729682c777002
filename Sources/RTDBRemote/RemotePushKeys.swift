import RTDBCore

/// `push --key-only` on a `--url` target: the local clock corrected by the server's clock
/// offset from one realtime handshake, as the SDKs make `push().key` with their connection's
/// offset. A server that cannot be reached leaves the local clock alone, as an SDK does before
/// its first connection; a credential the server refuses is an error (as for `/.info`).
extension RemoteDatabase: PushKeys {
    public func pushKey() throws -> PushKey {
        var offset: Int64? = nil
        if case .int(let o) = try realtimeInfo().child("serverTimeOffset") { offset = o }
        return PushKey(key: pushIDs.next(now: clock() + (offset ?? 0)), serverTimeOffset: offset)
    }
}
