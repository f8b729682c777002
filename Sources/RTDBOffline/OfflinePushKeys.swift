import RTDBCore

/// `push --key-only` through an offline cache: the cache's estimate of the server's time (the
/// clock offset it measured last), which its queued pushes use too. Unless `--offline`, the
/// offset is measured again first (a realtime handshake, kept in the cache); an unreachable
/// server leaves the one measured before.
extension OfflineDatabase: PushKeys {
    public func pushKey() throws -> PushKey {
        if mode != .offline { _ = try connectionInfo() }
        let offset = try cache.serverTimeOffset()
        var ids = PushIDGenerator()
        return PushKey(key: ids.next(now: estimatedServerTime()), serverTimeOffset: offset)
    }
}
