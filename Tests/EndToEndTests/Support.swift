import Foundation
import Testing
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// End-to-end support: run the BUILT `rtdb` binary as a subprocess, in a private temporary
// folder, and look at its stdout, stderr and exit status together.
//
// The binary is $RTDB_BIN when set, else the `rtdb` beside the test bundle in the build
// products folder (the test target depends on the `rtdb` executable target, so it is built).
//
// Processes are started with posix_spawn (not Foundation.Process): every descriptor this file
// opens is close-on-exec, so tests running in parallel never leak each other's pipes into
// their children, and every child gets its own process group so a timeout kills all of it.

// MARK: - Locating programs

enum Binary {
    /// Absolute path of the rtdb binary under test.
    static let rtdb: String = locate()

    private static func locate() -> String {
        if let p = ProcessInfo.processInfo.environment["RTDB_BIN"], !p.isEmpty { return absolute(p) }
        var dirs: [String] = []
        for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") {
            dirs.append((b.bundlePath as NSString).deletingLastPathComponent)
        }
        dirs.append(Bundle.main.bundlePath)
        if let exe = Bundle.main.executablePath { dirs.append((exe as NSString).deletingLastPathComponent) }
        if let arg0 = CommandLine.arguments.first { dirs.append((absolute(arg0) as NSString).deletingLastPathComponent) }
        #if os(Linux)
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            dirs.append((exe as NSString).deletingLastPathComponent)
        }
        #endif
        for d in dirs {
            let candidate = d + "/rtdb"
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDir), !isDir.boolValue,
               FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return (dirs.first ?? ".") + "/rtdb"   // the runs will fail loudly with "cannot start"
    }

    static func absolute(_ p: String) -> String {
        p.hasPrefix("/") ? p : FileManager.default.currentDirectoryPath + "/" + p
    }

    /// The first executable named `name` on PATH (for helpers such as sqlite3, python3, jq).
    static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

// MARK: - Results

struct RunResult: CustomStringConvertible {
    /// The exit status, or 128 + the signal number when the process was killed by a signal.
    var status: Int32
    var stdoutBytes: [UInt8]
    var stderrBytes: [UInt8]
    var elapsed: Double
    var timedOut: Bool

    var stdout: String { String(decoding: stdoutBytes, as: UTF8.self) }
    var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }

    /// stdout split into lines; every line must end with "\n" (checked by `expectLines`).
    var lines: [String] {
        var s = stdout
        if s.hasSuffix("\n") { s.removeLast() }
        return s.isEmpty ? [] : s.components(separatedBy: "\n")
    }

    /// The `{"error":{"code":…,"message":…}}` line on stderr, when stderr is exactly that.
    var error: (code: String, message: String)? {
        let text = stderr
        guard text.hasSuffix("\n"), text.dropLast().firstIndex(of: "\n") == nil,
              let obj = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              obj.count == 1, let e = obj["error"] as? [String: Any], e.count == 2,
              let code = e["code"] as? String, let message = e["message"] as? String
        else { return nil }
        return (code, message)
    }

    var description: String {
        func clip(_ s: String) -> String { s.count > 1500 ? String(s.prefix(1500)) + "…" : s }
        return "status \(status)\(timedOut ? " (timed out)" : "")\n--- stdout:\n\(clip(stdout))\n--- stderr:\n\(clip(stderr))"
    }
}

/// Where a child's stdin comes from.
enum Input {
    case none                 // /dev/null
    case text(String)
    case bytes([UInt8])
    case file(String)
}

// MARK: - Spawning

enum Spawn {
    /// Opens `path` close-on-exec.
    static func openCloexec(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) -> Int32 {
        open(path, flags | O_CLOEXEC, mode)
    }

    /// Held while a pipe is made close-on-exec and while a child is spawned, so no child can
    /// inherit a pipe end in the moment between pipe() and fcntl().
    static let spawnLock = NSLock()

