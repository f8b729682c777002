import RTDBCore
import RTDBEngine
import RTDBRules
import RTDBWire

/// Firebase's REST API over `Database`: one parsed request in, one
/// response (or a stream to open) out. No I/O of its own besides the database calls, and it
/// never throws: every failure becomes Firebase's `{"error": "…"}` with its status (ErrorStatus.swift).
///
/// The order of checks: CORS preflight; method and method override; known query
/// parameters; credentials (so an unauthorised client learns nothing else); namespace; path;
/// per-method parameters; then the operation. Decisions where Firebase leaves a choice:
/// * Namespace: `ns` wins; otherwise the first label of a `Host` name with at least two labels
///   that is not an IP address (`mydb.localhost:9000` → `mydb`); otherwise `defaultNamespace`
///   (`fake-server`, the emulator's name when no project is known). A namespace is 1–63
///   characters of letters, digits, `-` and `_` (it may name a file); a bad `ns` is 400.
/// * A path must end in `.json` (else 404); segments are percent-decoded by RFC 3986 (`+`
/// stays `+`) and validated as keys; 400 `Invalid path: …` otherwise.
/// * Unknown query parameters are 400, as are parameters on a method that does not take them.
/// * `timeout` (`<n>ms`, `<n>s` or `<n>min`, at most 15 min) is validated; local reads are never
///   cut short, so it bounds nothing here.
/// * `writeSizeLimit` (`tiny`, `small`, `medium`, `large`, `unlimited`) is validated on writes.
///   Firebase uses it to refuse writes whose estimated service time is too long; a local commit
///   has no shared service time to protect, so every level accepts any write within the data
///   limits (256 MiB per write, `Limits.maxWriteBytes`).
/// * ETags describe the whole value at the location, so `X-Firebase-ETag` / `if-none-match`
///   combined with `shallow` or a query are 400. `if-match` works on PUT and DELETE (POST and
///   PATCH: 400). `if-match: *` means "exists".
/// * Security rules (RESTRules.swift): reads and writes of non-admin principals are
///   checked when rules are loaded; `.indexOn` is enforced only with `strictIndexes` (the
///   emulator answers every `orderBy`).
/// * `format=export` answers values with their priorities (`{".value":v,".priority":p}`
///   leaves, `".priority"` keys); `/PATH/.priority.json` reads and writes a node's priority;
///   `orderBy="$priority"` orders by Firebase's priority rule. ETags hash the node with its
///   priorities, as Firebase's node hash does.
/// * `/.settings/rules.json` (admin only): GET answers the rules source (or, with no rules,
///   the open rules), `format=strict` as plain JSON; PUT replaces the namespace's rules
///   (`dryRun=true` only checks them); bad rules are 400 with one `line:column: message` per
///   problem and the old rules stay.
public final class RESTHandler {
    let provider: NamespaceProvider
    let secret: String?
    /// Rules, tokens and indexes (RESTRules.swift).
    public var security = SecurityOptions()
    /// The read and write size limits (ServeLimits.swift).
    public var sizeLimits = ServeLimits()
    /// Plain reads are first bounded from their rows and refused past the response limit
    /// without rendering (set on the copies that answer large reads, DetachedReads.swift).
    var boundsReads = false
    /// Rules put at run time or stored with the data, by the data they govern
    /// (`NamespaceProvider.rulesScope`): they replace `security.rules` for every namespace that
    /// names that data. Shared with this handler's copies (RulesTable.swift).
    let rulesTable: RulesTable
    /// This handler's view of `rulesTable` (its thread's alone).
    var rulesView = RulesTable.View()
    /// Called with the namespace after its rules change (the server re-checks its streams).
    public var onRulesChanged: ((String) -> Void)?
    /// Milliseconds since the Unix epoch: the rules' `now` and the writes' timestamps.
    public var clock: () -> Int64 = { EmbeddedDatabase.systemClock() }
    /// Decoded ID tokens (RESTRules.swift).
    let tokens = TokenCache()
    /// Push IDs of writes checked by rules (the key must be known before the write).
    var pushIDs = PushIDGenerator()
    /// The namespace of requests that name none (no `ns`, no usable host label).
    public var defaultNamespace = "fake-server"
    /// The last path parsed into a target (`target(of:)`).
    private var lastTarget: (rawPath: String, target: RESTTarget)? = nil

