import RTDBCore
import RTDBServer
import RTDBRules
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum ServeCommand {
    static let host = Valued<String>("--host", value: "ADDR", kind: .text, "address to listen on (default 127.0.0.1)")
    static let port = Valued<Int>("--port", value: "N", kind: .number, "port to listen on (default 9000; 0 picks a free port)") { text, source in
        try OptionValue.whole(text, source, in: 0...65_535)
    }
    static let dataDir = Valued<String>("--data-dir", value: "DIR", kind: .directory, "one database file per namespace: namespace NS is DIR/NS.db")
    static let secret = Valued<String>("--secret", value: "TOKEN", kind: .text, environment: "RTDB_SERVE_SECRET",
        "require this credential on every request (env RTDB_SERVE_SECRET or RTDB_SECRET)")
    static let secretFile = Valued<String>("--secret-file", value: "FILE", kind: .file,
        "read the credential of --secret from FILE (kept out of the command line)")
    static let insecure = Flag("--insecure", "allow listening on a non-loopback address without --secret")
    static let rules = Valued<String>("--rules", value: "FILE", kind: .file, "enforce the security rules in FILE (database.rules.json format, comments allowed)")
    static let projectID = Valued<String>("--project-id", value: "ID", kind: .text, "verify auth= ID tokens as Firebase does for project ID (needs --jwks)")
    static let jwks = Valued<String>("--jwks", value: "FILE", kind: .file, "Google's token-signing keys (a JWKS file) for --project-id")
    static let strictIndexes = Flag("--strict-indexes", "answer 400 \"Index not defined\" to an orderBy without .indexOn in the rules")
    static let tlsCert = Valued<String>("--tls-cert", value: "FILE", kind: .file, "serve https with this PEM certificate chain (needs --tls-key)")
    static let tlsKey = Valued<String>("--tls-key", value: "FILE", kind: .file, "the PEM private key (unencrypted) of --tls-cert")
    static let log = Flag("--log", "print one JSON line per request on stderr (method, path, status, ms)")
    static let noUI = Flag("--no-ui", "do not serve the data viewer at /.ui/")
    static let maxConnections = Valued<Int>("--max-connections", value: "N", kind: .number,
        "refuse new connections beyond N open ones (default 10000)") { text, source in
        try OptionValue.whole(text, source, in: 1...1_000_000)
    }
    static let loops = Valued<Int>("--loops", value: "N", kind: .number,
        "serve requests on N event loops, one thread each (default: one per core, at most 16)") { text, source in
        try OptionValue.whole(text, source, in: 1...16)
    }
    static let idleTimeout = Valued<Double>("--idle-timeout", value: "SECONDS", kind: .number,
        "drop a client that sends nothing for this long (default 60; streams excepted)") { text, source in
        try OptionValue.seconds(text, source, needs: "a number of seconds") { $0 > 0 && $0 <= 86_400 }
    }

    static let maxResponseBytes = Valued<Int>("--max-response-bytes", value: "BYTES", kind: .number,
        "answer a read larger than BYTES as Firebase answers one past its limit (default 268435456)") { text, source in
        try OptionValue.whole(text, source, in: 1...Limits.maxWriteBytes, of: "bytes")
    }
    static let maxWriteBytes = Valued<Int>("--max-write-bytes", value: "BYTES", kind: .number,
        "refuse a write body larger than BYTES; writeSizeLimit levels scale with it (default 268435456)") { text, source in
        try OptionValue.whole(text, source, in: 256...Limits.maxWriteBytes, of: "bytes")
    }
    static let maxBodyBytesInFlight = Valued<Int>("--max-body-bytes-in-flight", value: "BYTES", kind: .number,
        "answer 503 to a request whose body would take the bodies being received past BYTES (default 268435456)") { text, source in
        try OptionValue.whole(text, source, in: 1...(1 << 40), of: "bytes")
    }
    static let maxListens = Valued<Int>("--max-listens", value: "N", kind: .number,
        "refuse listens and streams beyond N open on the whole server (default 100000)") { text, source in
        try OptionValue.whole(text, source, in: 1...100_000_000)
    }
    static let writeSizeLimit = Valued<WriteSizeLimit>("--write-size-limit", value: "LEVEL",
        "the writeSizeLimit of writes that name none: tiny, small, medium, large or unlimited (default)")

    static let spec = CommandSpec(
        name: "serve", summary: "serve the database over the Firebase REST and streaming protocol",
        usage: "rtdb serve [--host ADDR] [--port N] [--data-dir DIR] [--secret TOKEN] [--rules FILE] [--tls-cert FILE --tls-key FILE] [--log]",
        options: [host.spec, port.spec, dataDir.spec, secret.spec, secretFile.spec, insecure.spec, rules.spec, projectID.spec, jwks.spec,
                  strictIndexes.spec, tlsCert.spec, tlsKey.spec, log.spec, noUI.spec, maxConnections.spec, loops.spec, idleTimeout.spec,
                  maxResponseBytes.spec, maxWriteBytes.spec, writeSizeLimit.spec, maxBodyBytesInFlight.spec, maxListens.spec],
        exclusions: { [.pair(secret, secretFile)] },
        description: "Serves the database file (or, with --data-dir, one file per namespace) the way the Firebase Realtime "
            + "Database emulator does: the REST API on /PATH.json, and Server-Sent Events streams for "
            + "'Accept: text/event-stream'. Point firebase-admin (FIREBASE_DATABASE_EMULATOR_HOST), curl or another "
            + "Firebase client at it. Local rtdb commands keep working on the same file; their writes reach the "
            + "server's streams. When it is ready it prints {\"event\":\"listening\",\"url\":…} on stdout; the url works as "
            + "printed with --url (a URL without ?ns= gets the namespace the server picks for it), and \"ui\" is the "
            + "address of the data viewer, a page for a browser that shows the tree live and edits it through the "
            + "REST API (a browser opening the server's root is sent there; --no-ui turns it off). "
            + "On a loopback address without --secret every request is allowed (as in the emulator, 'Authorization: "
            + "Bearer owner' included); with --secret only requests that carry it (auth=, access_token= or "
            + "'Authorization: Bearer') are. A non-loopback address needs --secret, or --insecure on purpose. "
            + "With --rules FILE, reads and writes of everyone but the admin are checked by Firebase's security "
            + "rules; PUT /.settings/rules.json (admin only) replaces them at run time and stores them in the database file, "
            + "where a restarted server finds them again (--rules at start wins over them). The admin is the secret, or "
            + "without --secret on a loopback address any 'Authorization: Bearer' token (the emulator's 'owner'). "
            + "auth=ID_TOKEN signs a user in: without --project-id unsigned tokens are trusted as the emulator does "
            + "(alg none, as @firebase/rules-unit-testing sends); with it, tokens must be valid ID tokens of the "
            + "project signed by a key of --jwks (fetch it from https://www.googleapis.com/service_accounts/v1/jwk/"
            + "securetoken@system.gserviceaccount.com). A rules file with an error stops the server with status 3. "
            + "With --tls-cert and --tls-key it serves https instead of http (TLS 1.2 or later, OpenSSL 3's libssl "
            + "loaded at start); the url then starts with https://. TLS keeps the traffic private, it does not "
            + "decide who may connect: a non-loopback address still needs --secret. "
            + "SIGINT ends it with status 130, SIGTERM with 143, after answering writes in progress.",
        examples: ["rtdb serve --port 9000",
                   "FIREBASE_DATABASE_EMULATOR_HOST=127.0.0.1:9000 python3 app.py",
                   "curl 'http://127.0.0.1:9000/users.json?ns=demo'",
                   "curl -N -H 'Accept: text/event-stream' 'http://127.0.0.1:9000/users.json'",
                   "RTDB_SERVE_SECRET=s3cret rtdb serve --host 0.0.0.0 --data-dir ./dbs",
                   "rtdb serve --host 0.0.0.0 --secret-file /run/secrets/rtdb",
                   "rtdb serve --rules database.rules.json --strict-indexes",
                   "rtdb serve --tls-cert server.pem --tls-key server.key --secret \"$TOKEN\" --host 0.0.0.0"],
        run: run)

    static func run(_ inv: Invocation) throws {
        _ = try inv.arguments([])
        if let (_, source) = try inv.remoteURL() {
            throw inv.usageError("serve: serves the embedded database; \(source.rawValue) names a remote one"
                                 + (source == .environment ? " (--db FILE serves a file all the same)" : ""))
        }
        try inv.refuseRemoteOnlyOptions()
        var options = Server.Options()
        options.host = try inv.value(host) ?? "127.0.0.1"
        if let p = try inv.value(port) { options.port = p }
        if let n = try inv.value(maxConnections) { options.maxConnections = n }
        if let n = try inv.value(loops) { options.loops = n }
        if let t = try inv.value(idleTimeout) { options.idleTimeoutMillis = Int64(t * 1000) }
        var sizes = ServeLimits()
        if let n = try inv.value(maxResponseBytes) { sizes.maxResponseBytes = n }
        if let n = try inv.value(maxWriteBytes) { sizes.maxWriteBytes = n }
        if let l = try inv.value(writeSizeLimit) { sizes.defaultWriteSizeLimit = l }
        options.sizes = sizes
        if let n = try inv.value(maxBodyBytesInFlight) { options.maxBodyBytesInFlight = n }
        if let n = try inv.value(maxListens) { options.maxListens = n }
        options.log = inv.has(log)
        options.viewer = !inv.has(noUI)
        options.secret = try serveSecret(inv)
        if options.secret == nil && !inv.has(insecure) && !ServeConfiguration.isLoopback(host: options.host) {
            throw inv.usageError("serve: \(options.host) is not a loopback address: give --secret TOKEN (or --insecure to serve everyone)")
        }
        let dbFile = try inv.value(Global.db)   // (refuses --db "")
        try configureTLS(inv, &options)
        let timeout = try inv.timeoutSeconds()
        let security = try securityOptions(inv, host: options.host, secret: options.secret)

        let namespaces: ServerNamespaces
        let folder: String
        let where_: String
        if let dir = try inv.value(dataDir) {
            if dir.isEmpty { throw inv.usageError("--data-dir needs a folder") }
            let abs = absolute(dir)
            try makeFolders(abs)
            namespaces = ServerNamespaces(folder: abs, timeoutSeconds: timeout)
            folder = abs
            where_ = #","data_dir":"# + quoted(abs)
        } else {
            let file = absolute(Invocation.databaseFile(option: dbFile))
            folder = String(file[..<(file.lastIndex(of: "/") ?? file.startIndex)])
            try makeFolders(folder)
            namespaces = ServerNamespaces(file: file, timeoutSeconds: timeout)
            where_ = #","db":"# + quoted(file)
        }
        namespaces.prepare = Invocation.preparePlainFile
        let server = try ServeConfiguration(options: options, namespaces: namespaces, watchFolder: folder.isEmpty ? "/" : folder,
                                            security: security).start()
        let out = inv.output(streaming: true)
        let ui = options.viewer ? #","ui":"# + quoted(server.url + "/.ui/") : ""
        try out.raw(#"{"event":"listening","url":"# + quoted(server.url) + ui + where_ + "}\n")
        try out.flush()
        let signal = try server.run()
        throw ExitStatus(128 + signal)
    }

    /// The credential the server requires: `--secret`, else the first line of `--secret-file`,
    /// else `$RTDB_SERVE_SECRET`, else `$RTDB_SECRET`. No message quotes it.
    static func serveSecret(_ inv: Invocation) throws -> String? {
        if let file = try inv.value(secretFile) {
            if file.isEmpty { throw inv.usageError("--secret-file needs a file name") }
            let bytes = try readFile(file, limit: 65_536)
            let line = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first ?? []
            var token = String(decoding: line, as: UTF8.self)
            if token.hasSuffix("\r") { token.removeLast() }
            if token.isEmpty { throw inv.usageError("--secret-file \(file) holds no credential on its first line") }
            return token
        }
        guard let s = try inv.setting(secret) ?? Invocation.env("RTDB_SECRET") else { return nil }
        if s.isEmpty { throw inv.usageError("--secret needs a non-empty token") }
        return s
    }

    /// Rules, token verification and index options, all checked before anything is opened.
    static func securityOptions(_ inv: Invocation, host: String, secret: String?) throws -> SecurityOptions {
        var security = SecurityOptions()
        security.strictIndexes = inv.has(strictIndexes)
        security.ownerIsAdmin = secret == nil && ServeConfiguration.isLoopback(host: host)
        if let file = try inv.value(rules) {
            if file.isEmpty { throw inv.usageError("--rules needs a file name") }
            security.rules = try RulesCommand.load(file)
        }
        let project = try inv.value(projectID)
        let jwks = try inv.value(ServeCommand.jwks)
        if let project {
            guard !project.isEmpty, project.utf8.count <= 128,
                  project.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D }) else {
                throw inv.usageError("--project-id needs a Firebase project ID (lowercase letters, digits and '-'), not \(Limits.quote(project))")
            }
            guard let jwks, !jwks.isEmpty else { throw inv.usageError("--project-id needs --jwks FILE: the keys ID tokens are checked against") }
            let bytes = try readFile(jwks, limit: 1 << 20)
            security.projectID = project
            security.keys = try JWKSKeys(json: String(decoding: bytes, as: UTF8.self))
            security.verifier = LibCryptoVerifier()
        } else if jwks != nil {
            throw inv.usageError("--jwks is only used with --project-id")
        }
        return security
    }

    /// The certificate and key of --tls-cert/--tls-key, checked before anything listens: a
    /// missing, unreadable, mismatched or encrypted file is a usage error naming it.
    static func configureTLS(_ inv: Invocation, _ options: inout Server.Options) throws {
        let cert = try inv.value(tlsCert), key = try inv.value(tlsKey)
        if cert == nil && key == nil { return }
        guard let cert, let key else {
            throw inv.usageError(cert == nil ? "--tls-key needs --tls-cert FILE as well" : "--tls-cert needs --tls-key FILE as well")
        }
        if cert.isEmpty { throw inv.usageError("--tls-cert needs a file name") }
        if key.isEmpty { throw inv.usageError("--tls-key needs a file name") }
        do {
            try options.useTLS(certificateFile: cert, keyFile: key)
        } catch let e as TLSSetupError {
            throw inv.usageError("serve: \(e.message)")
        }
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buf = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buf, buf.count) != nil else { return path }
        let cwd = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (cwd == "/" ? "" : cwd) + "/" + (path.hasPrefix("./") ? String(path.dropFirst(2)) : path)
    }

    static func makeFolders(_ dir: String) throws {
        var cur = ""
        for part in dir.split(separator: "/") {
            cur += "/" + part
            if mkdir(cur, 0o755) != 0 && errno != EEXIST {
                let e = errno
                throw RTDBError(e == EACCES || e == EPERM ? .permissionDenied : .unavailable,
                                "cannot create folder \(cur): \(String(cString: strerror(e)))")
            }
        }
    }

    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        JSONWriter.appendString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
