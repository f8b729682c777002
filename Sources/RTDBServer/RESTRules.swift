import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBRules
import RTDBWire

/// Verifies the RS256 signature of a Firebase ID token against Google's published keys.
/// `LibCryptoVerifier` does it with libcrypto (loaded on first use); without a verifier,
/// production-mode tokens are refused with that reason (never accepted unchecked).
public protocol TokenSignatureVerifier: AnyObject {
    /// True when `signature` is a valid RS256 signature of `input` by the RSA key (`n`, `e`,
    /// big-endian bytes).
    func verifyRS256(input: [UInt8], signature: [UInt8], modulus: [UInt8], exponent: [UInt8]) throws -> Bool
}

/// RS256 verification by OpenSSL's libcrypto, loaded on first use.
public final class LibCryptoVerifier: TokenSignatureVerifier {
    public init() {}
    public func verifyRS256(input: [UInt8], signature: [UInt8], modulus: [UInt8], exponent: [UInt8]) throws -> Bool {
        try RSAVerifier.verifyRS256(input: input, signature: signature, modulus: modulus, exponent: exponent)
    }
}

/// Google's token-signing keys as a JWKS file (`{"keys":[{"kid","n","e",…}]}`), read once at
/// start. Fetch them with
/// `curl -o jwks.json https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com`.
public struct JWKSKeys: Sendable {
    public struct Key: Sendable {
        public var kid: String
        public var modulus: [UInt8]
        public var exponent: [UInt8]
    }
    public var keys: [Key]

    /// Parses a JWKS document; `invalid_data` when it holds no usable RSA key.
    public init(json: String) throws {
        let doc: Node
        do { doc = try JSONReader.parse(json) } catch {
            throw RTDBError(.invalidJSON, "the key file is not JSON: \(error)")
        }
        var keys: [Key] = []
        for entry in doc.child("keys").children {
            let k = entry.node
            guard case .string(let kid) = k.child("kid"), case .string(let n) = k.child("n"), case .string(let e) = k.child("e"),
                  let nb = IDToken.base64(n), let eb = IDToken.base64(e), !nb.isEmpty, !eb.isEmpty else { continue }
            if case .string(let kty) = k.child("kty"), kty != "RSA" { continue }
            keys.append(Key(kid: kid, modulus: nb, exponent: eb))
        }
        if keys.isEmpty { throw RTDBError(.invalidData, "the key file holds no RSA keys (expected a JWKS document: {\"keys\":[{\"kid\",\"n\",\"e\"}]})") }
        self.keys = keys
    }

    func key(_ kid: String) -> Key? { keys.first { $0.kid == kid } }
}

/// The security settings of a REST handler.
public struct SecurityOptions {
    /// Rules for every namespace that has not had its own put; nil: no rules (everything is
    /// allowed, or only the secret with `secret`).
    public var rules: RuleSet? = nil
    /// Production-like tokens: verified for this project against `keys`.
    public var projectID: String? = nil
    public var keys: JWKSKeys? = nil
    public var verifier: TokenSignatureVerifier? = nil
    /// `orderBy` a child or `$value` without `.indexOn` is Firebase's 400.
    public var strictIndexes = false
    /// `Authorization: Bearer <anything>`, `access_token=` and `auth=owner` are the admin (the
    /// emulator's rule) when no secret is set; a server on a non-loopback address turns it off.
    public var ownerIsAdmin = true
    public init() {}
}

/// Decoded ID tokens by their text (bounded; emptied when full). Only tokens that decoded,
/// and in production mode whose signature verified, are kept.
final class TokenCache {
    struct Entry {
        var token: IDToken
        var auth: Node
        var signatureVerified: Bool
    }
    private(set) var entries: [String: Entry] = [:]
    static let capacity = 4096
    /// The entry found or kept last (always one of `entries`): a client sends the same token
    /// with every request, and comparing its text once costs less than hashing it.
    private var recent: (text: String, entry: Entry)?

    func entry(_ text: String) -> Entry? {
        if let recent, recent.text == text { return recent.entry }
        guard let found = entries[text] else { return nil }
        recent = (text, found)
        return found
    }

    func insert(_ text: String, _ entry: Entry) {
        if entries.count >= TokenCache.capacity { entries.removeAll(keepingCapacity: true) }
        entries[text] = entry
        recent = (text, entry)
    }

