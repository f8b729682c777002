import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A parsed command line: the command, its options and arguments, and the global settings.
/// Everything is parsed and checked before any database is opened.
final class Invocation {
    let command: CommandSpec
    /// Arguments in order, including those after `--`.
    let positionals: [String]
    /// How many of `positionals` came before `--` (nil when there was no `--`).
    let beforeDashDash: Int?
    private let options: [(spec: OptionSpec, value: String)]

    init(command: CommandSpec, positionals: [String], beforeDashDash: Int?, options: [(spec: OptionSpec, value: String)]) {
        self.command = command
        self.positionals = positionals
        self.beforeDashDash = beforeDashDash
        self.options = options
    }

    /// True when the command line gives `option`.
    func has(_ option: some DeclaredOption) -> Bool {
        assert(declares(option), "\(command.name) reads \(option.long), which it does not declare")
        return options.contains { $0.spec.long == option.long }
    }

    /// The value of `option` on the command line (its last occurrence), or nil.
    func value<Value>(_ option: Valued<Value>) throws -> Value? {
        guard let text = text(option) else { return nil }
        return try option.read(text, option.long)
    }

    /// The value of `option` on the command line, else of its environment variable (the
    /// error then names the variable), else nil.
    func setting<Value>(_ option: Valued<Value>) throws -> Value? {
        if let text = text(option) { return try option.read(text, option.long) }
        guard let name = option.environment, let text = Invocation.env(name) else { return nil }
        return try option.read(text, name)
    }

    /// The text `option` was given, unread: for passing the command line on to a child
    /// process, which reads it itself.
    func text(_ option: some DeclaredOption) -> String? {
        assert(declares(option), "\(command.name) reads \(option.long), which it does not declare")
        return options.last { $0.spec.long == option.long }?.value
    }

    /// The occurrences of `list`'s options, in command-line order, each with its option and
    /// its words (two for an option of arity 2).
    func occurrences(of list: [any DeclaredOption]) -> [(option: OptionSpec, words: [String])] {
        let longs = Set(list.map(\.long))
        return options.filter { longs.contains($0.spec.long) }.map { o in
            (o.spec, o.value.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init))
        }
    }

    /// Whether `option` is one of the command's or a global option (a look-up of anything
    /// else would always read "not given").
    private func declares(_ option: some DeclaredOption) -> Bool {
        command.options.contains { $0.long == option.long } || Registry.globalOptions.contains { $0.long == option.long }
    }

    var pretty: Bool { has(Global.pretty) }
    var quiet: Bool { has(Global.quiet) }

    /// Says `text` on stderr with `-v` (built only then).
    func verbose(_ text: @autoclosure () -> String) {
        if has(Global.verbose) { Diagnostics.verbose(text()) }
    }

    func usageError(_ message: String) -> RTDBError { RTDBError(.usage, message) }

    /// Exactly `names.count` arguments (for commands with fixed arity), else a usage error.
    func arguments(_ names: [String], optional: Int = 0) throws -> [String] {
        let required = names.count - optional
        if positionals.count < required {
            throw usageError("\(command.name): missing \(names[positionals.count])")
        }
        if positionals.count > names.count {
            throw usageError("\(command.name): unexpected argument \(Limits.quote(positionals[names.count]))")
        }
        return positionals
    }

    /// The first argument as one of `A`'s cases: the ACTION of a command that does several
    /// things (`cache info`, `keep add`). A missing or unknown one is a usage error naming them.
    func action<A: RawRepresentable & CaseIterable>(_: A.Type) throws -> A where A.RawValue == String {
        let listed = spokenChoices(A.allCases.map(\.rawValue))
        guard let word = positionals.first else { throw usageError("\(command.name): missing ACTION (\(listed))") }
        guard let action = A(rawValue: word) else {
            throw usageError("\(command.name): unknown action \(Limits.quote(word)); use \(listed)")
        }
        return action
    }

    /// A path argument (`what` names it in the error: PATH, or the option that takes it). An
    /// empty one is a usage error, never the root: `rtdb remove "$UNSET"` must not delete
    /// everything, so the root is only ever written `/`.
    func path(_ text: String, naming what: String = "PATH") throws -> Path {
        try nonEmptyPath(text, naming: what)
        return try Path(text)
    }

    /// The usage error for an empty path argument (also for a location pattern, which is not a `Path`).
    func nonEmptyPath(_ text: String, naming what: String = "PATH") throws {
        if text.isEmpty { throw usageError("\(command.name): \(what) is empty (an unset variable?); the root is written /") }
    }

    // MARK: environment and target

    static func env(_ name: String) -> String? {
        guard let p = getenv(name) else { return nil }
        let s = String(cString: p)
        return s.isEmpty ? nil : s
    }

    /// The database file this command line names: --db, RTDB_DB, or the XDG default.
    static func databaseFile(option: String?, ignoringEnv: Bool = false) -> String {
        if let f = option, !f.isEmpty { return f }
        if !ignoringEnv, let f = env("RTDB_DB") { return f }
        if let x = env("XDG_DATA_HOME"), x.hasPrefix("/") { return x + "/rtdb/default.db" }
        var home = env("HOME")
        if home == nil, let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { home = String(cString: dir) }
        return (home ?? ".") + "/.local/share/rtdb/default.db"
    }

    func timeoutSeconds() throws -> Double {
        try setting(Global.timeout) ?? 10
    }

    func output(streaming: Bool = false) -> Output {
        Output(pretty: pretty, quiet: quiet, streaming: streaming)
    }

    /// The output of a write command once its write at `path` has committed (see `Output.committed`).
    func output(committed path: Path) -> Output {
        let out = output()
        out.committed = path
        return out
    }
}

