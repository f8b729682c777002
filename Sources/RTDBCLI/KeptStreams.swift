import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The live kept locations of `sync --follow`: one stream per kept
/// location or query, anything inside a kept whole location riding on that location's stream.
///
/// Each stream is a child `rtdb __kept-stream PATH PARAMS` on the same cache (a watch through
/// the cache that prints nothing and sends no queued write, which `sync` sends and reports: it
/// stores what the server sends as it arrives, a query's window alone, marks a whole location
/// live for the read fast path, and reconnects by itself). The database, the cache file and the
/// credential reach the child in its environment, never on its command line. The child's
/// stdout is a pipe whose read end only this process holds, so a child outlives
/// `sync --follow` by at most a beat of its watch loop, however `sync` ends (kill -9 too): a
/// watch ends once its stdout reader is gone. A child that exits is started again after a
/// growing pause (1 s, ×1.3, at most 30 s); a location no longer kept is stopped.
final class KeptStreams {
    private struct Stream {
        var pid: pid_t
        var fd: Int32
    }

    private let executable: String
    private let environment: [String]
    private var running: [String: Stream] = [:]
    private var retry: [String: (at: Int64, pause: Int)] = [:]
    private var lastScan: Int64 = 0

    init(_ inv: Invocation, url: String, cacheFile: String) {
        executable = Subprocess.ownExecutable()   // the child runs the same rtdb
        environment = KeptStreams.childEnvironment(inv, url: url, cacheFile: cacheFile)
    }

    /// Called on each beat: drains the children's output, notices children that exited, and
    /// (once a second) starts and stops streams to match the kept queries.
    func tick(_ cache: () throws -> [CachedQuery]) {
        for (key, s) in running {
            var buf = [UInt8](repeating: 0, count: 4096)
            while read(s.fd, &buf, buf.count) > 0 {}
            var status: Int32 = 0
            if waitpid(s.pid, &status, WNOHANG) == s.pid {
                close(s.fd)
                running[key] = nil
                let pause = retry[key]?.pause ?? 1000
                retry[key] = (monotonicMillis() + Int64(Double(pause) * Double.random(in: 0.7...1.0)),
                              min(30_000, pause * 13 / 10))
            }
        }
        let now = monotonicMillis()
        guard now - lastScan >= 1000 else { return }
        lastScan = now
        guard let kept = try? cache() else { return }
        let wanted = KeptStreams.cover(kept)
        let names = Set(wanted.map(KeptStreams.name))
        let unwanted = running.filter { !names.contains($0.key) }
        stop(Array(unwanted.values))
        for key in unwanted.keys {
            running[key] = nil
            retry[key] = nil
        }
        for q in wanted where running[KeptStreams.name(q)] == nil {
            if let r = retry[KeptStreams.name(q)], r.at > now { continue }
            if let s = start(q) { running[KeptStreams.name(q)] = s }
        }
    }

    /// A stream's name among the running ones: its path and params.
    static func name(_ q: CachedQuery) -> String { q.path.description + "\n" + q.params }

    /// Stops every stream and waits for it.
    func stopAll() {
        stop(Array(running.values))
        running = [:]
    }

    /// The kept queries that need a stream of their own: whole locations that no other kept
    /// whole location contains (their streams carry everything inside), and queries that none
    /// of those contains (each streams its window).
    static func cover(_ kept: [CachedQuery]) -> [CachedQuery] {
        let whole = kept.filter(\.isWholeLocation).map(\.path)
        var locations: [Path] = []
        for p in whole.sorted(by: { $0.depth < $1.depth }) where !locations.contains(where: { $0.contains(p) }) {
            locations.append(p)
        }
        var out = locations.map { CachedQuery(path: $0, params: CachedQuery.wholeLocation) }
        for q in kept where !q.isWholeLocation && !locations.contains(where: { $0.contains(q.path) }) {
            if !out.contains(where: { $0.path.same(as: q.path) && $0.params == q.params }) { out.append(q) }
        }
        return out
    }

    private func start(_ kept: CachedQuery) -> Stream? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        let (pid, rc) = withStdoutOnPipe(fds) { actions in
            Subprocess.spawn([executable, KeptStreamCommand.spec.name, kept.path.description, kept.params],
                             actions: &actions, ownGroup: false, env: environment)
        }
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            return nil
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        return Stream(pid: pid, fd: fds[0])
    }

    /// Ends streams the way a watch ends cleanly (its session ended, its lock file gone): by
    /// closing the read end of its stdout; one still running after 3 s gets SIGTERM.
    private func stop(_ streams: [Stream]) {
        if streams.isEmpty { return }
        for s in streams { close(s.fd) }
        var left = Set(streams.map { $0.pid })
        let deadline = monotonicMillis() + 3000
        while !left.isEmpty {
            for pid in left {
                var status: Int32 = 0
                let r = waitpid(pid, &status, WNOHANG)
                if r == pid || (r < 0 && errno == ECHILD) { left.remove(pid) }
            }
            if left.isEmpty { break }
            if monotonicMillis() >= deadline {
                for pid in left {
                    kill(pid, SIGTERM)
                    var status: Int32 = 0
                    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                }
                break
            }
            usleep(10_000)
        }
    }

    /// rtdb's environment with the command line's remote settings as variables: the child
    /// reaches the same database, through the same cache, as the same principal.
    static func childEnvironment(_ inv: Invocation, url: String, cacheFile: String) -> [String] {
        var vars: [(String, String)] = [("RTDB_URL", url), ("RTDB_CACHE", cacheFile)]
        // The options' text as given: the child reads it as this process did.
        let settings: [(option: OptionSpec, variable: String)] = [
            (Global.timeout.spec, "RTDB_TIMEOUT"), (Global.connectTimeout.spec, "RTDB_CONNECT_TIMEOUT"), (Global.cacert.spec, "RTDB_CACERT"),
            (Global.cacheSize.spec, "RTDB_CACHE_SIZE"), (Global.authCommand.spec, "RTDB_AUTH_COMMAND")]
        for s in settings { if let v = inv.text(s.option) { vars.append((s.variable, v)) } }
        var dropped: Set<String> = ["RTDB_URL", "RTDB_CACHE", "RTDB_DB", "RTDB_OFFLINE", "RTDB_PERSIST"]
        let credentials: [(option: OptionSpec, variable: String)] = [
            (Global.accessToken.spec, "RTDB_ACCESS_TOKEN"), (Global.auth.spec, "RTDB_AUTH"), (Global.credentials.spec, "GOOGLE_APPLICATION_CREDENTIALS")]
        if let given = credentials.first(where: { inv.has($0.option) }), let v = inv.text(given.option) {
            // An option beats every variable: the child gets that credential alone.
            for c in credentials { dropped.insert(c.variable) }
            vars.append((given.variable, v))
        }
        for (name, _) in vars { dropped.insert(name) }
        var out: [String] = []
        var p = processEnvironment
        while let entry = p?.pointee {
            let text = String(cString: entry)
            let name = String(text.prefix { $0 != "=" })
            if !dropped.contains(name) { out.append(text) }
            p = p.map { $0 + 1 }
        }
        return out + vars.map { $0.0 + "=" + $0.1 }
    }
}
