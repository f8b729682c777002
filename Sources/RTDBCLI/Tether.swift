import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Commands that must not outlive rtdb (`tx`'s CMD, `session`'s CMD), however rtdb ends,
/// `kill -9` included.
///
/// No handler runs on SIGKILL, so the guarantee comes from outside rtdb: on first use rtdb
/// starts a watchdog, `rtdb __tether`, in a process group of its own, reading a pipe whose write
/// end only rtdb holds (close-on-exec: no child inherits it). rtdb writes one line per change,
/// `+N` when a process (N > 0) or a process group (N < 0, `-PGID`) starts depending on it and
/// `-N` once it is over (reaped, or stopped by rtdb itself). The kernel closes the pipe when rtdb
/// dies, however it dies; the watchdog then reads end-of-file and stops what is still listed,
/// the way rtdb stops a command itself (`Subprocess.stop`): SIGTERM, and SIGKILL a second later
/// to what is left. After a normal end nothing is listed, so it exits at once. It ignores
/// SIGINT, SIGTERM and SIGHUP: it lives exactly as long as rtdb does.
///
/// A process is stopped with what it started: `tx` gives its command a process group of its own
/// (the group goes); `session`'s command stays in rtdb's group, so that the terminal treats it
/// as rtdb's job (Ctrl-C, Ctrl-Z, reading the terminal), and on Linux the watchdog stops the
/// processes descended from it as well, found in /proc before anything is stopped (elsewhere
/// the command alone: a shell script's running child then finishes by itself).
///
/// The same watchdog on every system; PR_SET_PDEATHSIG, Linux's alone, would reach only the
/// child itself, not its group or its children.
enum Tether {
    /// The write end of the pipe to the watchdog (-1: not started, -2: could not be started).
    /// Held while the watchdog starts and while a line is written, so that it starts once and
    /// lines never interleave.
    private static let pipeFD = Locked<Int32>(-1)

    /// Starts the watchdog now if it is not running: called before a command's own pipes are
    /// made, so that it does not inherit them (it also closes what it inherited).
    static func prepare() {
        pipeFD.withLock { fd in
            if fd == -1 { fd = start() }
        }
    }

    /// From now until `release`, `target` is stopped if rtdb dies: a process id, or the
    /// negated id of a process group.
    static func hold(_ target: pid_t) {
        send("+\(target)\n")
    }

    /// `target` no longer needs the watchdog.
    static func release(_ target: pid_t) {
        send("-\(target)\n", starting: false)
    }

    /// Writes `line` to the watchdog, starting it first when `starting` (a release needs none
    /// when nothing was ever held).
    private static func send(_ line: String, starting: Bool = true) {
        pipeFD.withLock { fd in
            if fd == -1 && starting { fd = start() }
            guard fd >= 0 else { return }
            // (SIGPIPE is ignored: a watchdog that is gone makes this fail quietly.)
            Diagnostics.writeAll(fd, Array(line.utf8))
        }
    }

    /// Starts `rtdb __tether` on a new pipe; returns the write end, or -2 when it cannot start
    /// (the command then runs without the guarantee rather than not at all).
    private static func start() -> Int32 {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return -2 }
        // rtdb runs one thread: no child can be spawned between pipe() and these calls.
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var actions = emptySpawnFileActions()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[0], 0)
        // Its stdout and stderr must not keep rtdb's open: a reader of rtdb's output would wait
        // for the watchdog too.
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let (_, rc) = Subprocess.spawn([Subprocess.ownExecutable(), TetherCommand.spec.name], actions: &actions, ownGroup: true)
        close(fds[0])
        if rc != 0 {
            close(fds[1])
            return -2
        }
        return fds[1]
    }
}

/// `rtdb __tether`: the watchdog of `Tether`, reading its list on stdin.
enum TetherCommand {
    static let spec = CommandSpec(
        name: "__tether", summary: "stops rtdb's commands when rtdb dies",
        usage: "rtdb __tether",
        description: "Reads +N and -N lines on stdin (a process, or a process group when N < 0); at end of input "
            + "sends SIGTERM to what is still listed, then SIGKILL to what is left a second later.",
        examples: [],
        hidden: true,
        run: run)

    static func run(_ inv: Invocation) throws {
        _ = try inv.arguments([])
        for s in [SIGINT, SIGTERM, SIGHUP] { signal(s, SIG_IGN) }
        closeInherited()
        var listed: [pid_t] = []
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            pending += buffer[0..<n]
            while let end = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeSubrange(...end)
                guard let sign = line.first, let target = pid_t(line.dropFirst()), target != 0, target != -1 else { continue }
                if sign == "+" {
                    listed.append(target)
                } else if let i = listed.lastIndex(of: target) {
                    listed.remove(at: i)
                }
            }
        }
        // Descendants first found, before stopping anything orphans them.
        stop(listed.flatMap { $0 > 0 ? descendants(of: $0) + [$0] : [$0] })
    }

    /// Closes every descriptor but stdin, stdout and stderr: one inherited from rtdb (a pipe
    /// to a command's stdin that was not close-on-exec, say) would otherwise stay open as long
    /// as the watchdog lives, and the command would wait for its end of input.
    static func closeInherited() {
        #if os(Linux)
        var open: [Int32] = []
        if let dir = opendir("/proc/self/fd") {
            while let entry = readdir(dir) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if let fd = Int32(name), fd > 2 { open.append(fd) }
            }
            closedir(dir)   // (its own descriptor is in the list; closing it again is harmless)
            for fd in open { close(fd) }
            return
        }
        #endif
        let limit = min(Int32(clamping: sysconf(Int32(_SC_OPEN_MAX))), 65_536)
        var fd: Int32 = 3
        while fd < limit { close(fd); fd += 1 }
    }

    /// SIGTERM to each target, then SIGKILL to those still there after a second.
    static func stop(_ targets: [pid_t]) {
        if targets.isEmpty { return }
        for t in targets { kill(t, SIGTERM) }
        var left = targets
        let deadline = Subprocess.nowNanos() + 1_000_000_000
        while !left.isEmpty && Subprocess.nowNanos() < deadline {
            usleep(10_000)
            left = left.filter { kill($0, 0) == 0 || errno != ESRCH }
        }
        for t in left { kill(t, SIGKILL) }
    }

    /// The processes descended from `root` now (Linux: each /proc/PID/stat names its parent);
    /// none elsewhere.
    static func descendants(of root: pid_t) -> [pid_t] {
        #if os(Linux)
        guard let dir = opendir("/proc") else { return [] }
        var parent: [(pid: pid_t, ppid: pid_t)] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard let pid = pid_t(name), let ppid = parentOf(pid) else { continue }
            parent.append((pid, ppid))
        }
        closedir(dir)
        var found: [pid_t] = []
        var frontier: [pid_t] = [root]
        while let p = frontier.popLast() {
            for e in parent where e.ppid == p && !found.contains(e.pid) && e.pid != root {
                found.append(e.pid)
                frontier.append(e.pid)
            }
        }
        return found
        #else
        return []
        #endif
    }

    #if os(Linux)
    /// The parent of `pid` from /proc/PID/stat (`PID (COMM) STATE PPID …`; COMM may hold
    /// spaces and parentheses, so the fields are counted from its last `)`).
    static func parentOf(_ pid: pid_t) -> pid_t? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 1024)
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0, let end = buf[0..<n].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = buf[(end + 1)..<n].split(separator: UInt8(ascii: " "))
        guard fields.count > 1 else { return nil }
        return pid_t(String(decoding: fields[1], as: UTF8.self))
    }
    #endif
}
