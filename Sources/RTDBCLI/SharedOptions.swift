import RTDBCore

/// The global options, each declared once: `Registry.globalOptions` lists their specs for
/// parsing, help, the man page and the completions; commands read them through these constants.
enum Global {
    static let db = Valued<String>("--db", value: "FILE", kind: .file,
        "embedded database file (env RTDB_DB; default $XDG_DATA_HOME/rtdb/default.db)") { text, source in
        // SQLite would treat "" as a throw-away temporary database: writes would vanish.
        try OptionValue.fileName(text, source)
    }
    static let url = Valued<String>("--url", value: "URL", kind: .text,
        "remote database: https://NAME.firebaseio.com, https://NAME.REGION.firebasedatabase.app or http://HOST:PORT[?ns=NAME] (env RTDB_URL)")
    static let auth = Valued<String>("--auth", value: "TOKEN", kind: .text,
        "Firebase ID token or database secret, sent as auth= (env RTDB_AUTH)")
    static let accessToken = Valued<String>("--access-token", value: "TOKEN", kind: .text,
        "OAuth2 access token, sent as Authorization: Bearer (env RTDB_ACCESS_TOKEN)")
    static let credentials = Valued<String>("--credentials", value: "FILE", kind: .file,
        "Google service-account key file (env GOOGLE_APPLICATION_CREDENTIALS)")
    static let cacert = Valued<String>("--cacert", value: "FILE", kind: .file, environment: "RTDB_CACERT",
        "also trust the CA certificates in FILE (PEM) for https (env RTDB_CACERT)")
    static let timeout = Valued<Double>("--timeout", value: "SECONDS", kind: .number, environment: "RTDB_TIMEOUT",
        "give up on an operation (or a locked file) after this long (env RTDB_TIMEOUT; default 10)") { text, source in
        try OptionValue.seconds(text, source, needs: "a number of seconds") { $0 >= 0 }
    }
    static let persist = Flag("--persist",
        "keep an offline cache of the --url database: reads fall back to it, writes are queued and sent in order (env RTDB_PERSIST=1)")
    static let cache = Valued<String>("--cache", value: "FILE", kind: .file, environment: "RTDB_CACHE",
        "the offline cache file; implies --persist (env RTDB_CACHE; default $XDG_DATA_HOME/rtdb/remote/HOST_NS.db)") { text, source in
        try OptionValue.fileName(text, source)
    }
    static let offline = Flag("--offline",
        "never contact the server: answer from the cache and queue writes; implies --persist (env RTDB_OFFLINE=1)")
    static let online = Flag("--online",
        "with a cache: the server is required; reads come from it, writes are acknowledged before exit, nothing stays queued")
    static let cacheSize = Valued<Int>("--cache-size", value: "BYTES", kind: .number, environment: "RTDB_CACHE_SIZE",
        "size limit of the cache, 1048576 to 104857600 (env RTDB_CACHE_SIZE; default 10485760)") { text, source in
        let range = OfflineOptions.cacheSizeRange
        return try OptionValue.whole(text, source, in: range, of: "bytes")
    }
    static let connectTimeout = Valued<Double>("--connect-timeout", value: "SECONDS", kind: .number, environment: "RTDB_CONNECT_TIMEOUT",
        "with a cache, use it when the server has not answered after this long (env RTDB_CONNECT_TIMEOUT; default 3)") { text, source in
        try OptionValue.seconds(text, source, needs: "a positive number of seconds") { $0 > 0 }
    }
    /// (Its variable is read by `OfflineOptions`: a blank RTDB_AUTH_COMMAND counts as unset.)
    static let authCommand = Valued<String>("--auth-command", value: "CMD", kind: .command,
        "run /bin/sh -c CMD for a credential when no --auth is given, and once more after a token error (env RTDB_AUTH_COMMAND)") { text, source in
        if text.allSatisfy({ $0 == " " || $0 == "\t" }) { throw RTDBError(.usage, "\(source) needs a command to run") }
        return text
    }
    static let pretty = Flag("--pretty", "indent JSON output for humans")
    static let quiet = Flag("--quiet", short: "-q", "print nothing on success")
    static let verbose = Flag("--verbose", short: "-v",
        "say on stderr what rtdb works on: the database file, or the URL with its namespace and where that came from")
    static let help = Flag("--help", short: "-h", "show help for the command")
    static let version = Flag("--version", "print the version")
}

