import RTDBCore
import RTDBWire

/// Where a remote database lives, parsed from `--url` / `RTDB_URL`. Three shapes are accepted
/// and nothing else:
/// * `https://NS.firebaseio.com` and `https://NS.REGION.firebasedatabase.app` (production; the
///   namespace is the first label of the host);
/// * `http(s)://HOST[:PORT]?ns=NS` (the Firebase emulator or `rtdb serve`; `ns` is sent with
///   every request). Without `?ns=` such a URL (plain http, or one that names its port, as the
///   line `rtdb serve` prints does) takes the namespace the server would pick for a request
///   without one (`DefaultNamespace`), and sends it; an https URL without a port that is not a
///   Firebase host is refused, as a mistyped production URL more likely than an emulator.
/// A trailing `/` is allowed; a path, a fragment, user information or another query parameter
/// is refused, since the database path is the command's own argument. With
/// `FIREBASE_DATABASE_EMULATOR_HOST=HOST:PORT`, a production URL is redirected to that emulator
/// over http, `ns` taken from the URL, as the Firebase SDKs do.
public struct RemoteTarget: Sendable, Equatable {
    public var secure: Bool
    /// Host name or address as written (an IPv6 literal keeps its brackets).
    public var host: String
    public var port: Int
    public var namespace: String
    /// Emulator-style addressing: `ns=` on every request, `Bearer owner` over plain http.
    public var emulator: Bool
    /// Where `namespace` came from, for messages (`-v`); not part of the target's identity.
    public var namespaceSource: NamespaceSource

    /// Where the URL itself came from: the errors about it name that option or variable.
    public enum URLSource: String, Sendable {
        case option = "--url"
        case environment = "RTDB_URL"
    }

    /// Where a target's namespace came from.
    public enum NamespaceSource: Sendable {
        /// `?ns=NAME` in the URL.
        case parameter
        /// A production host's first label (also when redirected to an emulator).
        case productionHost
        /// None in the URL: the server's default for this host (`DefaultNamespace`).
        case serverDefault

        /// For a sentence, in parentheses after the namespace: "from ?ns= in the URL", ….
        public var explanation: String {
            switch self {
            case .parameter: return "from ?ns= in the URL"
            case .productionHost: return "the database name that starts the host name"
            case .serverDefault: return "the URL names none: the server's default for this host, as rtdb serve and the emulator pick it"
            }
        }
    }

    public init(secure: Bool, host: String, port: Int, namespace: String, emulator: Bool,
                namespaceSource: NamespaceSource = .parameter) {
        self.secure = secure
        self.host = host
        self.port = port
        self.namespace = namespace
        self.emulator = emulator
        self.namespaceSource = namespaceSource
    }

    public static func == (a: RemoteTarget, b: RemoteTarget) -> Bool {
        a.secure == b.secure && a.host == b.host && a.port == b.port && a.namespace == b.namespace && a.emulator == b.emulator
    }

    /// The `Host` header value.
    public var hostHeader: String {
        (secure && port == 443) || (!secure && port == 80) ? host : "\(host):\(port)"
    }

    /// The URL without credentials, for messages.
    public var display: String {
        (secure ? "https://" : "http://") + hostHeader + (emulator ? "?ns=\(namespace)" : "")
    }

    /// `url` as a target; a usage error naming `source` (and the URL, redacted) when it is not
    /// one of the accepted shapes.
    public static func parse(_ url: String, from source: URLSource = .option, emulatorHost: String? = nil) throws -> RemoteTarget {
        func bad(_ why: String) -> RTDBError {
            RTDBError(.usage, "\(source.rawValue) \(Limits.quote(redacted(url))): \(why); expected https://NAME.firebaseio.com, "
                + "https://NAME.REGION.firebasedatabase.app or http://HOST:PORT[?ns=NAME]")
        }
        let lower = ascii(lowercased: url)
        let secure: Bool
        var rest: Substring
        if lower.hasPrefix("https://") {
            secure = true
            rest = url.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            secure = false
            rest = url.dropFirst(7)
        } else {
            throw bad("not an http or https URL")
        }
        if rest.contains("#") { throw bad("a database URL has no fragment") }
        var query: Substring? = nil
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        var authority = rest
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            let path = rest[slash...]
            if path != "/" { throw bad("a database URL has no path (give the path as the command's PATH)") }
        }
        if authority.contains("@") { throw bad("user information in the URL is not supported (use --auth or --access-token)") }
        let (host, explicitPort) = try splitHostPort(String(authority), bad)
        let port = explicitPort ?? (secure ? 443 : 80)

