import RTDBCore
import RTDBWire

/// How requests to a remote database are authenticated.
///
/// The secret inside is never printed: `description` names the kind only, and errors built
/// from these values never include it.
public enum Credential: Sendable, CustomStringConvertible {
    /// Nothing is sent (an emulator-style URL over plain http sends `Bearer owner` instead).
    case none
    /// An OAuth2 access token, sent as `Authorization: Bearer TOKEN`.
    case accessToken(String)
    /// A Firebase ID token or database secret, sent as the `auth=` query parameter.
    case auth(String)
    /// A Google service-account key: its access tokens are minted and cached on demand.
    case serviceAccount(ServiceAccount)

    public var description: String {
        switch self {
        case .none: return "no credential"
        case .accessToken: return "an access token"
        case .auth: return "an auth token"
        case .serviceAccount(let s): return "the service account \(s.key.clientEmail)"
        }
    }

    /// Picks the credential by the rule "most specific wins": an option on the command line
    /// beats an environment variable, and among options (then among variables) an access token
    /// beats an auth token, which beats a service-account key file.
    /// `accessToken`, `auth` and `credentials` are the options `--access-token`, `--auth` and
    /// `--credentials` as given (nil when not), `env(name)` answers an environment variable.
    public static func resolve(accessToken: String?, auth: String?, credentials: String?, env: (String) -> String?,
                               readFile: (String) throws -> [UInt8], cacheFolder: String?,
                               now: @escaping @Sendable () -> Int64) throws -> Credential {
        if let t = accessToken { return .accessToken(try token(t, "--access-token")) }
        if let t = auth { return .auth(try token(t, "--auth")) }
        if let f = credentials {
            return .serviceAccount(try ServiceAccount(file: f, bytes: readFile(f), cacheFolder: cacheFolder, now: now))
        }
        if let t = env("RTDB_ACCESS_TOKEN") { return .accessToken(try token(t, "RTDB_ACCESS_TOKEN")) }
        if let t = env("RTDB_AUTH") { return .auth(try token(t, "RTDB_AUTH")) }
        if let f = env("GOOGLE_APPLICATION_CREDENTIALS") {
            return .serviceAccount(try ServiceAccount(file: f, bytes: readFile(f), cacheFolder: cacheFolder, now: now))
        }
        return .none
    }

    /// A token must be one line of visible ASCII: anything else could split the request head.
    static func token(_ text: String, _ name: String) throws -> String {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw RTDBError(.usage, "\(name) needs a token of visible ASCII characters (no spaces or line breaks)")
        }
        return text
    }
}

/// The header and query parameter a request carries for a credential.
struct Authorization {
    var header: (name: String, value: String)?
    var param: (name: String, value: String)?
}
