import RTDBCore
import RTDBEngine
import RTDBRemote
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

    func has(_ long: String) -> Bool { options.contains { $0.spec.long == long } }
    func value(_ long: String) -> String? { options.last { $0.spec.long == long }?.value }

    var pretty: Bool { has("--pretty") }
    var quiet: Bool { has("--quiet") }

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

    func path(_ text: String) throws -> Path { try Path(text) }

    // MARK: environment and target

    static func env(_ name: String) -> String? {
        guard let p = getenv(name) else { return nil }
        let s = String(cString: p)
        return s.isEmpty ? nil : s
    }

    /// The database file this command line names: --db, RTDB_DB, or the XDG default.
    static func databaseFile(option: String?) -> String {
        if let f = option, !f.isEmpty { return f }
        if let f = env("RTDB_DB") { return f }
        if let x = env("XDG_DATA_HOME"), x.hasPrefix("/") { return x + "/rtdb/default.db" }
        var home = env("HOME")
        if home == nil, let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { home = String(cString: dir) }
        return (home ?? ".") + "/.local/share/rtdb/default.db"
    }

    func timeoutSeconds() throws -> Double {
        guard let text = value("--timeout") ?? Invocation.env("RTDB_TIMEOUT") else { return 10 }
        guard let t = Double(text), t.isFinite, t >= 0 else {
            throw usageError("--timeout needs a number of seconds, not \(Limits.quote(text))")
        }
        return t
    }

    /// Opens the target: the remote database for --url / RTDB_URL, else the embedded file.
    func database() throws -> Database {
        if let f = value("--db"), f.isEmpty {
            // SQLite would treat "" as a throw-away temporary database: writes would vanish.
            throw usageError("--db needs a file name")
        }
        if let url = value("--url") ?? Invocation.env("RTDB_URL") {
            return try remoteDatabase(url)
        }
        return EmbeddedDatabase(file: Invocation.databaseFile(option: value("--db")), timeoutSeconds: try timeoutSeconds())
    }

    func remoteDatabase(_ url: String) throws -> RemoteDatabase {
        if value("--url") != nil && value("--db") != nil { throw usageError("--db and --url exclude each other") }
        let target = try RemoteTarget.parse(url, emulatorHost: Invocation.env("FIREBASE_DATABASE_EMULATOR_HOST"))
        let credential = try Credential.resolve(
            option: { self.value($0) }, env: Invocation.env,
            readFile: { try readFile($0, limit: 1 << 20) },
            cacheFolder: ServiceAccount.defaultCacheFolder(env: Invocation.env), now: RemoteDatabase.wallClock)
        var caFile: String? = nil
        if let f = value("--cacert") ?? Invocation.env("RTDB_CACERT") {
            guard access(f, R_OK) == 0 else {
                throw usageError("--cacert \(Limits.quote(f)): cannot read it: \(String(cString: strerror(errno)))")
            }
            caFile = f
        }
        return RemoteDatabase(target: target, credential: credential, timeoutSeconds: try timeoutSeconds(), caFile: caFile)
    }

    func output(streaming: Bool = false) -> Output {
        Output(pretty: pretty, quiet: quiet, streaming: streaming)
    }
}

/// Reads a whole file descriptor, refusing more than `limit` bytes.
func readAll(fd: Int32, limit: Int, what: String) throws -> [UInt8] {
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            throw RTDBError(.ioError, "cannot read \(what): \(String(cString: strerror(errno)))")
        }
        if n == 0 { return out }
        out.append(contentsOf: chunk[0..<n])
        if out.count > limit {
            throw RTDBError(.tooLarge, "\(what) is larger than the write limit of \(limit) bytes")
        }
        if n == chunk.count && chunk.count < 1 << 22 { chunk = [UInt8](repeating: 0, count: chunk.count * 4) }
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