    /// A pipe whose both ends are close-on-exec.
    static func pipeCloexec() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        spawnLock.lock()
        defer { spawnLock.unlock() }
        precondition(pipe(&fds) == 0, "pipe failed: \(errno)")
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return (fds[0], fds[1])
    }

    /// Starts `argv` (argv[0] an absolute path or a name on PATH) with the given descriptors as
    /// its stdin, stdout and stderr, in a new process group. Returns the pid, or nil.
    static func start(_ argv: [String], env: [String: String], stdin: Int32, stdout: Int32, stderr: Int32) -> pid_t? {
        var actions = emptySpawnFileActions()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)

        var attr = emptySpawnAttributes()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attr, &mask)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cenv: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in cargs { free(p) }
            for p in cenv { free(p) }
        }
        var pid: pid_t = 0
        let program = argv[0].contains("/") ? argv[0] : (Binary.onPath(argv[0]) ?? argv[0])
        spawnLock.lock()
        let rc = posix_spawn(&pid, program, &actions, &attr, &cargs, &cenv)
        spawnLock.unlock()
        return rc == 0 ? pid : nil
    }

    /// Waits for `pid`; returns the exit status (128 + signal when killed by a signal).
    static func reap(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        return decode(status)
    }

    static func decode(_ status: Int32) -> Int32 {
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Runs `argv` to completion, feeding `input` and collecting stdout and stderr through pipes.
    /// Past `timeout` seconds the whole process group is killed and `timedOut` is set.
    /// Writing to a child that has exited must be an EPIPE error, not a SIGPIPE for the runner.
    static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    static func run(_ argv: [String], env: [String: String], input: Input, timeout: Double) -> RunResult {
        _ = ignoreSIGPIPE
        let started = now()
        var stdinFD: Int32
        var feed: [UInt8] = []
        var feedFD: Int32 = -1
        switch input {
        case .none:
            stdinFD = openCloexec("/dev/null", O_RDONLY)
        case .file(let path):
            stdinFD = openCloexec(path, O_RDONLY)
        case .text(let s):
            feed = Array(s.utf8)
            let p = pipeCloexec(); stdinFD = p.read; feedFD = p.write
        case .bytes(let b):
            feed = b
            let p = pipeCloexec(); stdinFD = p.read; feedFD = p.write
        }
        let out = pipeCloexec(), err = pipeCloexec()
        guard stdinFD >= 0, let pid = start(argv, env: env, stdin: stdinFD, stdout: out.write, stderr: err.write) else {
            for fd in [stdinFD, feedFD, out.read, out.write, err.read, err.write] where fd >= 0 { close(fd) }
            return RunResult(status: -1, stdoutBytes: [], stderrBytes: Array("cannot start \(argv)\n".utf8),
                             elapsed: 0, timedOut: false)
        }
        close(stdinFD); close(out.write); close(err.write)
        if feedFD >= 0 {
            _ = fcntl(feedFD, F_SETFL, fcntl(feedFD, F_GETFL) | O_NONBLOCK)
            if feed.isEmpty { close(feedFD); feedFD = -1 }
        }
        var outFD = out.read, errFD = err.read
        var stdoutBytes: [UInt8] = [], stderrBytes: [UInt8] = []
        var written = 0
        var timedOut = false
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let deadline = started + timeout
        while feedFD >= 0 || outFD >= 0 || errFD >= 0 {
            let remaining = deadline - now()
            if remaining <= 0 && !timedOut {
                timedOut = true
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
                if feedFD >= 0 { close(feedFD); feedFD = -1 }
            }
            var fds: [pollfd] = []
            if feedFD >= 0 { fds.append(pollfd(fd: feedFD, events: Int16(POLLOUT), revents: 0)) }
            if outFD >= 0 { fds.append(pollfd(fd: outFD, events: Int16(POLLIN), revents: 0)) }
            if errFD >= 0 { fds.append(pollfd(fd: errFD, events: Int16(POLLIN), revents: 0)) }
            let wait = timedOut ? 1000 : Int32(min(max(remaining * 1000, 1), 1000))
            let n = poll(&fds, nfds_t(fds.count), wait)
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            for p in fds where p.revents != 0 {
                if p.fd == feedFD {
                    let k = feed.withUnsafeBytes { write(feedFD, $0.baseAddress! + written, $0.count - written) }
                    if k > 0 { written += k }
                    if k < 0 && errno != EAGAIN && errno != EINTR { written = feed.count }   // reader gone
                    if written >= feed.count { close(feedFD); feedFD = -1 }
                } else {
                    let k = chunk.withUnsafeMutableBytes { read(p.fd, $0.baseAddress, $0.count) }
                    if k > 0 {
                        if p.fd == outFD { stdoutBytes.append(contentsOf: chunk[0..<k]) }
                        else { stderrBytes.append(contentsOf: chunk[0..<k]) }
                    } else if k == 0 || (errno != EAGAIN && errno != EINTR) {
                        close(p.fd)
                        if p.fd == outFD { outFD = -1 } else { errFD = -1 }
                    }
                }
            }
        }
        let status = reap(pid)
        return RunResult(status: status, stdoutBytes: stdoutBytes, stderrBytes: stderrBytes,
                         elapsed: now() - started, timedOut: timedOut)
    }
}