    public convenience init(provider: NamespaceProvider, secret: String?) {
        self.init(provider: provider, secret: secret, rules: RulesTable())
    }

    init(provider: NamespaceProvider, secret: String?, rules: RulesTable) {
        self.provider = provider
        self.secret = secret
        self.rulesTable = rules
    }

    /// A handler with the same settings over `provider`, for another thread (a detached read
    /// or write, another loop): it shares only the rules table with this one, which is locked.
    func detachedCopy(provider: NamespaceProvider) -> RESTHandler {
        let h = RESTHandler(provider: provider, secret: secret, rules: rulesTable)
        h.security = security
        h.sizeLimits = sizeLimits
        h.clock = clock
        // A generator of its own (a copy would continue this one's sequence and could repeat
        // a key made here in the same millisecond).
        h.pushIDs = PushIDGenerator()
        h.defaultNamespace = defaultNamespace
        return h
    }

    static let allowedMethods = "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS"

    /// What a request path names (`RESTTarget`), which depends on the path alone: the last one
    /// parsed is kept, since the server parses a read's path twice (`isLargeRead`, then
    /// `route`) and clients send the same paths again and again. A path that fails to parse is
    /// parsed, and fails, every time.
    func target(of rawPath: String) throws -> RESTTarget {
        if let last = lastTarget, last.rawPath == rawPath { return last.target }
        let target = try RESTTarget(rawPath: rawPath)
        lastTarget = (rawPath, target)
        return target
    }

    /// Parameters accepted on every method.
    static let commonParameters: Set<String> = ["auth", "access_token", "auth_variable_override", "ns", "print",
                                                "timeout", "disableTriggers", "ac", "x-http-method-override"]
    /// Parameters of reads only.
    static let readParameters: Set<String> = RESTQuery.names.union(["shallow", "format", "callback", "download"])
    /// Parameters of writes only.
    static let writeParameters: Set<String> = ["writeSizeLimit"]

    /// Never throws: errors become responses.
    public func handle(_ request: HTTPRequest) -> RESTOutcome {
        let outcome: RESTOutcome
        do {
            outcome = try route(request)
        } catch let e as RESTError {
            outcome = .response(e.response)
        } catch let e as RTDBError {
            outcome = .response(RESTError.from(e).response)
        } catch {
            outcome = .response(RESTError(500, "internal error").response)
        }
        guard case .response(var r) = outcome else { return outcome }
        r.headers.append(("Access-Control-Allow-Origin", "*"))
        return .response(r)
    }

    // MARK: routing

