import RTDBCore
import RTDBRemote

/// The offline-cache settings of a remote command line, read only for a
/// remote target: a command on the embedded file never looks at them.
struct OfflineOptions {
    static let defaultCacheSize = 10_485_760
    static let cacheSizeRange = 1_048_576...104_857_600

    /// `--persist` alone: auto; `--offline`; `--online`.
    var mode: CacheMode
    var file: String
    var cacheSize: Int
    var connectTimeoutSeconds: Double
    var authCommand: String?

    /// The settings, or nil when the command line asks for no cache (remote commands then
    /// behave exactly as without this feature). Bad values are usage errors.
    /// `persist` asks for the cache whatever the command line says (`session --client-side`).
    static func parse(_ inv: Invocation, target: RemoteTarget, persist forced: Bool = false) throws -> OfflineOptions? {
        let cacheFile = try inv.setting(Global.cache)
        let offline = inv.has(Global.offline) || flag("RTDB_OFFLINE")
        let persist = forced || inv.has(Global.persist) || flag("RTDB_PERSIST") || cacheFile != nil || offline
        guard persist else { return nil }
        // (--offline with --online is refused by the parser: `Registry.globalExclusions`.)
        let mode: CacheMode = inv.has(Global.online) ? .online : offline ? .offline : .auto
        let size = try inv.setting(Global.cacheSize) ?? defaultCacheSize
        let connect = try inv.setting(Global.connectTimeout) ?? 3.0
        var command = try inv.value(Global.authCommand) ?? Invocation.env("RTDB_AUTH_COMMAND")
        if let c = command, c.allSatisfy({ $0 == " " || $0 == "\t" }) { command = nil }
        return OfflineOptions(mode: mode, file: cacheFile ?? defaultFile(target), cacheSize: size,
                              connectTimeoutSeconds: connect, authCommand: command)
    }

    /// `RTDB_PERSIST=1`-style switches: `1` (or `true`, `yes`) turns them on.
    static func flag(_ name: String) -> Bool {
        guard let v = Invocation.env(name) else { return false }
        return ["1", "true", "yes"].contains(RemoteTarget.ascii(lowercased: v))
    }

    /// `$XDG_DATA_HOME/rtdb/remote/<host>[%3A<port>]_<ns>.db`: one cache per database.
    static func defaultFile(_ target: RemoteTarget) -> String {
        let data = Invocation.databaseFile(option: nil, ignoringEnv: true)
        let folder = String(data.dropLast("default.db".count)) + "remote/"
        let defaultPort = target.secure ? 443 : 80
        var host = ""
        for ch in target.host.unicodeScalars {
            switch ch {
            case "a"..."z", "A"..."Z", "0"..."9", ".", "-", "_": host.unicodeScalars.append(ch)
            default: host += "%" + String(ch.value, radix: 16, uppercase: true)
            }
        }
        if target.port != defaultPort { host += "%3A\(target.port)" }
        return folder + host + "_" + target.namespace + ".db"
    }
}
