/// `rtdb help guide`: the calls of Firebase's guides for Apple platforms (reading and writing
/// data, lists, offline capabilities) and the command that does the same, then the guides' own
/// idioms as shell lines. The README's "Coming from the Firebase guides" table is checked
/// against `rows` (DocsAgreementTests), so this is the one list.
enum Guide {
    struct Row {
        /// The SDK call as the guides write it.
        let call: String
        /// A command line that does it, as it would be typed.
        let command: String
        /// What to know besides (empty: nothing).
        let note: String
    }

    static let rows: [Row] = [
        Row(call: "setValue(_:)", command: #"rtdb set /users/ada '{"name":"Ada"}'"#,
            note: "replaces the value; --file FILE or - reads it from a file or stdin"),
        Row(call: "updateChildValues(_:)", command: #"rtdb update /users/ada '{"age":36,"city/name":"London"}'"#,
            note: "keys are relative paths; all of them are written or none"),
        Row(call: "childByAutoId() + setValue(_:)", command: #"rtdb push /posts '{"title":"Hello"}'"#,
            note: "prints the new key; push --key-only -r makes one without writing (childByAutoId().key)"),
        Row(call: "removeValue()", command: "rtdb remove /posts/KEY", note: ""),
        Row(call: "getData(completion:)", command: "rtdb get /users/ada",
            note: "with --url and --persist: the server's value, or the cache's when the server cannot be reached"),
        Row(call: "observeSingleEvent(of: .value)", command: "rtdb get /users/ada",
            note: "or rtdb watch PATH --count 1, which prints the value event once"),
        Row(call: "observe(.value)", command: "rtdb watch /users/ada", note: "one JSON line per value event"),
        Row(call: "observe(.childAdded), .childChanged, .childRemoved, .childMoved",
            command: "rtdb watch /posts --child-events",
            note: "-n skips the child_added of children already there"),
        Row(call: "removeAllObservers()", command: "rtdb watch /posts --count 10",
            note: "a watch ends with --count N, Ctrl-C (status 130) or SIGTERM (143)"),
        Row(call: "runTransactionBlock(_:)", command: "rtdb tx /counter -- jq '. + 1'",
            note: "the command reads the current value on stdin and prints the new one; it runs again when "
                + "another writer got there first; exiting non-zero aborts"),
        Row(call: "ServerValue.increment(_:)", command: "rtdb increment /posts/KEY/likes 1", note: ""),
        Row(call: "ServerValue.timestamp()", command: "rtdb set /users/ada/lastSeen --server-timestamp",
            note: #"or {".sv":"timestamp"} anywhere in a value"#),
        Row(call: "queryOrdered(byChild:) + queryLimited(toLast:)",
            command: "rtdb query /users --order-by-child age --limit-to-last 3",
            note: "also --order-by-key, --order-by-value, --order-by-priority, --start-at, --start-after, "
                + "--end-at, --end-before, --equal-to, --limit-to-first; watch takes the same options"),
        Row(call: "keepSynced(true)", command: "rtdb --url URL --persist keep add /posts",
            note: "the cache keeps the location synced (rtdb sync) and never purges it"),
        Row(call: "isPersistenceEnabled = true", command: "rtdb --url URL --persist get /posts",
            note: "or RTDB_PERSIST=1: reads fall back to the cache, writes are queued and sent in order"),
        Row(call: "onDisconnectSetValue(_:), onDisconnectUpdateChildValues(_:), onDisconnectRemoveValue()",
            command: "rtdb session --on-disconnect-remove /online/ada -- ./worker.sh",
            note: "--on-disconnect-set PATH VALUE and --on-disconnect-update PATH VALUE too; the writes run "
                + "when the session ends, also when it is killed"),
        Row(call: "cancelDisconnectOperations()", command: "rtdb on-disconnect cancel",
            note: "from inside the session's command (it finds the session in RTDB_SESSION)"),
        Row(call: ".info/connected", command: "rtdb watch /.info/connected",
            note: "true and false as the connection comes and goes (always true on the embedded file)"),
        Row(call: ".info/serverTimeOffset", command: "rtdb get /.info/serverTimeOffset",
            note: "milliseconds to add to the local clock (0 on the embedded file)"),
    ]

    /// The guides' idioms, each a title and the lines to type.
    static let idioms: [(title: String, lines: [String])] = [
        ("Toggle a star (the guides' transaction; a missing post stays missing):", [
            #"rtdb tx /posts/KEY -- jq --arg uid ada 'if type != "object" then . "#
                + #"elif .stars[$uid] then .starCount = ((.starCount // 1) - 1) | del(.stars[$uid]) "#
                + #"else .starCount = ((.starCount // 0) + 1) | .stars[$uid] = true end'"#,
        ]),
        ("Fan out a post to two places at once, both or neither:", [
            "key=$(rtdb push /posts --key-only -r)",
            #"post='{"author":"ada","title":"Hello"}'"#,
            #"rtdb update / "{\"posts/$key\":$post,\"user-posts/ada/$key\":$post}""#,
        ]),
        ("Presence: online while the command runs, the time it went away once it ends:", [
            "rtdb session --presence /users/ada/connections --last-online /users/ada/lastOnline -- ./app",
        ]),
    ]

    static func text(width: Int) -> String {
        var s = Help.wrap("The calls of Firebase's guides to reading and writing data, lists and offline "
                          + "capabilities (Apple platforms), and the rtdb command that does the same. "
                          + "Every command also takes --url URL for a remote database.", width: width) + "\n\n"
        for row in rows {
            s += Help.wrap(row.call, width: width, lead: "  ", indent: 4) + "\n"
            s += "      " + row.command + "\n"
            if !row.note.isEmpty { s += Help.wrap(row.note, width: width, lead: "      ", indent: 6) + "\n" }
        }
        s += "\nIdioms:\n"
        for idiom in idioms {
            s += Help.wrap(idiom.title, width: width, lead: "  ", indent: 2) + "\n"
            for line in idiom.lines { s += "      " + line + "\n" }
        }
        return s
    }
}
