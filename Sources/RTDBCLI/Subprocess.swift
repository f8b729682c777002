import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command directly (no shell) with `input` on its stdin and collects its stdout;
/// its stderr is ours. Stdin and stdout are pumped together, so large values cannot deadlock.
enum Subprocess {
    struct Result {
        var status: Int32       // exit status, or 128 + signal
        var output: [UInt8]
    }

    static func run(_ argv: [String], input: [UInt8], captureOutput: Bool = true) throws -> Result {
        guard let program = argv.first else { throw RTDBError(.usage, "no command given to run") }
        var toChild: [Int32] = [0, 0], fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
            throw RTDBError(.ioError, "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        if captureOutput { posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1) }
        for fd in toChild + fromChild { posix_spawn_file_actions_addclose(&actions, fd) }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF))

        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, &attr, &cargs, environ)
        close(toChild[0])
        close(fromChild[1])
        if rc != 0 {
            close(toChild[1]); close(fromChild[0])
            throw RTDBError(.ioError, "cannot run \(Limits.quote(program)): \(String(cString: strerror(rc)))")
        }

        var output: [UInt8] = []
        var written = 0
        var inFD = toChild[1], outFD = fromChild[0]
        _ = fcntl(inFD, F_SETFL, fcntl(inFD, F_GETFL) | O_NONBLOCK)
        if input.isEmpty { close(inFD); inFD = -1 }
        if !captureOutput { close(outFD); outFD = -1 }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while inFD >= 0 || outFD >= 0 {
            var fds: [pollfd] = []
            if inFD >= 0 { fds.append(pollfd(fd: inFD, events: Int16(POLLOUT), revents: 0)) }
            if outFD >= 0 { fds.append(pollfd(fd: outFD, events: Int16(POLLIN), revents: 0)) }
            if poll(&fds, nfds_t(fds.count), -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for p in fds where p.revents != 0 {
                if p.fd == inFD {
                    let n = input.withUnsafeBytes { write(inFD, $0.baseAddress! + written, $0.count - written) }
                    if n > 0 { written += n }
                    if n < 0 && errno != EAGAIN && errno != EINTR { written = input.count }   // reader gone
                    if written >= input.count { close(inFD); inFD = -1 }
                } else if p.fd == outFD {
                    let n = chunk.withUnsafeMutableBytes { read(outFD, $0.baseAddress, $0.count) }
                    if n > 0 { output.append(contentsOf: chunk[0..<n]) }
                    else if n == 0 || (errno != EAGAIN && errno != EINTR) { close(outFD); outFD = -1 }
                }
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code: Int32
        if status & 0x7f == 0 { code = (status >> 8) & 0xff } else { code = 128 + (status & 0x7f) }
        return Result(status: code, output: output)
    }
}
