import RTDBCore

extension RemoteTarget {
    /// `url` as an error message may show it: user information and the values of credential
    /// parameters become `***`, whatever their length. A parameter is a credential when its
    /// name, once percent-decoded (`au%74h`, `%61uth`, however often encoded) and in any case,
    /// is `auth` or `access_token` or speaks of one (`token`, `secret`, `password`), in the
    /// query or in the fragment (`#auth=…`), and also when decoding the parameter reveals such
    /// a parameter inside it (`ns=a%26auth=…`, `auth%3D…`): a message must never show a
    /// credential a client would send, whichever way it was spelt.
    public static func redacted(_ url: String) -> String {
        var out = url
        // user:password@ in the authority (before the first '/', '?' or '#' after the scheme).
        if let colon = out.firstIndex(of: ":"), out[colon...].hasPrefix("://") {
            let start = out.index(colon, offsetBy: 3)
            let authorityEnd = out[start...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? out.endIndex
            if let at = out[start..<authorityEnd].lastIndex(of: "@") {
                out.replaceSubrange(start..<at, with: "***")
            }
        }
        guard let first = out.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return out }
        // The query and the fragment, piece by piece between separators kept as they are.
        var result = String(out[..<first])
        var piece = ""
        for ch in out[first...] {
            if isSeparator(ch) {
                result += maskedParameter(piece)
                result.append(ch)
                piece = ""
            } else {
                piece.append(ch)
            }
        }
        return result + maskedParameter(piece)
    }

    /// A decoded parameter name as a message may quote it: a name that decodes to a credential
    /// parameter with its value (`auth%3DTOKEN` is the name `auth=TOKEN`) shows `***` for it.
    static func redactedName(_ name: String) -> String {
        maskedParameter(name)
    }

    private static func isSeparator(_ ch: Character) -> Bool { ch == "?" || ch == "#" || ch == "&" || ch == ";" }

    /// `piece` (`name=value`, or a bare word) with its value as `***` when it holds a credential
    /// (a bare word that decodes to one is `***` whole).
    private static func maskedParameter(_ piece: String) -> String {
        let decoded = fullyDecoded(piece)
        let holdsCredential = decoded.split(whereSeparator: isSeparator).contains { p in
            guard let eq = p.firstIndex(of: "=") else { return false }
            return isCredentialName(String(p[..<eq]))
        }
        guard holdsCredential else { return piece }
        guard let eq = piece.firstIndex(of: "=") else { return "***" }
        return String(piece[...eq]) + "***"
    }

    private static func isCredentialName(_ name: String) -> Bool {
        let n = String(ascii(lowercased: name).filter { $0 != " " && $0 != "\t" })
        return n == "auth" || n == "access_token" || n.contains("token") || n.contains("secret") || n.contains("password")
    }

    /// `text` with its `%XX` escapes and `+` decoded, again until nothing changes (at most a
    /// few rounds); malformed escapes and bytes that are not UTF-8 are kept as they are.
    private static func fullyDecoded(_ text: String) -> String {
        var current = Array(text.utf8)
        for _ in 0..<4 {
            var next: [UInt8] = []
            next.reserveCapacity(current.count)
            var i = 0
            while i < current.count {
                let b = current[i]
                if b == UInt8(ascii: "%"), i + 2 < current.count, let hi = hex(current[i + 1]), let lo = hex(current[i + 2]) {
                    next.append(hi << 4 | lo)
                    i += 3
                } else {
                    next.append(b == UInt8(ascii: "+") ? UInt8(ascii: " ") : b)
                    i += 1
                }
            }
            if next == current { break }
            current = next
        }
        return String(decoding: current, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
