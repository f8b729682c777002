import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The fields of a Google service-account key file that minting a token needs.
public struct ServiceAccountKey: Sendable {
    public var clientEmail: String
    public var privateKey: String
    public var privateKeyID: String?
    public var tokenURI: String
}

/// A service account's access tokens: a JWT signed with the key (RS256) is
/// exchanged at the key's `token_uri` for an access token, which is cached in memory and on
/// disk (`$XDG_CACHE_HOME/rtdb/`, or `~/.cache/rtdb/`; folder 0700, file 0600) until a minute
/// before it expires. The cache file is named after a hash of the account, key and scopes, so
/// two keys never share a token; a damaged cache file is ignored and rewritten.
public final class ServiceAccount: Sendable {
    public static let scopes = "https://www.googleapis.com/auth/firebase.database https://www.googleapis.com/auth/userinfo.email"
    /// A token is used until this many seconds before it expires.
    static let margin: Int64 = 60

    public let file: String
    public let key: ServiceAccountKey
    let cacheFolder: String?
    let now: @Sendable () -> Int64
    /// The token in memory. Locked: one account may serve requests made on several threads.
    let token = Locked<(value: String, expiresAt: Int64)?>(nil)

    public init(file: String, bytes: [UInt8], cacheFolder: String?, now: @escaping @Sendable () -> Int64) throws {
        self.file = file
        self.cacheFolder = cacheFolder
        self.now = now
        func bad(_ why: String) -> RTDBError {
            RTDBError(.usage, "\(file) is not a service-account key file: \(why)")
        }
        let entries: [Node.Entry]
        do {
            guard let e = try bytes.withUnsafeBufferPointer({ try JSONReader.parseEntries($0) }) else { throw bad("not a JSON object") }
            entries = e
        } catch let e as RTDBError where e.code != .usage {
            throw bad("invalid JSON")
        }
        func field(_ name: String) -> String? {
            if case .string(let s)? = entries.last(where: { $0.key == name })?.node, !s.isEmpty { return s }
            return nil
        }
        if let type = field("type"), type != "service_account" { throw bad("its type is \(Limits.quote(type)), not service_account") }
        guard let email = field("client_email") else { throw bad("client_email is missing") }
        guard let pem = field("private_key"), pem.contains("PRIVATE KEY") else { throw bad("private_key is missing") }
        let uri = field("token_uri") ?? "https://oauth2.googleapis.com/token"
        guard Endpoint.split(uri) != nil else { throw bad("token_uri is not an http(s) URL") }
        key = ServiceAccountKey(clientEmail: email, privateKey: pem, privateKeyID: field("private_key_id"), tokenURI: uri)
    }

    /// A valid access token: from memory, the disk cache, or a fresh exchange (`refresh`
    /// skips both caches, after the server revoked the one in use).
    func accessToken(refresh: Bool, timeoutMillis: Int, caFile: String?) throws -> String {
        let t = now() / 1000
        if !refresh {
            if let tok = token.withLock({ $0 }), tok.expiresAt - ServiceAccount.margin > t { return tok.value }
            if let tok = readCache(), tok.expiresAt - ServiceAccount.margin > t {
                token.withLock { $0 = tok }
                return tok.value
            }
        }
        let tok = try exchange(timeoutMillis: timeoutMillis, caFile: caFile)
        token.withLock { $0 = tok }
        writeCache(tok)
        return tok.value
    }

    // MARK: the JWT

    /// `base64url(header) + "." + base64url(claims)`: the bytes the signature covers.
    public func signingInput(issuedAt iat: Int64) -> String {
        var header: [Node.Entry] = [Node.Entry("alg", .string("RS256")), Node.Entry("typ", .string("JWT"))]
        if let kid = key.privateKeyID { header.append(Node.Entry("kid", .string(kid))) }
        let claims: [Node.Entry] = [
            Node.Entry("aud", .string(key.tokenURI)),
            Node.Entry("exp", .int(iat + 3600)),
            Node.Entry("iat", .int(iat)),
            Node.Entry("iss", .string(key.clientEmail)),
            Node.Entry("scope", .string(ServiceAccount.scopes)),
        ]
        return Base64URL.encode(Array(JSONWriter.string(.object(normalizing: header)).utf8)) + "."
            + Base64URL.encode(Array(JSONWriter.string(.object(normalizing: claims)).utf8))
    }

