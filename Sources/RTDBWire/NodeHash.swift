import RTDBCore

/// Firebase's node hash: base64 of the SHA-1 of
/// a canonical string, the same on every client and server, so a hash names one value.
///
/// * leaf: `number:` + the 16 lowercase hex digits of the IEEE-754 double, big-endian (an
///   integer is hashed as the double it converts to), `string:` + the raw string, or
///   `boolean:true` / `boolean:false`;
/// * object: for each child in priority order (without priorities: key order),
///   `:` + key + `:` + the child's hash; children hashing to `""` are skipped;
/// * the empty node (null) hashes to `""` without SHA-1;
/// * a node with a priority gets the prefix `priority:` + (`number:` hex | `string:` text) + `:`
///   before its canonical string.
public enum NodeHash {
    /// The hash of `node` (`""` for null).
    public static func hash(_ node: Node) -> String {
        var text: [UInt8] = []
        guard canonical(node, into: &text) else { return "" }
        return Base64.encode(SHA1.digest(text))
    }

    /// Appends the canonical string of `node`; false when it is empty (null or no children).
    static func canonical(_ node: Node, into out: inout [UInt8]) -> Bool {
        switch node {
        case .null:
            return false
        case .bool(let b):
            out.append(contentsOf: (b ? "boolean:true" : "boolean:false").utf8)
        case .int, .double, .string:
            _ = appendNumberOrString(node, &out)
        case .prioritized(let base, let priority):
            if base.isNull { return false }
            out.append(contentsOf: "priority:".utf8)
            guard appendNumberOrString(priority, &out) else {
                out.removeLast("priority:".utf8.count)
                return canonical(base, into: &out)
            }
            out.append(UInt8(ascii: ":"))
            return canonical(base, into: &out) || true
        case .object(let stored):
            // Priority order: children are stored in key order, which it is while no child has
            // a priority.
            var children = stored
            if children.contains(where: { !$0.node.priority.isNull }) {
                let byPriority = Query(order: .priority)
                children.sort { byPriority.compare($0.key, $0.node, $1.key, $1.node) < 0 }
            }
            var any = false
            for c in children {
                let h = hash(c.node)
                if h.isEmpty { continue }
                out.append(UInt8(ascii: ":"))
                out.append(contentsOf: c.key.utf8)
                out.append(UInt8(ascii: ":"))
                out.append(contentsOf: h.utf8)
                any = true
            }
            return any
        }
        return true
    }

    /// Appends `number:` + hex or `string:` + text, as a leaf and a priority are both written;
    /// false, with nothing appended, for any other node.
    @inline(__always)
    static func appendNumberOrString(_ node: Node, _ out: inout [UInt8]) -> Bool {
        switch node {
        case .int(let i):
            out.append(contentsOf: "number:".utf8)
            appendHex64(Double(i), &out)
        case .double(let d):
            out.append(contentsOf: "number:".utf8)
            appendHex64(d, &out)
        case .string(let s):
            out.append(contentsOf: "string:".utf8)
            out.append(contentsOf: s.utf8)
        default:
            return false
        }
        return true
    }

    /// The exact IEEE-754 bits of `d`, big-endian, as 16 lowercase hex digits.
    static func appendHex64(_ d: Double, _ out: inout [UInt8]) {
        let bits = d.bitPattern
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        for i in (0..<16).reversed() { out.append(hex[Int(bits >> (UInt64(i) * 4) & 15)]) }
    }
}

/// REST ETags: the node hash of the value at a location, or the
/// literal `null_etag` where nothing is stored.
public enum ETag {
    public static let null = "null_etag"

    /// The ETag of `value`.
    public static func of(_ value: Node) -> String {
        value.isNull ? null : NodeHash.hash(value)
    }

    /// Whether an `If-Match` / `If-None-Match` header value names `current`'s ETag. The value
    /// may list several tags separated by commas; each may be quoted or weak (`W/"…"`), and `*`
    /// matches any existing value (not null).
    public static func matches(_ header: String, _ current: Node) -> Bool {
        let tag = of(current)
        for raw in header.split(separator: ",") {
            var t = Substring(ASCII.trimmed(String(raw)))
            if t == "*" {
                if !current.isNull { return true }
                continue
            }
            if t.hasPrefix("W/") { t = t.dropFirst(2) }
            if t.count >= 2, t.first == "\"", t.last == "\"" { t = t.dropFirst().dropLast() }
            if t == tag { return true }
        }
        return false
    }
}
