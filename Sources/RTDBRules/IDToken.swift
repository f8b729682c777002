import RTDBCore

/// A Firebase ID token (a JWT) taken apart: header and claims as JSON objects,
/// the signed input and the signature bytes. Base64url and standard base64 are both read,
/// padded or not, as the emulator's mock tokens come in both forms.
public struct IDToken: Sendable {
    public var header: Node
    public var claims: Node
    /// `header.payload`, the bytes an RS256 signature covers.
    public var signedInput: [UInt8]
    public var signature: [UInt8]

    /// Nil when `text` is not a JWT with JSON-object header and claims.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        guard let h = IDToken.base64(parts[0]), let p = IDToken.base64(parts[1]), let s = IDToken.base64(parts[2]),
              let header = try? JSONReader.parse(h), header.isObject,
              let claims = try? JSONReader.parse(p), claims.isObject else { return nil }
        self.header = header
        self.claims = claims
        self.signedInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        self.signature = s
    }

    /// The `auth` variable for rules: `{uid, provider, token}`; nil without a usable `sub`.
    public var authObject: Node? {
        guard case .string(let uid) = claims.child("sub"), !uid.isEmpty else { return nil }
        var entries = [Node.Entry("uid", .string(uid)), Node.Entry("token", claims)]
        if case .string(let p) = claims.child("firebase").child("sign_in_provider") {
            entries.append(Node.Entry("provider", .string(p.hasSuffix(".com") ? String(p.dropLast(4)) : p)))
        }
        return Node.object(normalizing: entries)
    }

    public var algorithm: String? {
        if case .string(let a) = header.child("alg") { return a }
        return nil
    }

    public var keyID: String? {
        if case .string(let k) = header.child("kid") { return k }
        return nil
    }

    /// The production checks other than the signature (Firebase's ID token rules): RS256, a
    /// `kid`, `aud` = the project, `iss` = `https://securetoken.google.com/<project>`, `exp` in
    /// the future, `iat` and `auth_time` not in the future, a non-empty `sub`. Returns the
    /// problem, or nil.
    public func claimsProblem(projectID: String, nowSeconds: Int64) -> String? {
        guard algorithm == "RS256" else { return "the token is not signed with RS256" }
        guard keyID != nil else { return "the token names no key (kid)" }
        guard case .string(let aud) = claims.child("aud"), aud == projectID else { return "the token is for another project (aud)" }
        guard case .string(let iss) = claims.child("iss"), iss == "https://securetoken.google.com/" + projectID else {
            return "the token has the wrong issuer (iss)"
        }
        guard let exp = IDToken.seconds(claims.child("exp")), exp > nowSeconds else { return "Auth token is expired" }
        guard let iat = IDToken.seconds(claims.child("iat")), iat <= nowSeconds + 300 else { return "the token is issued in the future (iat)" }
        if let at = IDToken.seconds(claims.child("auth_time")), at > nowSeconds + 300 { return "the token's auth_time is in the future" }
        guard authObject != nil else { return "the token has no subject (sub)" }
        return nil
    }

    static func seconds(_ n: Node) -> Int64? {
        switch n {
        case .int(let i): return i
        case .double(let d) where d.isFinite && abs(d) < 9e15: return Int64(d)
        default: return nil
        }
    }

    /// Base64url or standard base64, with or without `=` padding.
    public static func base64<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        var padding = false
        for c in text.utf8 {
            let v: UInt32
            switch c {
            case 0x41...0x5A: v = UInt32(c - 0x41)
            case 0x61...0x7A: v = UInt32(c - 0x61 + 26)
            case 0x30...0x39: v = UInt32(c - 0x30 + 52)
            case UInt8(ascii: "-"), UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): v = 63
            case UInt8(ascii: "="): padding = true; continue
            default: return nil
            }
            if padding { return nil }
            acc = (acc << 6) | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((acc >> UInt32(bits)) & 0xFF))
            }
        }
        if bits >= 6 { return nil }   // a lone trailing character carries no byte
        return out
    }
}