    func exchange(timeoutMillis: Int, caFile: String?) throws -> (value: String, expiresAt: Int64) {
        let iat = now() / 1000
        let input = signingInput(issuedAt: iat)
        let signature = try TLSHook.signRS256(pemPrivateKey: key.privateKey, data: Array(input.utf8))
        let jwt = input + "." + Base64URL.encode(signature)
        guard let (endpoint, target) = Endpoint.split(key.tokenURI) else {
            throw RTDBError(.usage, "\(file): token_uri is not an http(s) URL")
        }
        let client = HTTPClient(endpoint: endpoint, timeoutMillis: timeoutMillis, caFile: caFile)
        let body = "grant_type=" + PercentCoding.encode("urn:ietf:params:oauth:grant-type:jwt-bearer")
            + "&assertion=" + PercentCoding.encode(jwt)
        let response = try client.send(HTTPRequestSpec(
            method: "POST", target: target,
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
            body: Array(body.utf8), idempotent: true))
        client.disconnect()
        let entries = (try? response.body.withUnsafeBufferPointer { try JSONReader.parseEntries($0) }) ?? nil
        func field(_ name: String) -> Node? { entries?.last(where: { $0.key == name })?.node }
        guard response.status == 200 else {
            var why = "status \(response.status)"
            if case .string(let e)? = field("error") { why += " (\(e))" }
            if case .string(let d)? = field("error_description") { why += ": \(d)" }
            let code: RTDBError.Code = response.status == 400 || response.status == 401 || response.status == 403
                ? .permissionDenied : .unavailable
            throw RTDBError(code, "the token endpoint refused the service account \(key.clientEmail): \(why)")
        }
        guard case .string(let token)? = field("access_token"), (try? Credential.token(token, "access_token")) != nil else {
            throw RTDBError(.unavailable, "the token endpoint sent no access token for \(key.clientEmail)")
        }
        var lifetime: Int64 = 3600
        switch field("expires_in") {
        case .int(let n)?: lifetime = n
        case .double(let d)? where d.isFinite: lifetime = Int64(d)
        default: break
        }
        return (token, iat + max(0, lifetime))
    }

    // MARK: the disk cache

    var cacheFile: String? {
        guard let folder = cacheFolder else { return nil }
        let id = Array((key.clientEmail + "\n" + (key.privateKeyID ?? key.privateKey) + "\n" + ServiceAccount.scopes).utf8)
        let hex = SHA1.digest(id).prefix(12).map { b in
            let d = Array("0123456789abcdef".utf8)
            return String(decoding: [d[Int(b >> 4)], d[Int(b & 15)]], as: UTF8.self)
        }.joined()
        return folder + "/token-" + hex + ".json"
    }

    func readCache() -> (value: String, expiresAt: Int64)? {
        guard let path = cacheFile else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        // Only a private file of ours is trusted.
        guard fstat(fd, &st) == 0, st.st_uid == getuid(), st.st_mode & 0o077 == 0, st.st_size < 65536 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { return nil }
        guard let entries = (try? bytes.withUnsafeBufferPointer { try JSONReader.parseEntries($0) }) ?? nil else { return nil }
        guard case .string(let value)? = entries.last(where: { $0.key == "access_token" })?.node,
              case .int(let exp)? = entries.last(where: { $0.key == "expires_at" })?.node,
              (try? Credential.token(value, "")) != nil else { return nil }
        return (value, exp)
    }

    func writeCache(_ tok: (value: String, expiresAt: Int64)) {
        guard let path = cacheFile, let folder = cacheFolder else { return }
        ServiceAccount.makeFolders(folder)
        let text = JSONWriter.string(.object(normalizing: [Node.Entry("access_token", .string(tok.value)),
                                                          Node.Entry("expires_at", .int(tok.expiresAt))])) + "\n"
        let tmp = path + ".\(getpid()).tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if n == bytes.count { rename(tmp, path) } else { unlink(tmp) }
    }

    /// Creates `folder` and missing parents; the last one private (0700).
    static func makeFolders(_ folder: String) {
        var path = ""
        for part in folder.split(separator: "/") {
            path += "/" + part
            mkdir(path, path == folder ? 0o700 : 0o755)
        }
    }

    /// `$XDG_CACHE_HOME/rtdb`, or `$HOME/.cache/rtdb`.
    public static func defaultCacheFolder(env: (String) -> String?) -> String? {
        if let x = env("XDG_CACHE_HOME"), x.hasPrefix("/") { return x + "/rtdb" }
        if let h = env("HOME"), h.hasPrefix("/") { return h + "/.cache/rtdb" }
        return nil
    }
}

/// Base64 with the URL alphabet and no padding (RFC 7515 §2), as JWTs use it.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var s = Array(Base64.encode(bytes).utf8)
        while s.last == UInt8(ascii: "=") { s.removeLast() }
        for i in s.indices {
            if s[i] == UInt8(ascii: "+") { s[i] = UInt8(ascii: "-") } else if s[i] == UInt8(ascii: "/") { s[i] = UInt8(ascii: "_") }
        }
        return String(decoding: s, as: UTF8.self)
    }
}
