import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum SessionCommand {
    static let onDisconnectSet = Words("--on-disconnect-set", value: "PATH VALUE", kind: .path, arity: 2, repeatable: true,
        "when the session ends, set PATH to the JSON VALUE ({\".sv\":\"timestamp\"} is the end time)")
    static let onDisconnectUpdate = Words("--on-disconnect-update", value: "PATH VALUE", kind: .path, arity: 2, repeatable: true,
        "when the session ends, update PATH with the JSON object VALUE (keys are relative paths)")
    static let onDisconnectRemove = Words("--on-disconnect-remove", value: "PATH", kind: .path, repeatable: true,
        "when the session ends, remove PATH")
    static let onConnectSet = Words("--on-connect-set", value: "PATH VALUE", kind: .path, arity: 2, repeatable: true,
        "once the operations are registered, set PATH to the JSON VALUE")
    static let presence = Words("--presence", value: "P [VALUE]", kind: .path, optionalWords: 1,
        "push a child of P, register its removal, then set it to the JSON VALUE (default true)")
    static let lastOnline = Words("--last-online", value: "P", kind: .path,
        "register a set of P to the server time when the session ends")
    static let events = Valued<String>("--events", value: "FILE", kind: .file, "write the event lines to FILE instead of stdout")
    static let clientSide = Flag("--client-side", "with --url: keep the on-disconnect writes in the offline cache and send them over REST when the session ends (or, after a crash, with the next flush)")
    /// How a session with --url reaches the server.
    enum Transport: String, CaseIterable, Sendable {
        case realtime, rest
    }
    static let transport = Valued<Transport>("--transport", value: "HOW",
        "with --url: reach the server over its realtime protocol (realtime, the default) or REST only (rest)")

    static let spec = CommandSpec(
        name: "session", summary: "hold a session whose writes run when it ends, also when it dies (presence)",
        usage: "rtdb session [OPS...] [--presence P [VALUE]] [--last-online P] [--events FILE] [--client-side] [--transport HOW] [-- CMD [ARGS...]]",
        arguments: [("CMD", .text, "command to run for the length of the session (it inherits stdin, stdout and stderr)")],
        options: [onDisconnectSet.spec, onDisconnectUpdate.spec, onDisconnectRemove.spec, onConnectSet.spec, presence.spec,
                  lastOnline.spec, events.spec, clientSide.spec, transport.spec],
        description: "Registers writes to run when the session ends and holds the session until CMD exits or, without CMD, "
            + "until SIGINT or SIGTERM. OPS run in the order given, as one atomic multi-path update, with Firebase's "
            + "onDisconnect semantics: a later operation at a path replaces earlier ones at or below it, one below an "
            + "earlier path changes that path's value. --presence P and --last-online P are the usual presence "
            + "recipe; --on-connect-set writes run after the registration, in order. "
            + "On the embedded database the session holds a lock that the system drops when its process dies, however "
            + "it dies (kill -9 included): the next rtdb process that writes the file, or a running watch or serve within "
            + "a second, then runs the dead session's writes (server timestamps take the time they run). "
            + "Event lines: {\"event\":\"connected\",\"session\":S}, one {\"event\":\"registered\",\"op\":O,\"path\":P} per "
            + "operation, {\"event\":\"set\",\"path\":P,\"value\":V} per on-connect write, {\"event\":\"ended\"}. "
            + "(No {\"event\":\"disconnected\"} on the embedded database: its sessions have no connection to lose.) "
            + "Without CMD they go to stdout (none with -q) or to --events FILE, and SIGINT or SIGTERM end the session with status 0. "
            + "With CMD, CMD inherits stdin, stdout and stderr, event lines go only to --events FILE, the session ends when CMD "
            + "exits and rtdb exits with CMD's status (128+N when a signal N ended it); SIGINT and SIGTERM are passed on to CMD. "
            + "CMD gets the session's id (the session of its connected line) in RTDB_SESSION: rtdb on-disconnect set, update, "
            + "remove and cancel change the session's operations while it lives, from CMD or any other process of the user. "
            + "CMD never outlives the session: when rtdb is killed, even with kill -9, a watchdog (rtdb __tether) sends CMD "
            + "SIGTERM, then SIGKILL a second later (on Linux the processes it started go with it). "
            + "With --url the session speaks Firebase's realtime protocol (wss for https) and the server holds the writes: it "
            + "runs them when the connection ends, however it ends (kill -9 and a lost network included); they are lost if the "
            + "server itself stops, as in Firebase. {\"event\":\"disconnected\"} says the connection dropped; it is retried "
            + "(1 s, x1.3, at most 30 s, jittered) and each reconnection registers the writes again and redoes the on-connect "
            + "writes (a new presence child). A registration the server refuses before CMD starts ends the session with its "
            + "status (4 for permission_denied) and CMD does not run; an unreachable server does not stop CMD, the registration "
            + "follows on connect. Over REST only (--transport rest, or a server that refuses the WebSocket upgrade) a session "
            + "is unsupported (status 7) unless --client-side: then the session keeps its writes in the database's offline "
            + "cache (the default cache file, or --cache FILE) under the session lock, and queues and sends them, as one "
            + "multi-path update, when it ends normally; when it is killed, the next rtdb process that uses the cache "
            + "queues them and its flush (rtdb --url URL --persist sync) sends them. If they cannot be sent at the end, "
            + "the ended line adds \"queued\":true and the reason. A --url or --client-side session listens for "
            + "on-disconnect's changes on a Unix socket, $XDG_RUNTIME_DIR/rtdb/ID/control (else $TMPDIR/rtdb-UID/ID/control), "
            + "in folders of mode 0700.",
        examples: ["rtdb session --presence /users/joe/connections --last-online /users/joe/lastOnline -- ./worker.sh",
                   "rtdb session --presence /users/joe/connections '\"laptop\"' -- ./app.sh",
                   "rtdb session --on-disconnect-set /status '\"offline\"' --on-connect-set /status '\"online\"'",
                   "rtdb session --on-disconnect-remove /locks/job7 --events events.jsonl -- make build"],
        run: run)

    static let operationOptions = [onDisconnectSet, onDisconnectUpdate, onDisconnectRemove, onConnectSet, presence, lastOnline]

    static func run(_ inv: Invocation) throws {
        var command: [String] = []
        if let cut = inv.beforeDashDash {
            if cut > 0 { throw inv.usageError("session: unexpected argument \(Limits.quote(inv.positionals[0])) before --") }
            command = inv.positionals
            if command.isEmpty { throw inv.usageError("session: missing CMD after --") }
        } else if let first = inv.positionals.first {
            throw inv.usageError("session: unexpected argument \(Limits.quote(first)); a command to run goes after --")
        }
        let steps = try parseSteps(inv)
        let transport = try inv.value(SessionCommand.transport)
        // --client-side keeps the writes in the remote database's offline cache; otherwise the
        // database holds them (the session lock of the file, or the server).
        let keepsItsWrites = inv.has(clientSide)
        let db = try inv.database(cache: keepsItsWrites ? .always : .never)
        let host = try inv.capability(SessionHost.self, of: db,
                                      missing: RTDBError(.unsupported, "session: this database cannot hold a session; nothing was registered"))
        let session = try host.openSession(SessionOptions(clientSide: keepsItsWrites,
                                                          transport: transport.map { $0 == .rest ? .rest : .realtime },
                                                          heldForCommand: !command.isEmpty))
        // Another process changes the session's operations through the database's rows (the
        // embedded file), or by asking this process over its control socket.
        let control = inv.capability(SessionStore.self, of: db) == nil ? try SessionControl.Listener(id: session.id) : nil
        let events = try EventSink(inv, file: inv.value(SessionCommand.events), toStdout: command.isEmpty && !inv.quiet)
        // From here SIGINT and SIGTERM end the session cleanly (its writes run).
        Interruption.install()
        var held: HeldCommand? = nil
        var status: Int32 = 0
        try session.hold(steps, events: { event in
            if let line = line(event) { try events.line(line) }
        }, started: {
            if !command.isEmpty { held = try HeldCommand(command, session: session.id) }
        }, keepGoing: { wait in
            control?.answerWaiting { try session.change($0) }
            guard var h = held else { return waitForSignal(millis: wait, control: control?.fd) }
            defer { held = h }
            if let s = try h.exited() {
                status = s
                return false
            }
            // Polled for CMD's exit: at most 50 ms at a time.
            var fds: [pollfd] = []
            if Interruption.readFD >= 0 && !h.forwarded && Interruption.pending() == nil {
                fds.append(pollfd(fd: Interruption.readFD, events: Int16(POLLIN), revents: 0))
            }
            if let control { fds.append(pollfd(fd: control.fd, events: Int16(POLLIN), revents: 0)) }
            if wait != 0 { _ = poll(&fds, nfds_t(fds.count), Int32(wait < 0 ? 50 : min(wait, 50))) }
            return true
        })
        if status != 0 { throw ExitStatus(status) }
    }

    /// The event line of what happened to the session (nil: said on stderr instead).
    static func line(_ event: SessionEvent) -> [(String, Field)]? {
        switch event {
        case .connected(let id):
            return [("event", .string("connected")), ("session", .string(id))]
        case .registered(let op):
            return [("event", .string("registered")), ("op", .string(op.kind)), ("path", .string(op.path.description))]
        case .set(let path, let value, let queued):
            var line: [(String, Field)] = [("event", .string("set")), ("path", .string(path.description)), ("value", .node(value))]
            if let queued {
                line += [("queued", .bool(true)), ("id", .int(Int(queued.id))), ("reason", .string(queued.reason.rawValue))]
            }
            return line
        case .disconnected:
            return [("event", .string("disconnected"))]
        case .ended(let queued):
            var line: [(String, Field)] = [("event", .string("ended"))]
            if let queued { line += [("queued", .bool(true)), ("reason", .string(queued.rawValue))] }
            return line
        case .note(let message):
            Diagnostics.note(message)
            return nil
        }
    }

    /// The operations in command-line order, each checked (paths, values, updates).
    static func parseSteps(_ inv: Invocation) throws -> [SessionStep] {
        var steps: [SessionStep] = []
        for (option, words) in inv.occurrences(of: operationOptions) {
            let long = option.long
            let path = try inv.path(words[0], naming: long)
            try WriteCheck.writable(path)
            switch long {
            case onDisconnectSet.long, onConnectSet.long:
                let value = try parseValue(words[1], option: long)
                try WriteCheck.value(value, at: path)
                steps.append(long == onConnectSet.long ? .connectSet(path, value) : .register(.set(path, value)))
            case onDisconnectUpdate.long:
                guard let raw = try JSONReader.parseEntries(words[1]) else {
                    throw RTDBError(.invalidData, "\(long) needs a JSON object of relative paths, not \(Limits.quote(words[1]))")
                }
                steps.append(.register(.update(path, try WriteCheck.update(raw, at: path))))
            case onDisconnectRemove.long: steps.append(.register(.remove(path)))
            case presence.long:
                var value = Node.bool(true)
                if words.count > 1 {
                    value = try parseValue(words[1], option: long)
                    try WriteCheck.value(value, at: path.appending("-AAAAAAAAAAAAAAAAAAA"))   // a push ID stands in for the key
                }
                steps.append(.presence(path, value))
            default: steps.append(.lastOnline(path))
            }
        }
        return steps
    }

    static func parseValue(_ text: String, option: String) throws -> Node {
        if text.utf8.count > Limits.maxWriteBytes { throw RTDBError(.tooLarge, "the value of \(option) is larger than the write limit") }
        do {
            return try JSONReader.parse(text)
        } catch let e as RTDBError {
            throw RTDBError(e.code, "the value of \(option) is not valid JSON: \(e.message)"
                            + (ValueInput.ValueSource.looksLikeText(text) ? "; a string is written in quotes: '\"\(text)\"'" : ""))
        }
    }

    /// Without CMD the session lasts until SIGINT or SIGTERM: waits up to `millis` ms (-1: until
    /// one comes, or an asker on `control`); false once one has come.
    static func waitForSignal(millis: Int, control: Int32?) -> Bool {
        if Interruption.pending() != nil { return false }
        if millis != 0 {
            if Interruption.readFD < 0 && control == nil {
                if millis < 0 { pause() } else { usleep(UInt32(millis) * 1000) }
            } else {
                var fds: [pollfd] = []
                if Interruption.readFD >= 0 { fds.append(pollfd(fd: Interruption.readFD, events: Int16(POLLIN), revents: 0)) }
                if let control { fds.append(pollfd(fd: control, events: Int16(POLLIN), revents: 0)) }
                _ = poll(&fds, nfds_t(fds.count), Int32(millis))
            }
        }
        return Interruption.pending() == nil
    }

    /// CMD, started with rtdb's stdin, stdout and stderr and `RTDB_SESSION` naming the session;
    /// `exited` is polled. It never outlives rtdb (`Tether`).
    struct HeldCommand {
        let argv: [String]
        let pid: pid_t
        private(set) var forwarded = false

        init(_ argv: [String], session: String) throws {
            Tether.prepare()
            let (pid, rc) = Subprocess.spawn(argv, actions: nil, ownGroup: false, env: HeldCommand.environment(session: session))
            if rc != 0 {
                throw RTDBError(.ioError, "session: cannot run \(Limits.quote(argv[0])): \(String(cString: strerror(rc)))")
            }
            Tether.hold(pid)
            self.argv = argv
            self.pid = pid
        }

        /// rtdb's environment with `RTDB_SESSION=session`.
        static func environment(session: String) -> [String] {
            var out: [String] = []
            guard var p = processEnvironment else { return out }
            while let entry = p.pointee {
                let text = String(cString: entry)
                if !text.hasPrefix("RTDB_SESSION=") { out.append(text) }
                p += 1
            }
            return out + ["RTDB_SESSION=" + session]
        }

        /// CMD's exit status (128 + N when signal N ended it) once it has exited, else nil; the
        /// first SIGINT or SIGTERM rtdb received is passed on to it.
        mutating func exited() throws -> Int32? {
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid {
                Tether.release(pid)
                return Subprocess.decode(status)
            }
            if r < 0 && errno != EINTR { throw RTDBError(.ioError, "session: lost track of \(Limits.quote(argv[0]))") }
            if !forwarded, let sig = Interruption.pending() {
                kill(pid, sig)
                forwarded = true
            }
            return nil
        }
    }

    /// Where event lines go: --events FILE, stdout, or nowhere.
    struct EventSink {
        let inv: Invocation
        let fd: Int32

        init(_ inv: Invocation, file: String?, toStdout: Bool) throws {
            self.inv = inv
            if let file {
                let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                if fd < 0 {
                    let e = errno
                    throw RTDBError(e == EACCES ? .permissionDenied : .ioError, "--events \(Limits.quote(file)): \(String(cString: strerror(e)))")
                }
                self.fd = fd
            } else {
                self.fd = toStdout ? 1 : -1
            }
        }

        func line(_ fields: [(String, Field)]) throws {
            guard fd >= 0 else { return }
            var bytes: [UInt8] = []
            try Output(pretty: false, quiet: false).render(fields, into: &bytes)
            bytes.append(0x0A)
            Diagnostics.writeAll(fd, bytes)
        }
    }
}
