import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command directly (no shell) with `input` on its stdin and collects its stdout;
/// its stderr is ours. Stdin and stdout are pumped together, so large values cannot deadlock.
///
/// Bounded: output past `outputLimit` bytes, a run longer than `timeoutSeconds`, or (when
/// `interruptible`) SIGINT or SIGTERM to rtdb stop the command, and its whole process group
/// when it has one of its own (`ownGroup`), before the error is thrown; nothing is left running.
/// A `tethered` command is stopped even when rtdb dies without stopping it (`Tether`).
enum Subprocess {
    struct Result {
        var status: Int32       // exit status, or 128 + signal
        var output: [UInt8]
    }

    /// Starts `argv` (looked up on PATH) with SIGPIPE, SIGINT and SIGTERM back at their
    /// defaults (rtdb ignores or catches them), in a process group of its own when `ownGroup`.
    /// Returns the pid, or posix_spawn's error number (0 on success). `env` replaces rtdb's
    /// environment (`NAME=value` strings) when given.
    static func spawn(_ argv: [String], actions: UnsafePointer<SpawnFileActions>?,
                      ownGroup: Bool, env: [String]? = nil) -> (pid: pid_t, error: Int32) {
        var attr = emptySpawnAttributes()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF)
        if ownGroup {
            posix_spawnattr_setpgroup(&attr, 0)
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
        }
        posix_spawnattr_setflags(&attr, Int16(flags))
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid: pid_t = 0
        guard let env else {
            let rc = posix_spawnp(&pid, argv[0], actions, &attr, &cargs, processEnvironment)
            return (pid, rc)
        }
        var cenv: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer { for p in cenv { free(p) } }
        let rc = posix_spawnp(&pid, argv[0], actions, &attr, &cargs, &cenv)
        return (pid, rc)
    }

    static func run(_ argv: [String], input: [UInt8], captureOutput: Bool = true,
                    outputLimit: Int = Int.max, timeoutSeconds: Double? = nil,
                    interruptible: Bool = false, ownGroup: Bool = false, tethered: Bool = false) throws -> Result {
        guard let program = argv.first else { throw RTDBError(.usage, "no command given to run") }
        if tethered { Tether.prepare() }
        var toChild: [Int32] = [0, 0], fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0 else {
            throw RTDBError(.ioError, "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        guard pipe(&fromChild) == 0 else {
            let e = errno
            close(toChild[0]); close(toChild[1])
            throw RTDBError(.ioError, "cannot create a pipe: \(String(cString: strerror(e)))")
        }
        var actions = emptySpawnFileActions()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        if captureOutput { posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1) }
        for fd in toChild + fromChild { posix_spawn_file_actions_addclose(&actions, fd) }

        let (pid, rc) = Subprocess.spawn(argv, actions: &actions, ownGroup: ownGroup)
        close(toChild[0])
        close(fromChild[1])
        if rc != 0 {
            close(toChild[1]); close(fromChild[0])
            throw RTDBError(.ioError, "cannot run \(Limits.quote(program)): \(String(cString: strerror(rc)))")
        }
        // What rtdb's death must stop: the command's group when it has one, else the command.
        let tether: pid_t? = tethered ? (ownGroup ? -pid : pid) : nil
        if let tether { Tether.hold(tether) }
        defer { if let tether { Tether.release(tether) } }

        var output: [UInt8] = []
        if captureOutput && outputLimit < Int.max { output.reserveCapacity(min(outputLimit + 1, 1 << 30)) }
        var written = 0
        var inFD = toChild[1], outFD = fromChild[0]
        _ = fcntl(inFD, F_SETFL, fcntl(inFD, F_GETFL) | O_NONBLOCK)
        if input.isEmpty { close(inFD); inFD = -1 }
        if !captureOutput { close(outFD); outFD = -1 }
        let deadline = timeoutSeconds.map { nowNanos() + UInt64(max(0, $0) * 1e9) }
        var stopped: Error? = nil
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var status: Int32 = 0
        var reaped = false
        var exitPause: Int32 = 1   // ms between exit checks once the pipes are closed, growing to 16
        while true {
            // With both pipes closed, wait for the exit the same way: a command that closed its
            // stdout but runs on is still bounded by the timeout and the signals.
            let pipesClosed = inFD < 0 && outFD < 0
            if pipesClosed {
                if deadline == nil && !interruptible { break }   // nothing to watch for: wait below
                let r = waitpid(pid, &status, WNOHANG)
                if r == pid { reaped = true; break }
                if r < 0 && errno != EINTR { break }
            }
            var fds: [pollfd] = []
            if inFD >= 0 { fds.append(pollfd(fd: inFD, events: Int16(POLLOUT), revents: 0)) }
            if outFD >= 0 { fds.append(pollfd(fd: outFD, events: Int16(POLLIN), revents: 0)) }
            if interruptible && Interruption.readFD >= 0 {
                fds.append(pollfd(fd: Interruption.readFD, events: Int16(POLLIN), revents: 0))
            }
            var wait: Int32 = -1
            if pipesClosed {
                wait = exitPause
                exitPause = min(exitPause * 2, 16)
            }
            if let deadline {
                let now = nowNanos()
                if now >= deadline {
                    stopped = RTDBError(.timeout, "\(Limits.quote(program)) did not finish within \(Quantity.seconds(timeoutSeconds ?? 0)); it was stopped")
                    break
                }
                let left = Int32(min((deadline - now) / 1_000_000 + 1, 1000))
                wait = wait < 0 ? left : min(wait, left)
            }
            if poll(&fds, nfds_t(fds.count), wait) < 0 {
                if errno == EINTR { continue }
                break
            }
            if interruptible, let sig = Interruption.pending() {
                stopped = Interrupted(signal: sig)
                break
            }
            for p in fds where p.revents != 0 {
                if p.fd == inFD {
                    let n = input.withUnsafeBytes { write(inFD, $0.baseAddress! + written, $0.count - written) }
                    if n > 0 { written += n }
                    if n < 0 && errno != EAGAIN && errno != EINTR { written = input.count }   // reader gone
                    if written >= input.count { close(inFD); inFD = -1 }
                } else if p.fd == outFD {
                    let want = min(chunk.count, outputLimit - output.count + 1)
                    let n = chunk.withUnsafeMutableBytes { read(outFD, $0.baseAddress, want) }
                    if n > 0 { output.append(contentsOf: chunk[0..<n]) }
                    else if n == 0 || (errno != EAGAIN && errno != EINTR) { close(outFD); outFD = -1 }
                }
            }
            if output.count > outputLimit {
                stopped = RTDBError(.tooLarge, "the output of \(Limits.quote(program)) is larger than the write limit of \(outputLimit) bytes; it was stopped")
                break
            }
        }
        if inFD >= 0 { close(inFD) }
        if outFD >= 0 { close(outFD) }
        if let stopped {
            stop(pid, group: ownGroup)
            throw stopped
        }
        if !reaped { while waitpid(pid, &status, 0) < 0 && errno == EINTR {} }
        return Result(status: decode(status), output: output)
    }

    /// Ends a command that must not go on: SIGTERM (to its group when it has one), then SIGKILL
    /// after a second of grace; returns once it has been reaped.
    static func stop(_ pid: pid_t, group: Bool) {
        let target = group ? -pid : pid
        kill(target, SIGTERM)
        let deadline = nowNanos() + 1_000_000_000
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno != EINTR) { break }
            if nowNanos() >= deadline {
                kill(target, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                break
            }
            usleep(5_000)
        }
        // Whatever the command started in its group goes too.
        if group { kill(target, SIGKILL) }
    }

    /// The path of the running rtdb binary (for starting rtdb again: a kept stream, the
    /// watchdog of `Tether`).
    static func ownExecutable() -> String {
        executablePath() ?? CommandLine.arguments.first ?? "rtdb"
    }

    static func decode(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    static func nowNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