        var namespace: String? = nil
        if let query {
            let params: [(name: String, value: String)]
            do { params = try PercentCoding.parseQuery(String(query)) } catch { throw bad("its query string is malformed") }
            for p in params {
                guard p.name == "ns" else { throw bad("unknown URL parameter \(Limits.quote(redactedName(p.name))) (only ns is allowed)") }
                namespace = p.value
            }
            if let ns = namespace, !validNamespace(ns) { throw bad("ns must be a non-empty name of letters, digits, - and _") }
        }

        let hostLower = ascii(lowercased: host)
        let labels = hostLower.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let production = (labels.count == 3 && hostLower.hasSuffix(".firebaseio.com"))
            || (labels.count == 4 && hostLower.hasSuffix(".firebasedatabase.app"))
        if production && namespace == nil {
            guard secure else { throw bad("production databases are served over https only") }
            let ns = labels[0]
            guard validNamespace(ns) else { throw bad("the host does not start with a database name") }
            if let emulatorHost {
                return try emulated(emulatorHost, namespace: ns)
            }
            return RemoteTarget(secure: true, host: hostLower, port: port, namespace: ns, emulator: false, namespaceSource: .productionHost)
        }
        if let ns = namespace {
            return RemoteTarget(secure: secure, host: host, port: port, namespace: ns, emulator: true)
        }
        guard !secure || explicitPort != nil else {
            throw bad("not a Firebase database's URL; an emulator or rtdb serve URL names its port (https://HOST:PORT)")
        }
        return RemoteTarget(secure: secure, host: host, port: port, namespace: DefaultNamespace.forHost(host), emulator: true,
                            namespaceSource: .serverDefault)
    }

    /// The emulator a production URL is redirected to by `FIREBASE_DATABASE_EMULATOR_HOST`.
    static func emulated(_ value: String, namespace: String) throws -> RemoteTarget {
        func bad(_ why: String) -> RTDBError {
            RTDBError(.usage, "FIREBASE_DATABASE_EMULATOR_HOST=\(Limits.quote(value)): \(why); expected HOST:PORT")
        }
        if value.contains("/") || value.contains("?") || value.contains("@") { throw bad("give HOST:PORT without a scheme or path") }
        let (host, port) = try splitHostPort(value, bad)
        guard let port else { throw bad("the port is missing") }
        return RemoteTarget(secure: false, host: host, port: port, namespace: namespace, emulator: true, namespaceSource: .productionHost)
    }

    static func splitHostPort(_ authority: String, _ bad: (String) -> RTDBError) throws -> (String, Int?) {
        var host = Substring(authority)
        var portText: Substring? = nil
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw bad("unclosed [ in the host") }
            let after = host[host.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw bad("unexpected text after the IPv6 address") }
                portText = after.dropFirst()
            }
            host = host[...close]
            if host.count <= 2 { throw bad("the host is empty") }
        } else {
            if let colon = host.lastIndex(of: ":") {
                portText = host[host.index(after: colon)...]
                host = host[..<colon]
            }
            if host.isEmpty { throw bad("the host is empty") }
            guard host.utf8.allSatisfy({ b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x2E || b == 0x5F
            }) else { throw bad("the host \(Limits.quote(String(host))) is not a host name or address") }
        }
        guard let portText else { return (String(host), nil) }
        guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let port = Int(portText), port >= 1, port <= 65535 else {
            throw bad("the port must be a number from 1 to 65535")
        }
        return (String(host), port)
    }

    static func validNamespace(_ ns: String) -> Bool {
        !ns.isEmpty && ns.utf8.count <= 128 && ns.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
        }
    }

    public static func ascii(lowercased s: String) -> String {
        String(decoding: s.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// The request target for `path` with `params` (names and values not yet encoded): each key
    /// percent-encoded, `.json` appended, then `ns` for an emulator-style target.
    public func requestTarget(_ path: Path, _ params: [(name: String, value: String)]) -> String {
        var t = "/" + path.keys.map(PercentCoding.encode).joined(separator: "/") + ".json"
        var all = params
        if emulator { all.append(("ns", namespace)) }
        if !all.isEmpty { t += "?" + PercentCoding.queryString(all) }
        return t
    }
}