    func removeAll() {
        entries.removeAll()
        recent = nil
    }
}

/// What one stream needs to be checked again after commits and rules changes.
public struct StreamAccess: Sendable {
    public var namespace: String
    public var path: Path
    /// Who opened the stream, as the rules in force then judged it (its token's expiry ends it).
    public var principal: Principal
    public var query: RuleQuery
    /// The request that opened the stream, whose credentials are judged again under rules set
    /// later (nil: `principal` stands): a stream opened while no rules were loaded, when every
    /// client is the admin, must not outlive rules that refuse its client.
    public var credentials: HTTPRequest? = nil

    public init(namespace: String, path: Path, principal: Principal, query: RuleQuery, credentials: HTTPRequest? = nil) {
        self.namespace = namespace
        self.path = path
        self.principal = principal
        self.query = query
        self.credentials = credentials
    }
}

extension RESTHandler {
    static let unauthorized = RESTError(401, "Unauthorized request.")
    static let unparsableToken = RESTError(401, "Could not parse auth token.")

    /// Whether any rules are loaded, for any data.
    var hasRules: Bool { security.rules != nil || !rulesTable.isEmpty }

    /// The rules in force for `namespace` (nil: none loaded): those last set for the data it
    /// names, under whatever name they were set, or else those stored with it by an earlier
    /// run, unless rules were given at start (`--rules` wins over stored ones).
    func rules(for namespace: String) -> RuleSet? {
        let readsStored = security.rules == nil
        // Rules set for no data in particular (`--rules` alone): no name to look up.
        if rulesTable.isEmpty && !readsStored { return security.rules }
        let scope = provider.rulesScope(of: namespace)
        let known = rulesTable.lookup(scope, through: &rulesView)
        if known.read || !readsStored { return known.rules ?? security.rules }
        // Read once per file, when the server first needs its rules. Fails closed: stored
        // rules that cannot be read now refuse everyone but the admin (and are read again
        // next time); stored rules that no longer load do so until the admin puts new ones.
        do {
            guard let found = try provider.storedRules(of: namespace) else { return known.rules ?? security.rules }
            let stored = found.text.map { (try? RuleSet($0)) ?? RuleSet.closed }
            return rulesTable.recordStored(found.scope, stored) ?? security.rules
        } catch {
            return RuleSet.closed
        }
    }

    /// The credentials a request presents: `Authorization: Bearer` values, `access_token=`
    /// values and the `auth=` parameter.
    typealias Presented = (bearer: [String], accessTokens: [String], auth: String?)

    /// What `request` presents.
    func presented(_ request: HTTPRequest) -> Presented {
        var bearer: [String] = []
        for value in request.headerValues("authorization") {
            let u = Array(value.utf8)
            guard u.count > 7, String(decoding: u[..<6], as: UTF8.self).lowercased() == "bearer", u[6] == 0x20 else { continue }
            bearer.append(String(decoding: u[7...], as: UTF8.self).trimmingSpaces())
        }
        return (bearer, request.query.filter { $0.name == "access_token" }.map(\.value), request.queryValue("auth"))
    }

    /// True when the request carries the admin credential: the secret anywhere, or without a
    /// secret (and with `ownerIsAdmin`) any bearer token or access token, or `auth=owner`.
    func hasAdminCredential(_ request: HTTPRequest) -> Bool { hasAdminCredential(presented(request)) }

    func hasAdminCredential(_ credentials: Presented) -> Bool {
        let (bearer, accessTokens, authParam) = credentials
        if let secret {
            var ok = false
            for t in bearer + accessTokens + (authParam.map { [$0] } ?? []) {
                // Every candidate is compared in full; no early exit reveals which one matched.
                ok = RESTAuth.constantTimeEqual(t, secret) || ok
            }
            return ok
        }
        return security.ownerIsAdmin && (!bearer.isEmpty || !accessTokens.isEmpty || authParam == "owner")
    }

