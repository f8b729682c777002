import RTDBCore
import RTDBEngine
import RTDBOffline
import RTDBRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a command line's remote database is reached through its offline cache.
enum CacheUse {
    /// When the command line asks for the cache (`--persist`, `--cache`, `--offline`, their
    /// variables): data commands.
    case asked
    /// Never: the server itself (the connection's state under `/.info`, a session the server
    /// holds, indexes, completion).
    case never
    /// Whatever the command line says (`session --client-side` keeps its writes there).
    case always
}

/// The one place that opens a command line's target and asks it what else it can do. A
/// command gets one `Database` here, the embedded file, the remote database, or the remote
/// database through its offline cache, and never learns which; what only
/// some targets can do it asks for through `capability(_:of:missing:)`. Nothing is opened
/// before the command line has been checked.
extension Invocation {
    /// The target: the remote database for --url / RTDB_URL (through its offline cache as
    /// `cache` says), else the embedded file. `reading`: a terminal on stderr is told when the
    /// database file does not exist yet (the command still prints what an empty database
    /// holds). `watching`: a reader of stdout that goes away ends a watch at once; a watch with
    /// `--online` watches the server, no cache.
    func database(reading: Bool = false, watching: Bool = false, cache: CacheUse = .asked) throws -> Database {
        switch cache {
        case .asked:
            if let offline = try offlineDatabase() {
                if watching && offline.mode == .online { return try directDatabase(reading: reading, watching: watching) }
                if watching { offline.hangupFD = 1 }
                return offline
            }
            return try directDatabase(reading: reading, watching: watching)
        case .never:
            return try directDatabase(reading: reading, watching: watching)
        case .always:
            let direct = try directDatabase(reading: reading, watching: watching)
            return try offlineDatabase(persist: true) ?? direct
        }
    }

    /// The target when it is a remote database through its offline cache, else nil (nothing
    /// else is opened). `patient` (`sync`, whose work is the sending) gives each request the
    /// whole `--timeout` instead of auto mode's `--connect-timeout`.
    func cachedDatabase(patient: Bool = false) throws -> Database? {
        try offlineDatabase(patient: patient)
    }

    /// `db` as `C` when it can do what `C` names, else nil.
    func capability<C>(_ type: C.Type, of db: Database) -> C? {
        db.capability(type)
    }

    /// `db` as `C`, or `missing` when it cannot do what `C` names (or there is no such target).
    func capability<C>(_ type: C.Type, of db: Database?, missing: @autoclosure () -> RTDBError) throws -> C {
        guard let db, let c = capability(type, of: db) else { throw missing() }
        return c
    }

    // MARK: opening

    /// Options that only a remote target uses: credentials, and the offline cache with its
    /// settings. Given on the command line without --url / RTDB_URL they are a usage error,
    /// never silently dropped (their environment variables apply to remote targets only, so a
    /// shell that exports one still runs local commands).
    static let remoteOnly = [Global.auth.spec, Global.accessToken.spec, Global.credentials.spec, Global.cacert.spec,
                             Global.persist.spec, Global.cache.spec, Global.offline.spec, Global.online.spec,
                             Global.cacheSize.spec, Global.connectTimeout.spec, Global.authCommand.spec]

    /// The remote database's URL and where it came from, or nil for the embedded file: --url,
    /// else RTDB_URL unless --db names a file (an option beats a variable: `--db FILE` in a
    /// shell that exports RTDB_URL means the file).
    func remoteURL() throws -> (url: String, source: RemoteTarget.URLSource)? {
        if let url = try value(Global.url) { return (url, .option) }
        if has(Global.db) { return nil }
        return Invocation.env("RTDB_URL").map { ($0, .environment) }
    }

    /// `error` as the command reports it: when the target came from RTDB_URL, a database that
    /// cannot be reached says so, since the variable may be one the user forgot they exported.
    func attributed(_ error: RTDBError) -> RTDBError {
        guard error.code == .unavailable || error.code == .timeout,
              case .environment? = (try? remoteURL())?.source else { return error }
        var e = error
        e.message += " (the database RTDB_URL names; --db FILE works on a database file instead)"
        return e
    }

    /// The usage error for an option of `remoteOnly` on a command line whose target is the
    /// database file (a command, or `serve`).
    func refuseRemoteOnlyOptions() throws {
        guard let option = Invocation.remoteOnly.first(where: { has($0) }) else { return }
        throw usageError(has(Global.db)
            ? "\(option.long) is for remote databases, not the database file --db names: leave it out"
            : "\(option.long) is for remote databases: give --url URL (or RTDB_URL) too, or leave it out")
    }

    /// The remote database itself for --url / RTDB_URL, else the embedded file.
    private func directDatabase(reading: Bool, watching: Bool) throws -> Database {
        // (`--db ""` is refused: SQLite would treat "" as a throw-away temporary database.)
        let dbFile = try value(Global.db)
        if let (url, source) = try remoteURL() {
            return try remoteDatabase(url, from: source)
        }
        try refuseRemoteOnlyOptions()
        let file = Invocation.databaseFile(option: dbFile)
        let ignored = dbFile != nil && Invocation.env("RTDB_URL") != nil ? "; RTDB_URL is not used" : ""
        verbose("database file \(file) (\(dbFile != nil ? "--db" : Invocation.env("RTDB_DB") != nil ? "RTDB_DB" : "the default")\(ignored))"
                + (Invocation.exists(file) ? "" : "; it does not exist yet"))
        if reading && !quiet && Diagnostics.stderrIsTerminal && !Invocation.exists(file) {
            Diagnostics.note("the database file \(file) does not exist yet (nothing has been written to it)")
        }
        let db = EmbeddedDatabase(file: file, timeoutSeconds: try timeoutSeconds())
        Invocation.preparePlainFile(db)
        // A reader of stdout that goes away ends the stream at once, not at the next beat.
        if watching { db.hangupFD = 1 }
        return db
    }