/// A child started in the background (its output goes to files); wait or kill it later.
final class Child {
    let pid: pid_t
    let stdoutPath: String
    let stderrPath: String
    private(set) var status: Int32? = nil

    init?(_ argv: [String], env: [String: String], stdinPath: String?, stdoutPath: String, stderrPath: String) {
        let i = Spawn.openCloexec(stdinPath ?? "/dev/null", O_RDONLY)
        let o = Spawn.openCloexec(stdoutPath, O_WRONLY | O_CREAT | O_TRUNC)
        let e = Spawn.openCloexec(stderrPath, O_WRONLY | O_CREAT | O_TRUNC)
        defer { for fd in [i, o, e] where fd >= 0 { close(fd) } }
        guard i >= 0, o >= 0, e >= 0, let pid = Spawn.start(argv, env: env, stdin: i, stdout: o, stderr: e) else { return nil }
        self.pid = pid
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
    }

    /// True while the process has not exited (reaps it when it has).
    var isRunning: Bool {
        if status != nil { return false }
        var st: Int32 = 0
        let r = waitpid(pid, &st, WNOHANG)
        if r == pid { status = Spawn.decode(st); return false }
        return r == 0
    }

    /// Waits up to `timeout` seconds; then kills the whole group. Returns the status.
    @discardableResult
    func wait(timeout: Double) -> Int32 {
        let deadline = Spawn.now() + timeout
        while isRunning {
            if Spawn.now() > deadline {
                killGroup()
                break
            }
            usleep(5_000)
        }
        if status == nil { status = Spawn.reap(pid) }
        return status ?? -1
    }

    func killGroup(_ signal: Int32 = SIGKILL) {
        kill(-pid, signal)
        kill(pid, signal)
    }

    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    deinit {
        if status == nil {
            killGroup()
            _ = Spawn.reap(pid)
        }
    }
}

// MARK: - Sandbox

/// A private temporary folder for one test: a fresh database file (RTDB_DB), XDG_DATA_HOME and
/// HOME inside it, RTDB_URL and the other target variables unset. Removed when released.
final class Sandbox {
    let dir: String
    /// The database file RTDB_DB names (it does not exist until the first write).
    let db: String
    let env: [String: String]

