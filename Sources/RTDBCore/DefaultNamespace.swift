/// The namespace a request names when it gives none (`?ns=`), as `rtdb serve` and the Firebase
/// emulator pick it: the first label of a host name of two labels or more that is not an IP
/// address (`mydb.localhost:9000` → `mydb`), when that label is a valid namespace (1 to 63
/// letters, digits, `-` and `_`); otherwise `fake-server`, the emulator's name when no project
/// is known. A client without a namespace in its URL picks the same one, so that it reaches the
/// data the server would give it.
public enum DefaultNamespace {
    public static let name = "fake-server"

    /// The namespace for a `Host` value (`HOST[:PORT]`, an IPv6 literal in brackets).
    public static func forHost(_ host: String) -> String {
        hostLabel(host) ?? name
    }

    /// The host name's first label when the server takes it as the namespace, else nil.
    public static func hostLabel(_ host: String) -> String? {
        if host.hasPrefix("[") { return nil }   // IPv6 literal
        let hostName = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? host
        let labels = hostName.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, let first = labels.first, !first.isEmpty else { return nil }
        if labels.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }) { return nil }   // IPv4
        let label = String(first)
        return valid(label) ? label : nil
    }

    /// 1 to 63 letters, digits, `-` and `_` (a namespace may name a file).
    public static func valid(_ s: String) -> Bool {
        let u = s.utf8
        return !u.isEmpty && u.count <= 63 && u.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
    }
}