    /// Makes a handle on a database file (`--db`, `serve`) refuse to write into an offline
    /// cache, which is written only through its remote database.
    static func preparePlainFile(_ db: EmbeddedDatabase) {
        db.companion = CacheFileGuard()
    }

    static func exists(_ file: String) -> Bool {
        var st = stat()
        return stat(file, &st) == 0
    }

    private func remoteDatabase(_ url: String, from source: RemoteTarget.URLSource, timeoutSeconds: Double? = nil) throws -> RemoteDatabase {
        let emulatorHost = Invocation.env("FIREBASE_DATABASE_EMULATOR_HOST")
        let target = try RemoteTarget.parse(url, from: source, emulatorHost: emulatorHost)
        let credential = try Credential.resolve(
            accessToken: value(Global.accessToken), auth: value(Global.auth), credentials: value(Global.credentials), env: Invocation.env,
            readFile: { file in
                // The key file comes from --credentials, else the variable: a file that cannot be read names it.
                do { return try readFile(file, limit: 1 << 20) } catch var e as RTDBError {
                    e.message = "\(has(Global.credentials) ? Global.credentials.long : "GOOGLE_APPLICATION_CREDENTIALS"): \(e.message)"
                    throw e
                }
            },
            cacheFolder: ServiceAccount.defaultCacheFolder(env: Invocation.env), now: RemoteDatabase.wallClock)
        var caFile: String? = nil
        if let f = try setting(Global.cacert) {
            guard access(f, R_OK) == 0 else {
                throw usageError("--cacert \(Limits.quote(f)): cannot read it: \(String(cString: strerror(errno)))")
            }
            caFile = f
        }
        if has(Global.verbose) {
            let redirected = target.emulator && target.namespaceSource == .productionHost
            verbose("remote database \(target.display) (\(source.rawValue)\(redirected ? ", sent to the emulator FIREBASE_DATABASE_EMULATOR_HOST names" : "")): "
                    + "namespace \(target.namespace) (\(target.namespaceSource.explanation)); \(credential)"
                    + (caFile.map { "; also trusting \($0)" } ?? ""))
        }
        return RemoteDatabase(target: target, credential: credential, timeoutSeconds: try timeoutSeconds ?? self.timeoutSeconds(), caFile: caFile)
    }

    /// The remote database through its offline cache when the command line asks for one (or
    /// `persist`); nil for the embedded file and for a remote database without it, which then
    /// behaves exactly as without a cache. Nothing is opened here.
    private func offlineDatabase(patient: Bool = false, persist: Bool = false) throws -> OfflineDatabase? {
        guard let (url, source) = try remoteURL() else { return nil }
        let target = try RemoteTarget.parse(url, from: source, emulatorHost: Invocation.env("FIREBASE_DATABASE_EMULATOR_HOST"))
        guard let options = try OfflineOptions.parse(self, target: target, persist: persist) else { return nil }
        let timeout = try timeoutSeconds()
        // Auto mode gives the server the connect timeout, then falls back to the cache.
        let requestTimeout = patient || options.mode != .auto ? timeout
            : timeout > 0 ? min(timeout, options.connectTimeoutSeconds) : options.connectTimeoutSeconds
        let remote = try remoteDatabase(url, from: source, timeoutSeconds: requestTimeout)
        verbose("offline cache \(options.file) (\(options.mode == .offline ? "offline: the server is never contacted" : options.mode == .online ? "online: the server is required" : "auto: the cache answers when the server cannot"))")
        var refresh: (() throws -> Credential)? = nil
        // An option beats a variable: --auth-command on the command line gives way to a credential
        // option only; RTDB_AUTH_COMMAND to any credential option or variable.
        let commandIsOption = has(Global.authCommand)
        if let command = options.authCommand, Invocation.explicitCredential(self, options: commandIsOption) == nil {
            let run = { try Invocation.runAuthCommand(command, timeoutSeconds: timeout) }
            var none = false
            if case .none = remote.credential { none = true }
            if commandIsOption || none { remote.credential = try run() }
            refresh = run
        }
        let cache = CacheStore(EmbeddedDatabase(file: options.file, timeoutSeconds: timeout),
                               url: target.display, namespace: target.namespace, limit: options.cacheSize)
        // `session --client-side` holders that died: their operations join the queue now (one
        // failed opendir when there are none; a cache that cannot be written is left alone).
        _ = try? cache.db.reapDeadSessions()
        let db = OfflineDatabase(cache: cache, remote: remote, mode: options.mode, lockWaitSeconds: timeout, refreshCredential: refresh)
        // Whatever the command, a queued write it sends and the server rejects is told.
        FlushReports.attach(to: db)
        return db
    }

    /// The credential option or variable given, if any (then `--auth-command` is not used);
    /// with `options`, only a credential option counts.
    static func explicitCredential(_ inv: Invocation, options: Bool = false) -> String? {
        for o in [Global.accessToken, Global.auth, Global.credentials] where inv.has(o) { return o.long }
        if options { return nil }
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