extension Registry {
    public static let globalOptions: [OptionSpec] = [
        Global.db.spec, Global.url.spec, Global.auth.spec, Global.accessToken.spec, Global.credentials.spec,
        Global.cacert.spec, Global.timeout.spec, Global.persist.spec, Global.cache.spec, Global.offline.spec,
        Global.online.spec, Global.cacheSize.spec, Global.connectTimeout.spec, Global.authCommand.spec,
        Global.pretty.spec, Global.quiet.spec, Global.verbose.spec, Global.help.spec, Global.version.spec,
    ]

    /// Checked after the command's own exclusions.
    static let globalExclusions: [Exclusion] = [.pair(Global.offline, Global.online), .pair(Global.db, Global.url)]

    public static let queryOptions: [OptionSpec] = [
        QueryOptions.orderByKey.spec, QueryOptions.orderByValue.spec, QueryOptions.orderByChild.spec,
        QueryOptions.orderByPriority.spec, QueryOptions.startAt.spec, QueryOptions.startAfter.spec, QueryOptions.endAt.spec,
        QueryOptions.endBefore.spec, QueryOptions.equalTo.spec, QueryOptions.startKey.spec, QueryOptions.endKey.spec,
        QueryOptions.limitToFirst.spec, QueryOptions.limitToLast.spec,
    ]

    /// `get`, `query` and `watch` print values; `--raw` prints a string value as its bare text.
    static let rawOption = Flag("--raw", short: "-r", "print a string value as its text, without quotes (other values as JSON)")

    /// `get` and `query` with an offline cache: print what the cache holds of an incomplete answer.
    static let partialOption = Flag("--partial", "with an offline cache holding only part of the answer: print that part and exit 10 (incomplete)")
}

/// The query options of `query`, `watch` and `keep`; `QueryOptions.parse` reads them.
extension QueryOptions {
    static let orderByKey = Flag("--order-by-key", "order children by key (the default)")
    static let orderByValue = Flag("--order-by-value", "order children by their own value")
    static let orderByChild = Valued<String>("--order-by-child", value: "CHILD", kind: .child,
        "order children by the value at CHILD (a relative path)")
    static let orderByPriority = Flag("--order-by-priority", "order children by priority: none first, then numbers, then strings")
    // Bounds stay text: whether they are JSON or a key depends on the order (`QueryOptions.parse`).
    static let startAt = Valued<String>("--start-at", value: "V", kind: .json, "lower bound, inclusive")
    static let startAfter = Valued<String>("--start-after", value: "V", kind: .json, "lower bound, exclusive")
    static let endAt = Valued<String>("--end-at", value: "V", kind: .json, "upper bound, inclusive")
    static let endBefore = Valued<String>("--end-before", value: "V", kind: .json, "upper bound, exclusive")
    static let equalTo = Valued<String>("--equal-to", value: "V", kind: .json, "only children whose sort value is V")
    static let startKey = Valued<String>("--start-key", value: "K", kind: .key,
        "key argument of the lower bound (among equal values, from key K)")
    static let endKey = Valued<String>("--end-key", value: "K", kind: .key,
        "key argument of the upper bound (among equal values, up to key K)")
    // Firebase's SDKs refuse limits below 1; a window of nothing is a mistake, not a query.
    static let limitToFirst = Valued<Int>("--limit-to-first", value: "N", kind: .number,
        "keep the first N children of the ordered result (N ≥ 1)") { text, source in
        try OptionValue.whole(text, source, atLeast: 1)
    }
    static let limitToLast = Valued<Int>("--limit-to-last", value: "N", kind: .number,
        "keep the last N children of the ordered result (N ≥ 1)") { text, source in
        try OptionValue.whole(text, source, atLeast: 1)
    }

    /// In the order they are checked.
    static let exclusions: [Exclusion] = [
        .atMostOne("order option", of: [orderByKey, orderByValue, orderByChild, orderByPriority]),
        .pair(limitToFirst, limitToLast),
        .first(equalTo, excludes: [startAt, startAfter, endAt, endBefore]),
        .pair(startAt, startAfter),
        .pair(endAt, endBefore),
    ]
}