/// Reads a whole file descriptor of JSON text, refusing more than `limit` bytes as they arrive:
/// at most `limit + 1` bytes are ever read, into a buffer reserved once (memory stays within the
/// limit plus one chunk). The size of a regular file is checked first, so an oversized file is
/// refused without being read at all. A UTF-8 byte-order mark at the start is dropped (RFC 8259
/// lets a parser ignore it).
/// `prefix`: bytes already read from `fd` (they count towards the limit).
func readAll(fd: Int32, limit: Int, what: String, prefix: [UInt8] = []) throws -> [UInt8] {
    var bytes = try readBounded(fd: fd, limit: limit, what: what, prefix: prefix)
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
    return bytes
}

private func readBounded(fd: Int32, limit: Int, what: String, prefix: [UInt8]) throws -> [UInt8] {
    let tooLarge = RTDBError(.tooLarge, "\(what) is larger than the write limit of \(limit) bytes")
    var capacity = limit + 1
    var st = stat()
    if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG {
        let offset = lseek(fd, 0, SEEK_CUR)
        let remaining = Int(st.st_size) - Int(max(offset, 0)) + prefix.count
        if remaining > limit { throw tooLarge }
        capacity = max(remaining, 0) + 1   // one byte more shows that the file grew meanwhile
    }
    var out: [UInt8] = []
    out.reserveCapacity(capacity)
    out.append(contentsOf: prefix)
    if out.count > limit { throw tooLarge }
    var chunk = [UInt8](repeating: 0, count: min(1 << 20, limit + 1))
    while true {
        let want = min(chunk.count, limit + 1 - out.count)
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
        if n < 0 {
            if errno == EINTR { continue }
            throw RTDBError(.ioError, "cannot read \(what): \(String(cString: strerror(errno)))")
        }
        if n == 0 { return out }
        out.append(contentsOf: chunk[0..<n])
        if out.count > limit { throw tooLarge }
    }
}

func readFile(_ path: String, limit: Int) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    if fd < 0 {
        let e = errno
        throw RTDBError(e == EACCES ? .permissionDenied : .ioError, "cannot read \(path): \(String(cString: strerror(e)))")
    }
    defer { close(fd) }
    return try readAll(fd: fd, limit: limit, what: path)
}
