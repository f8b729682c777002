import RTDBCore

/// `push --key-only` on the database file: its own clock and push-ID generator, as `push` uses.
extension EmbeddedDatabase: PushKeys {
    public func pushKey() throws -> PushKey { PushKey(key: newPushKey(), serverTimeOffset: nil) }
}