    func route(_ request: HTTPRequest) throws -> RESTOutcome {
        if request.method == "OPTIONS" { return .response(preflight(request)) }
        let method = try effectiveMethod(request)
        let rulesPath = request.rawPath.hasSuffix("/.settings/rules.json")
        for q in request.query where !(rulesPath && q.name == "dryRun") {
            let known = RESTHandler.commonParameters.contains(q.name) || RESTHandler.readParameters.contains(q.name)
                || RESTHandler.writeParameters.contains(q.name)
            if !known { throw RESTError(400, "unknown query parameter \(Limits.quote(q.name))") }
        }
        let namespace = try self.namespace(request)
        if rulesPath, case .rules = try target(of: request.rawPath) {
            return .response(try rulesEndpoint(request, method: method, namespace: namespace))
        }
        if let page = RESTHandler.coveragePage(request.rawPath) {
            return .response(try coverageEndpoint(request, method: method, namespace: namespace, page: page))
        }
        let principal = try self.principal(request, namespace: namespace)
        let target = try self.target(of: request.rawPath)
        try checkParameters(request, method: method)

        switch target {
        case .inspectDatabases:
            guard method == "GET" || method == "HEAD" else { throw notAllowed("GET") }
            // The names of other databases are the server's, not any one database's: with a
            // secret only the secret lists them, whatever a namespace's rules let a user read.
            if secret != nil && !hasAdminCredential(request) { throw RESTError.permissionDenied }
            let names = try provider.namespaces()
            var out: [UInt8] = [UInt8(ascii: "[")]
            for (i, n) in names.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out += Array("{\"name\":".utf8)
                JSONWriter.appendString(n, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
            return .response(headOnly(HTTPResponse.json(200, bytes: out), method))
        case .rules:
            return .response(try rulesEndpoint(request, method: method, namespace: namespace))
        case .priority(let path):
            // The node's priority, as a pseudo-child; the rules of
            // the node apply.
            if RESTHandler.wantsStream(request) { throw RESTError(400, "streaming a .priority path is not supported") }
            let context = Context(request: request, namespace: namespace, path: path.appending(Path.priorityKey), principal: principal)
            switch method {
            case "GET", "HEAD": return try get(context, method: method)
            case "PUT": return .response(try put(context))
            case "DELETE": return .response(try delete(context))
            default: throw notAllowed("GET, PUT, DELETE")
            }
        case .data(let path):
            let context = Context(request: request, namespace: namespace, path: path, principal: principal)
            switch method {
            case "GET", "HEAD": return try get(context, method: method)
            case "PUT": return .response(try put(context))
            case "POST": return .response(try post(context))
            case "PATCH": return .response(try patch(context))
            case "DELETE": return .response(try delete(context))
            default: throw notAllowed(RESTHandler.allowedMethods)
            }
        }
    }

    struct Context {
        var request: HTTPRequest
        var namespace: String
        var path: Path
        var principal: Principal = .admin
        var pretty: Bool { request.queryValue("print") == "pretty" }
        var silent: Bool { request.queryValue("print") == "silent" }
        func database(_ provider: NamespaceProvider) throws -> Database { try provider.database(namespace) }
    }

    func notAllowed(_ allow: String) -> RESTError {
        RESTError(405, "method not allowed here", headers: [("Allow", allow)])
    }

    /// The method to run: POST may name another with `X-HTTP-Method-Override` (header or
    /// query parameter `x-http-method-override`).
    func effectiveMethod(_ request: HTTPRequest) throws -> String {
        let override = request.header("x-http-method-override") ?? request.queryValue("x-http-method-override")
        guard let override else {
            switch request.method {
            case "GET", "HEAD", "PUT", "POST", "PATCH", "DELETE": return request.method
            default: throw notAllowed(RESTHandler.allowedMethods)
            }
        }
        guard request.method == "POST" else {
            throw RESTError(400, "a method override is only accepted on POST")
        }
        let m = override.uppercased()
        guard ["PUT", "PATCH", "DELETE", "POST", "GET"].contains(m) else {
            throw RESTError(400, "unsupported method override \(Limits.quote(override))")
        }
        return m
    }

    /// CORS preflight: any origin may use the API with the methods and headers it needs.
    func preflight(_ request: HTTPRequest) -> HTTPResponse {
        let headers = request.header("access-control-request-headers")
            ?? "Authorization, Content-Type, If-Match, If-None-Match, X-Firebase-ETag, X-HTTP-Method-Override"
        return HTTPResponse(status: 204, headers: [
            ("Allow", RESTHandler.allowedMethods),
            ("Access-Control-Allow-Methods", RESTHandler.allowedMethods),
            ("Access-Control-Allow-Headers", headers),
            ("Access-Control-Max-Age", "86400"),
        ])
    }

    func namespace(_ request: HTTPRequest) throws -> String {
        if let ns = request.queryValue("ns") {
            guard RESTHandler.validNamespace(ns) else {
                throw RESTError(400, "invalid namespace \(Limits.quote(ns)): use 1 to 63 letters, digits, '-' or '_'")
            }
            return ns
        }
        if let host = request.header("host"), let label = RESTHandler.hostLabel(host),
           RESTHandler.validNamespace(label) {
            return label
        }
        return defaultNamespace
    }

    static func validNamespace(_ s: String) -> Bool {
        let u = s.utf8
        return !u.isEmpty && u.count <= 63 && u.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
    }

    /// The first label of a host name with two labels or more; nil for IP addresses and
    /// single-label names such as `localhost`.
    /// Read from the bytes in one pass: it runs for every request.
    static func hostLabel(_ host: String) -> String? {
        var host = host
        return host.withUTF8 { u -> String? in
            if u.first == UInt8(ascii: "[") { return nil }   // IPv6 literal
            let end = u.firstIndex(of: UInt8(ascii: ":")) ?? u.count
            guard let dot = u[..<end].firstIndex(of: UInt8(ascii: ".")), dot != 0 else { return nil }
            // An IPv4 address: every label digits, none empty.
            var numeric = true
            var labelLength = 0
            for b in u[..<end] {
                if b == UInt8(ascii: ".") {
                    if labelLength == 0 { numeric = false }
                    labelLength = 0
                } else {
                    labelLength += 1
                    if b < 0x30 || b > 0x39 { numeric = false }
                }
            }
            if numeric && labelLength > 0 { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: u[..<dot]), as: UTF8.self)
        }
    }

