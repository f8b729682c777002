import RTDBCore
import RTDBEngine
import RTDBOffline
import RTDBRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Invocation {
    /// The remote database with its offline cache when the command line asks for one
    /// (offline.md §2.1); nil for the embedded file and for a remote database without
    /// `--persist`, which then behaves exactly as before. Nothing is opened here. `patient`
    /// (`sync`, whose work is the sending) gives each request the whole `--timeout` instead
    /// of auto mode's `--connect-timeout`. `persist` uses the cache even without `--persist`.
    func offlineDatabase(patient: Bool = false, persist: Bool = false) throws -> OfflineDatabase? {
        let url: String
        let fromEnv: Bool
        if let u = try value(Global.url) { (url, fromEnv) = (u, false) } else if let u = Invocation.env("RTDB_URL") { (url, fromEnv) = (u, true) } else { return nil }
        let target: RemoteTarget
        do {
            target = try RemoteTarget.parse(url, emulatorHost: Invocation.env("FIREBASE_DATABASE_EMULATOR_HOST"))
        } catch let e as RTDBError where fromEnv && e.message.hasPrefix("--url ") {
            // The URL came from the environment: say so (as `database()` does).
            throw RTDBError(e.code, "RTDB_URL " + e.message.dropFirst("--url ".count))
        }
        guard let options = try OfflineOptions.parse(self, target: target, persist: persist) else { return nil }
        let timeout = try timeoutSeconds()
        // Auto mode gives the server the connect timeout, then falls back to the cache.
        let requestTimeout = patient || options.mode != .auto ? timeout
            : timeout > 0 ? min(timeout, options.connectTimeoutSeconds) : options.connectTimeoutSeconds
        let remote = try remoteDatabase(url, timeoutSeconds: requestTimeout)
        var refresh: (() throws -> Credential)? = nil
        if let command = options.authCommand, Invocation.explicitCredential(self) == nil {
            let run = { try Invocation.runAuthCommand(command, timeoutSeconds: timeout) }
            if case .none = remote.credential { remote.credential = try run() }
            refresh = run
        }
        let cache = EmbeddedDatabase(file: options.file, timeoutSeconds: timeout)
        cache.attachCache(url: target.display, namespace: target.namespace)
        cache.cacheLimit = options.cacheSize
        // `session --client-side` holders that died: their operations join the queue now (one
        // failed opendir when there are none; a cache that cannot be written is left alone).
        _ = try? cache.reapDeadSessions()
        let mode: OfflineDatabase.Mode = options.mode == .offline ? .offline : options.mode == .online ? .online : .auto
        return OfflineDatabase(cache: cache, remote: remote, mode: mode, lockWaitSeconds: timeout, refreshCredential: refresh)
    }

    /// The credential option or variable given, if any (then `--auth-command` is not used).
    static func explicitCredential(_ inv: Invocation) -> String? {
        for o in [Global.accessToken, Global.auth, Global.credentials] where inv.has(o) { return o.long }
        for v in ["RTDB_ACCESS_TOKEN", "RTDB_AUTH", "GOOGLE_APPLICATION_CREDENTIALS"] where env(v) != nil { return v }
        return nil
    }

    /// Runs `/bin/sh -c command` and takes its output (trimmed) as an `auth=` token.
    static func runAuthCommand(_ command: String, timeoutSeconds: Double) throws -> Credential {
        let r = try Subprocess.run(["/bin/sh", "-c", command], input: [], outputLimit: 1 << 16,
                                   timeoutSeconds: timeoutSeconds > 0 ? timeoutSeconds : nil)
        guard r.status == 0 else {
            throw RTDBError(.unauthenticated, "--auth-command exited with status \(r.status); no credential")
        }
        var bytes = r.output[...]
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 { bytes.removeLast() }
        while let first = bytes.first, first == 0x0A || first == 0x0D || first == 0x20 || first == 0x09 { bytes.removeFirst() }
        let token = String(decoding: bytes, as: UTF8.self)
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw RTDBError(.unauthenticated, "--auth-command printed no token (one line of visible ASCII)")
        }
        return .auth(token)
    }
}