    init() {
        var template = Array((NSTemporaryDirectory() + "rtdb-e2e.XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        dir = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        db = dir + "/test.db"
        try? FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
        var e = ProcessInfo.processInfo.environment
        for name in ["RTDB_URL", "RTDB_DB", "RTDB_AUTH", "RTDB_ACCESS_TOKEN", "RTDB_TIMEOUT",
                     "FIREBASE_DATABASE_EMULATOR_HOST", "XDG_DATA_HOME", "HOME", "RTDB_BIN",
                     "GOOGLE_APPLICATION_CREDENTIALS", "RTDB_CACERT", "XDG_CACHE_HOME"] {
            e[name] = nil
        }
        e["RTDB_DB"] = db
        e["XDG_DATA_HOME"] = dir + "/xdg"
        e["HOME"] = dir + "/home"
        e["LC_ALL"] = "C.UTF-8"
        // Sessions' control sockets live in the sandbox, and go with it.
        e["XDG_RUNTIME_DIR"] = dir
        e["RTDB_SESSION"] = nil
        env = e
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func environment(_ overrides: [String: String?]) -> [String: String] {
        var e = env
        for (k, v) in overrides { e[k] = v }
        return e
    }

    /// Runs `rtdb ARGS…` in this sandbox.
    func rtdb(_ args: [String], stdin: Input = .none, env overrides: [String: String?] = [:], timeout: Double = 60) -> RunResult {
        Spawn.run([Binary.rtdb] + args, env: environment(overrides), input: stdin, timeout: timeout)
    }

    func rtdb(_ args: String..., stdin: Input = .none, env overrides: [String: String?] = [:], timeout: Double = 60) -> RunResult {
        rtdb(args, stdin: stdin, env: overrides, timeout: timeout)
    }

    /// Runs another program (sh, sqlite3, python3) with this sandbox's environment plus
    /// RTDB pointing at the binary under test.
    func program(_ argv: [String], stdin: Input = .none, env overrides: [String: String?] = [:], timeout: Double = 60) -> RunResult {
        var o = overrides
        o["RTDB"] = Binary.rtdb
        return Spawn.run(argv, env: environment(o), input: stdin, timeout: timeout)
    }

    /// Starts a program in the background with this sandbox's environment (plus RTDB).
    func background(_ argv: [String], stdinPath: String? = nil, name: String, env overrides: [String: String?] = [:]) -> Child? {
        var o = overrides
        o["RTDB"] = Binary.rtdb
        return Child(argv, env: environment(o), stdinPath: stdinPath,
                     stdoutPath: dir + "/\(name).out", stderrPath: dir + "/\(name).err")
    }

    func write(_ name: String, _ text: String) -> String {
        let p = dir + "/" + name
        _ = FileManager.default.createFile(atPath: p, contents: Data(text.utf8))
        return p
    }

    func write(_ name: String, bytes: [UInt8]) -> String {
        let p = dir + "/" + name
        _ = FileManager.default.createFile(atPath: p, contents: Data(bytes))
        return p
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// Writes `value` at `path` with `rtdb set … -q` and checks that it worked.
    func seed(_ path: String, _ json: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let r = rtdb("set", path, json, "-q")
        #expect(r.status == 0 && r.stdout.isEmpty && r.stderr.isEmpty, "seeding \(path): \(r)", sourceLocation: sourceLocation)
    }

    /// The stdout of `rtdb get PATH` (one line, without its newline); checks status 0.
    func get(_ path: String = "/", sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let r = rtdb("get", path)
        #expect(r.status == 0 && r.stderr.isEmpty && r.stdout.hasSuffix("\n"), "get \(path): \(r)", sourceLocation: sourceLocation)
        return r.stdout.hasSuffix("\n") ? String(r.stdout.dropLast()) : r.stdout
    }
}

// MARK: - Expectations

/// Success with exactly `stdout` on stdout and nothing on stderr.
func expectOK(_ r: RunResult, _ stdout: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(r.status == 0, "\(r)", sourceLocation: sourceLocation)
    #expect(r.stdout == stdout, "\(r)", sourceLocation: sourceLocation)
    #expect(r.stderr == "", "\(r)", sourceLocation: sourceLocation)
}

/// Success with exactly these lines on stdout (each ending in "\n") and nothing on stderr.
func expectLines(_ r: RunResult, _ lines: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    expectOK(r, lines.map { $0 + "\n" }.joined(), sourceLocation: sourceLocation)
}

/// Failure: `status`, nothing on stdout, and exactly one JSON error line with `code` on stderr.
func expectError(_ r: RunResult, status: Int32, code: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(r.status == status, "\(r)", sourceLocation: sourceLocation)
    #expect(r.stdout == "", "\(r)", sourceLocation: sourceLocation)
    let e = r.error
    #expect(e?.code == code, "stderr is not one error line with code \(code): \(r)", sourceLocation: sourceLocation)
    #expect(!(e?.message.isEmpty ?? true), "empty error message: \(r)", sourceLocation: sourceLocation)
}

/// Parses one JSON text (fragments allowed).
func parseJSON(_ text: String) -> Any? {
    try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
}

/// A JSON object line parsed to a dictionary.
func object(_ line: String) -> [String: Any]? { parseJSON(line) as? [String: Any] }

/// The push-ID alphabet, in ASCII order.
let pushAlphabet = Set("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")

func isPushID(_ key: String) -> Bool { key.count == 20 && key.allSatisfy { pushAlphabet.contains($0) } }

/// Milliseconds since the Unix epoch.
func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

/// Polls `condition` every 10 ms until it holds or `seconds` pass (generous by default: the
/// machine may be loaded); returns whether it held.
func eventually(_ seconds: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = Spawn.now() + seconds
    while Spawn.now() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// The JSON objects of `text`, one per line (lines that are not objects are left out).
func lines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap { object(String($0)) }
}

/// The `value` of the last value event a watch printed.
func lastValue(_ watch: Child) -> Any? {
    guard let last = lines(watch.stdout).last(where: { $0["event"] as? String == "value" }) else { return nil }
    return last["value"]
}

/// Session lock files of `file` whose holder lives (a process killed by a signal leaves its
/// file behind, unlocked, for the next one to reap): the kept streams of a cache, for one.
func liveSessionLocks(of file: String) -> Int {
    let folder = file + ".sessions"
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".lock") }
    return names.filter { name in
        let fd = open(folder + "/" + name, O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) != 0
    }.count
}