    /// Per-method parameter rules and value checks.
    func checkParameters(_ request: HTTPRequest, method: String) throws {
        let isRead = method == "GET" || method == "HEAD"
        for q in request.query {
            if !isRead && RESTHandler.readParameters.contains(q.name) {
                throw RESTError(400, "query parameter \(Limits.quote(q.name)) is only accepted on GET")
            }
            if isRead && RESTHandler.writeParameters.contains(q.name) {
                throw RESTError(400, "query parameter \(Limits.quote(q.name)) is only accepted on writes")
            }
        }
        if let p = request.queryValue("print"), p != "pretty" && p != "silent" {
            throw RESTError(400, "print must be \"pretty\" or \"silent\"")
        }
        if let f = request.queryValue("format"), f != "export" {
            throw RESTError(400, "format must be \"export\"")
        }
        if let s = request.queryValue("shallow"), s != "true" && s != "false" {
            throw RESTError(400, "shallow must be true or false")
        }
        if let d = request.queryValue("disableTriggers"), d != "true" && d != "false" {
            throw RESTError(400, "disableTriggers must be true or false")
        }
        if let t = request.queryValue("timeout") { try RESTHandler.checkTimeout(t) }
        if let w = request.queryValue("writeSizeLimit"),
           !["tiny", "small", "medium", "large", "unlimited"].contains(w) {
            throw RESTError(400, "writeSizeLimit must be tiny, small, medium, large or unlimited")
        }
        if let c = request.queryValue("callback"), !RESTHandler.validCallback(c) {
            throw RESTError(400, "callback must be a JavaScript function name")
        }
        if let d = request.queryValue("download"), !RESTHandler.validFilename(d) {
            throw RESTError(400, "download must be a file name without quotes, slashes or control characters")
        }
        if let a = request.queryValue("auth_variable_override") {
            guard let v = try? JSONReader.parse(a), v.isNull || v.isObject else {
                throw RESTError(400, "auth_variable_override must be a JSON object")
            }
        }
    }

    /// `<n>ms`, `<n>s` or `<n>min`, at most 15 minutes.
    static func checkTimeout(_ t: String) throws {
        let u = Array(t.utf8)
        var i = 0
        while i < u.count, u[i] >= 0x30 && u[i] <= 0x39 { i += 1 }
        let unit = String(decoding: u[i...], as: UTF8.self)
        let digits = String(decoding: u[..<i], as: UTF8.self)
        let scale: Int
        switch unit {
        case "ms": scale = 1
        case "s": scale = 1000
        case "min": scale = 60_000
        default: throw RESTError(400, "timeout must be a number followed by ms, s or min")
        }
        guard !digits.isEmpty, digits.utf8.count <= 9, let n = Int(digits) else {
            throw RESTError(400, "timeout must be a number followed by ms, s or min")
        }
        if n * scale > 900_000 { throw RESTError(400, "timeout must be at most 15 minutes") }
    }

    static func validCallback(_ c: String) -> Bool {
        let u = c.utf8
        guard let first = u.first, !(first >= 0x30 && first <= 0x39), u.count <= 256 else { return false }
        return u.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "$") || $0 == UInt8(ascii: ".")
        }
    }

    static func validFilename(_ d: String) -> Bool {
        let u = d.utf8
        return !u.isEmpty && u.count <= 255 && u.allSatisfy {
            $0 >= 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "/")
        }
    }

    /// Whether `request` asks for an event stream: any of its `Accept` headers names
    /// `text/event-stream` (a client may send several, `application/json` first).
    static func wantsStream(_ request: HTTPRequest) -> Bool {
        request.headerValues("accept").contains { $0.lowercased().contains("text/event-stream") }
    }

    /// A HEAD answer: the GET headers with `Content-Length` of the body it leaves out.
    func headOnly(_ r: HTTPResponse, _ method: String) -> HTTPResponse {
        guard method == "HEAD" else { return r }
        var h = r
        if h.header("content-length") == nil && r.status != 204 && r.status != 304 {
            h.headers.append(("Content-Length", String(r.body.count)))
        }
        h.body = []
        return h
    }
}