    /// Who sends `request`. Throws the 401s for credentials that are refused.
    func principal(_ request: HTTPRequest, namespace: String) throws -> Principal {
        let credentials = presented(request)
        let (bearer, accessTokens, authParam) = credentials
        let admin = hasAdminCredential(credentials)
        guard rules(for: namespace) != nil else {
            // No rules: open, except that a secret must be presented.
            if secret != nil && !admin { throw RESTError.permissionDenied }
            return .admin
        }
        if admin {
            guard let text = request.queryValue("auth_variable_override") else { return .admin }
            guard let v = try? JSONReader.parse(text) else { throw RESTError(400, "auth_variable_override must be a JSON object") }
            return v.isNull ? .anonymous : .user(auth: v)
        }
        if !bearer.isEmpty || !accessTokens.isEmpty { throw RESTHandler.unauthorized }
        guard let token = authParam else { return .anonymous }
        // Clients send the same token with every request: decode (and verify) it once.
        var entry: TokenCache.Entry
        var fresh = false
        if let cached = tokens.entry(token) {
            entry = cached
        } else {
            guard let jwt = IDToken(token), let auth = jwt.authObject else { throw RESTHandler.unparsableToken }
            entry = TokenCache.Entry(token: jwt, auth: auth, signatureVerified: false)
            fresh = true
        }
        if let project = security.projectID {
            // Claims first (their reasons are the useful ones), on every request: time moves on.
            if let problem = entry.token.claimsProblem(projectID: project, nowSeconds: clock() / 1000) {
                throw RESTError(401, problem)
            }
            if !entry.signatureVerified {
                try verifySignature(entry.token)
                entry.signatureVerified = true
                fresh = true
            }
        }
        if fresh { tokens.insert(token, entry) }
        return .user(auth: entry.auth)
    }

    func verifySignature(_ jwt: IDToken) throws {
        guard let kid = jwt.keyID, let key = security.keys?.key(kid) else {
            throw RESTError(401, "Could not verify auth token: unknown signing key")
        }
        guard let verifier = security.verifier else {
            throw RESTError(401, "Could not verify auth token: RS256 signature checking is not available in this build")
        }
        let ok = (try? verifier.verifyRS256(input: jwt.signedInput, signature: jwt.signature,
                                            modulus: key.modulus, exponent: key.exponent)) ?? false
        if !ok { throw RESTError(401, "Could not verify auth token: bad signature") }
    }

    /// The `query` variable of a read, from the REST parameters.
    static func ruleQuery(_ request: HTTPRequest) -> RuleQuery {
        RuleQuery(parameters: { request.queryValue($0) })
    }

    /// Refuses a read the rules do not grant (401), then a query on an undeclared index (400,
    /// with `--strict-indexes`, admin included).
    /// For a stream, returns what it must keep being granted: every stream is checked again
    /// when rules change, whatever the rules (or their absence) when it opened.
    func authorizeRead(_ c: Context, _ principal: Principal, query: Query?) throws -> StreamAccess? {
        var rq: RuleQuery? = nil
        // The admin first: no rules lookup (a server without rules makes everyone the admin).
        if !isAdmin(principal), let rules = rules(for: c.namespace) {
            let q = RESTHandler.ruleQuery(c.request)
            rq = q
            let db = try c.database(provider)
            let data = RuleData.stored(in: db)
            guard rules.canRead(c.path, principal: principal, query: q, now: clock(), data: data, observer: Coverage.counter) else {
                throw RESTError.permissionDenied
            }
        }
        if security.strictIndexes, let q = query {
            let rules = rules(for: c.namespace) ?? RuleSet.open
            var index: String?
            switch q.order {
            case .value: index = ".value"
            case .child(let p): index = p.unrooted
            case .key, .priority: index = nil   // keys and priorities need no index
            }
            if let index, let message = rules.missingIndex(index, at: c.path) { throw RESTError(400, message) }
        }
        guard RESTHandler.wantsStream(c.request) else { return nil }
        return StreamAccess(namespace: c.namespace, path: c.path, principal: principal, query: rq ?? RESTHandler.ruleQuery(c.request),
                            credentials: RESTHandler.credentials(of: c.request))
    }

    /// The credentials of `request` alone (its `Authorization` headers, its `auth`,
    /// `access_token` and `auth_variable_override` parameters), for judging them again later
    /// without keeping the rest of the request.
    static func credentials(of request: HTTPRequest) -> HTTPRequest {
        var target = "/"
        for q in request.query where q.name == "auth" || q.name == "access_token" || q.name == "auth_variable_override" {
            target += (target == "/" ? "?" : "&") + q.name + "=" + PercentCoding.encode(q.value)
        }
        return HTTPRequest(method: "GET", target: target, headers: request.headers.filter { $0.name == "authorization" })
    }

