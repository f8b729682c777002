import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(MachO)
import MachO
#endif

/// Secrets given as arguments (`--secret`, `--auth`, `--access-token`) leave the process's
/// argument list altogether, on Linux, macOS and FreeBSD: before anything else, rtdb starts its own
/// program again in the same process (`execv` of its own file, `ownExecutable`: same pid,
/// nothing else started) with each secret replaced by `***`, and hands the secrets over on a
/// pipe the new image inherits. So /proc/PID/cmdline (Linux) and `ps` (the kernel's copy of
/// the arguments elsewhere), which anyone on the machine may read, show exactly the arguments with
/// `***`: neither the secret nor its length (overwriting the arguments in place cannot change
/// the length the kernel reports, which follows the original arguments). Where that is not
/// possible (no /proc, the exec fails, or a system whose own file rtdb cannot name for certain:
/// OpenBSD, NetBSD) the arguments are masked in place (`CLI.hideSecrets`), which hides the secret but
/// not its length.
enum HiddenArguments {
    /// The environment variable naming the pipe, as `FD,PID`: only the process that set it
    /// (the pid survives the exec) reads the pipe; a value inherited from elsewhere is dropped.
    static let variable = "RTDB_HIDDEN_ARGUMENTS"
    static let placeholder: [UInt8] = Array("***".utf8)
    /// More than this in secrets is not handed over (a pipe holds at least 4 KiB without a
    /// reader; a write that would wait makes rtdb mask in place instead).
    static let maxBytes = 4096

    /// Where the secret values lie in `args` (argv without the program's name): the index of
    /// each, and the bytes before the value in that argument (`--auth=`), in order. The same
    /// reading as `CLI.hideSecrets`: up to `--`, an option's value is the next argument or what
    /// follows `=`.
    static func positions(_ args: [[UInt8]]) -> [(index: Int, prefix: [UInt8])] {
        let names = CLI.secretOptions.map { Array($0.utf8) }
        var found: [(index: Int, prefix: [UInt8])] = []
        var i = 0
        while i < args.count {
            let arg = args[i]
            if arg == Array("--".utf8) { break }
            if names.contains(arg), i + 1 < args.count {
                found.append((i + 1, []))
                i += 2
                continue
            }
            if let name = names.first(where: { arg.starts(with: $0 + [UInt8(ascii: "=")]) }) {
                found.append((i, name + [UInt8(ascii: "=")]))
            }
            i += 1
        }
        return found
    }

    /// Runs the program again without its secrets in its arguments, when it has any and was
    /// not started so already; returns only when it does not (then nothing has changed).
    static func reexecWithoutSecrets(argc: Int32, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) {
        #if os(Linux) || canImport(Darwin) || os(FreeBSD)
        if getenv(variable) != nil { return }
        guard let executable = ownExecutable() else { return }
        var args: [[UInt8]] = []
        for i in 1..<Int(max(argc, 1)) {
            guard let p = argv[i] else { return }
            args.append(UnsafeRawBufferPointer(start: p, count: strlen(p)).map { $0 })
        }
        let found = positions(args)
        if found.isEmpty { return }
        var secrets: [UInt8] = []
        var masked = args
        for (index, prefix) in found {
            secrets += args[index].dropFirst(prefix.count) + [0]
            masked[index] = prefix + placeholder
        }
        if secrets.count > maxBytes { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }   // reached only when the exec did not happen
        // The write end closes at the exec (the new image then reads to the end); a write that
        // would wait for a reader fails instead.
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFL, O_NONBLOCK)
        let written = secrets.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
        close(writeEnd)
        guard written == secrets.count else { return }
        guard setenv(variable, "\(readEnd),\(getpid())", 1) == 0 else { return }
        var cargs: [UnsafeMutablePointer<CChar>?] = [argv[0].flatMap { strdup($0) }]
        for a in masked {
            cargs.append((a + [0]).withUnsafeBufferPointer { b in b.withMemoryRebound(to: CChar.self) { $0.baseAddress.flatMap { strdup($0) } } })
        }
        cargs.append(nil)
        execv(executable, &cargs)
        // Still here: the exec failed; the caller masks the arguments in place.
        unsetenv(variable)
        for p in cargs { free(p) }
        #endif
    }

    /// The file of the running program, named so that nothing else can stand in for it (never
    /// from argv[0], which whoever started the process chose: another program there would be
    /// handed the secrets). Nil where there is no such name.
    static func ownExecutable() -> String? {
        #if os(Linux)
        return "/proc/self/exe"
        #elseif canImport(Darwin)
        var size: UInt32 = 0
        _ = _NSGetExecutablePath(nil, &size)
        var buffer = [CChar](repeating: 0, count: Int(size) + 1)
        guard _NSGetExecutablePath(&buffer, &size) == 0 else { return nil }
        return String(cString: buffer)
        #elseif os(FreeBSD)
        // The kernel's name for the file this process started (kern.proc.pathname: CTL_KERN 1,
        // KERN_PROC 14, KERN_PROC_PATHNAME 12, pid -1 for the caller); /proc is seldom mounted.
        var mib: [Int32] = [1, 14, 12, -1]
        var size = 0
        guard sysctl(&mib, 4, nil, &size, nil, 0) == 0, size > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: size + 1)
        guard sysctl(&mib, 4, &buffer, &size, nil, 0) == 0 else { return nil }
        return String(cString: buffer)
        #else
        return nil
        #endif
    }

    /// In a process started by `reexecWithoutSecrets`: puts the secrets read from the pipe
    /// back in place of their `***` in `args` (argv without the program's name), and removes
    /// the pipe and the variable (no child inherits either). `invalid` gains the indexes of
    /// secrets that are not UTF-8, as the parser expects. Without the variable (or with one
    /// this process did not set) nothing changes.
    static func restore(_ args: inout [String], invalid: inout Set<Int>) throws {
        #if os(Linux) || canImport(Darwin) || os(FreeBSD)
        guard let raw = getenv(variable) else { return }
        let value = String(cString: raw)
        unsetenv(variable)
        let parts = value.split(separator: ",").compactMap { Int32($0) }
        guard parts.count == 2, parts[1] == getpid(), parts[0] >= 0 else { return }
        let fd = parts[0]
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: maxBytes + 1)
        while bytes.count <= maxBytes {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        let secrets = bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { Array($0) }
        let found = positions(args.map { Array($0.utf8) })
        guard bytes.last == 0, secrets.count == found.count,
              found.allSatisfy({ Array(args[$0.index].utf8) == $0.prefix + placeholder }) else {
            throw RTDBError(.internal, "the secrets given as arguments could not be read back after hiding them; "
                            + "give them with --secret-file or in the environment instead")
        }
        for (k, position) in found.enumerated() {
            let whole = position.prefix + secrets[k]
            if let s = String(validating: whole, as: UTF8.self) {
                args[position.index] = s
            } else {
                args[position.index] = String(decoding: whole, as: UTF8.self)
                invalid.insert(position.index)
            }
        }
        #endif
    }
}
