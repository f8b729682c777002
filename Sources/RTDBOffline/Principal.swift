import RTDBCore
import RTDBRemote

/// Who a credential speaks for, as stored with each queued write:
/// `uid:<sub>` for a Firebase ID token (a JWT), `admin` for an access token, a service
/// account or a database secret, `anonymous` without a credential. The credential itself is
/// never stored.
public enum Principal {
    public static func of(_ credential: Credential) -> String {
        switch credential {
        case .none: return "anonymous"
        case .accessToken, .serviceAccount: return "admin"
        case .auth(let token):
            if let claims = JWTClaims(token), let sub = claims.subject { return "uid:" + sub }
            return "admin"
        }
    }

    /// The expiry of an ID token in milliseconds since the epoch, or nil (no JWT, no `exp`).
    public static func expiryMillis(_ credential: Credential) -> Int64? {
        guard case .auth(let token) = credential, let claims = JWTClaims(token) else { return nil }
        return claims.expirySeconds.map { $0 * 1000 }
    }
}

/// The claims of a JWT, read without checking its signature (the server checks it): only to
/// learn the subject and the expiry.
struct JWTClaims {
    let claims: Node

    init?(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = JWTClaims.base64(parts[1]),
              let node = try? JSONReader.parse(bytes), node.isObject else { return nil }
        claims = node
    }

    var subject: String? {
        if case .string(let s) = claims.child("sub"), !s.isEmpty { return s }
        return nil
    }

    var expirySeconds: Int64? {
        switch claims.child("exp") {
        case .int(let i): return i
        case .double(let d) where d.isFinite && abs(d) < 9e15: return Int64(d)
        default: return nil
        }
    }

    /// Base64url or standard base64, padded or not.
    static func base64(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): v = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            acc = (acc << 6) | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((acc >> UInt32(bits)) & 0xFF))
            }
        }
        return out
    }
}