    /// True while a stream's location stays readable for its principal.
    public func canStillRead(_ access: StreamAccess) -> Bool {
        guard let rules = rules(for: access.namespace) else { return true }
        var principal = access.principal
        if let credentials = access.credentials {
            guard let now = try? self.principal(credentials, namespace: access.namespace) else { return false }
            principal = now
        }
        if isAdmin(principal) { return true }
        guard let db = try? provider.database(access.namespace) else { return false }
        let data = RuleData.stored(in: db)
        return rules.canRead(access.path, principal: principal, query: access.query, now: clock(), data: data, observer: Coverage.counter)
    }

    func isAdmin(_ p: Principal) -> Bool {
        if case .admin = p { return true }
        return false
    }

    /// Whether writes by `principal` in `namespace` go through the rules.
    func checksWrites(_ principal: Principal, _ namespace: String) -> Bool {
        !isAdmin(principal) && rules(for: namespace) != nil
    }

    /// Runs a write under the rules, atomically: server values resolve once (the rules' `now`
    /// is their timestamp), every write is checked against the data it replaces, and `commit`
    /// runs with the resolved writes only when all of them are allowed; otherwise 401 and
    /// nothing changes.
    func ruledWrite<T>(_ c: Context, _ principal: Principal, _ writes: [(path: Path, value: Node)],
                       commit: (Database, RuleData, [(path: Path, value: Node)]) throws -> T) throws -> T {
        let db = try c.database(provider)
        func body() throws -> T {
            let data = RuleData.stored(in: db)
            // The one decision `rules simulate` and `rules test` make too.
            guard let rules = self.rules(for: c.namespace) else { throw RESTError.permissionDenied }
            let decision = try rules.decide(.write(writes), principal: principal, now: self.clock(), data: data, observer: Coverage.counter)
            guard decision.allowed else { throw RESTError.permissionDenied }
            return try commit(db, data, decision.writes)
        }
        if let locking = db.capability(LockingDatabase.self) { return try locking.whileLocked(body) }
        return try body()
    }

    // MARK: /.settings/rules.json

    func rulesEndpoint(_ request: HTTPRequest, method: String, namespace: String) throws -> HTTPResponse {
        for q in request.query where !["auth", "access_token", "ns", "format", "dryRun", "print"].contains(q.name) {
            throw RESTError(400, "query parameter \(Limits.quote(q.name)) is not accepted on /.settings/rules.json")
        }
        guard hasAdminCredential(request) else { throw RESTError.permissionDenied }
        switch method {
        case "GET", "HEAD":
            if let f = request.queryValue("format"), f != "strict" { throw RESTError(400, "format must be \"strict\" here") }
            let rules = rules(for: namespace) ?? RuleSet.open
            let text = request.queryValue("format") == "strict" ? rules.document.strictText() : rules.source
            return headOnly(HTTPResponse.json(200, text), method)
        case "PUT":
            if let d = request.queryValue("dryRun"), d != "true" && d != "false" { throw RESTError(400, "dryRun must be true or false") }
            guard let text = String(validating: request.body, as: UTF8.self) else {
                throw RESTError(400, "1:1: the rules are not UTF-8 text.\n")
            }
            let loaded: RuleSet
            do { loaded = try RuleSet(text) } catch { throw RESTError(400, error.description) }
            if request.queryValue("dryRun") != "true" {
                // Stored with the data first (a failure changes nothing), then in force; the
                // scope is asked after storing, which may have made the file.
                try provider.storeRules(text, of: namespace)
                let scope = provider.rulesScope(of: namespace)
                rulesTable.put(scope, loaded)
                onRulesChanged?(namespace)
            }
            return HTTPResponse.json(200, "{\"status\":\"ok\"}")
        default:
            throw notAllowed("GET, PUT")
        }
    }
}

extension RuleData {
    /// The data rules read, as stored: `data.old` with priorities (the export form), so that
    /// `getPriority()` answers the stored priority and a transaction's hash or an ETag checked
    /// against it covers the priority, as the client's does; without them (one lookup fewer)
    /// for every other rule method.
    public static func stored(in db: Database) -> RuleData {
        RuleData(read: { try db.export($0) }, readPlain: { try db.get($0) })
    }
}
