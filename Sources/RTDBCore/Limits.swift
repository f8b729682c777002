/// The data limits, the same on every target.
public enum Limits {
    public static let maxKeyBytes = 768
    public static let maxDepth = 32
    public static let maxStringBytes = 10 * 1024 * 1024
    public static let maxWriteBytes = 256 * 1024 * 1024

    /// Why `key` is not a valid key, or nil when it is valid.
    public static func keyProblem(_ key: String) -> String? {
        var bytes = key
        let fault = bytes.withUTF8 { keyFault($0) }
        switch fault {
        case nil: return nil
        case .empty: return "empty key"
        case .tooLong(let n): return "key longer than \(maxKeyBytes) bytes (\(n))"
        case .forbidden(let b): return "key \(quote(key)) contains the forbidden character \(quote(String(UnicodeScalar(b))))"
        case .control(let b): return "key \(quote(key)) contains the control character U+\(hex4(b))"
        }
    }

    /// What is wrong with a key, from its UTF-8 bytes: the one rule behind `keyProblem` and the
    /// readers that check keys without making strings of them (`JSONReader.flatValue`).
    enum KeyFault: Equatable {
        case empty, tooLong(Int), forbidden(UInt8), control(UInt8)
    }

    @inline(__always)
    static func keyFault(_ bytes: UnsafeBufferPointer<UInt8>) -> KeyFault? {
        if bytes.isEmpty { return .empty }
        if bytes.count > maxKeyBytes { return .tooLong(bytes.count) }
        for b in bytes {
            switch b {
            case UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"),
                 UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "/"):
                return .forbidden(b)
            case 0x00...0x1F, 0x7F:
                return .control(b)
            default: continue
            }
        }
        return nil
    }

    /// A byte as `\xEF`: how error messages show a byte that is not ASCII (never as the Latin-1
    /// letter it would be if read as a code point).
    public static func hexByte(_ b: UInt8) -> String {
        let h = String(b, radix: 16, uppercase: true)
        return "\\x" + (h.count == 1 ? "0" : "") + h
    }

    static func hex4(_ b: UInt8) -> String {
        let h = String(b, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - h.count) + h
    }

    /// User text for a message that quotes it itself: as it is up to `limit` characters, else
    /// its first `limit` and `…` (an answer never echoes a client's input at length).
    public static func cut(_ s: String, _ limit: Int = 80) -> String {
        var n = 0
        var end = s.unicodeScalars.startIndex
        for i in s.unicodeScalars.indices {
            n += 1
            if n > limit { return String(s.unicodeScalars[..<end]) + "…" }
            end = s.unicodeScalars.index(after: i)
        }
        return s
    }

    /// A short, printable rendering of user text for error messages.
    public static func quote(_ s: String) -> String {
        var out = "\""
        var n = 0
        for scalar in s.unicodeScalars {
            n += 1
            if n > 80 { out += "…"; break }
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0..<0x20, 0x7F: out += "\\u" + hex4(UInt8(scalar.value))
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Checks a value about to be written at `path`: every data key valid, no path deeper than
    /// 32 levels, no string longer than 10 MiB, no unknown `.`-key, `.sv` only as a lone
    /// server-value placeholder. Placeholders are validated by `ServerValues`.
    /// A priority, and any priority inside the value, must be a string (at most 10 MiB), a finite
    /// number, null or a server value; a value written at a `.priority` path is a priority.
    public static func validate(_ node: Node, at path: Path) throws {
        if path.isPriority {
            try validatePriority(node, path: path.node.keys)
            return
        }
        var keys = path.keys
        try validate(node, depth: path.count, path: &keys)
    }

    /// Checks a priority to be stored for the node at `path` (booleans and objects are refused).
    static func validatePriority(_ p: Node, path: [String]) throws {
        switch p {
        case .null, .int: return
        case .double(let d):
            if !d.isFinite { throw RTDBError(.invalidData, "priority at \(show(path)) is not finite") }
        case .string(let s):
            if s.utf8.count > maxStringBytes {
                throw RTDBError(.tooLarge, "priority at \(show(path)) is \(s.utf8.count) bytes; the limit is \(maxStringBytes)")
            }
        case .object where ServerValues.isPlaceholder(p):
            try ServerValues.validatePlaceholder(p, at: path)
        default:
            throw RTDBError(.invalidData, "priority at \(show(path)) must be a string, a number or null")
        }
    }

    /// `path` is the node's keys: extended for each child and restored (no array per node).
    private static func validate(_ node: Node, depth: Int, path: inout [String]) throws {
        switch node {
        case .prioritized(let base, let p):
            try validatePriority(p, path: path)
            try validate(base, depth: depth, path: &path)
        case .string(let s):
            if s.utf8.count > maxStringBytes {
                throw RTDBError(.tooLarge, "string at \(show(path)) is \(s.utf8.count) bytes; the limit is \(maxStringBytes)")
            }
        case .double(let d):
            if !d.isFinite { throw RTDBError(.invalidData, "number at \(show(path)) is not finite") }
        case .object(let list):
            if ServerValues.isPlaceholder(node) {
                try ServerValues.validatePlaceholder(node, at: path)
                if depth > maxDepth { throw tooDeep(path) }
                return
            }
            if depth + 1 > maxDepth { throw tooDeep(path + [list[0].key]) }
            if list.count > 1, list.contains(where: { $0.key == ".sv" }) {
                throw RTDBError(.invalidData, "server value at \(show(path)) has other keys beside \".sv\"")
            }
            for e in list {
                if let problem = keyProblem(e.key) {
                    throw RTDBError(.invalidKey, "invalid key at \(show(path)): \(problem)")
                }
                path.append(e.key)
                try validate(e.node, depth: depth + 1, path: &path)
                path.removeLast()
            }
        default:
            break
        }
    }

    static func tooDeep(_ path: [String]) -> RTDBError {
        RTDBError(.tooDeep, "data at \(show(path)) is more than \(maxDepth) levels deep")
    }

    static func show(_ keys: [String]) -> String { "/" + keys.joined(separator: "/") }
}

/// How messages count things: "1 second", "2 seconds", "0.5 seconds".
public enum Quantity {
    /// `count` and the unit, singular for exactly one.
    public static func of(_ count: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(count) " + (count == 1 ? singular : plural ?? singular + "s")
    }

    /// Seconds as a user wrote them (`2`, `0.5`), with the unit: "1 second", "0.5 seconds".
    public static func seconds(_ s: Double) -> String {
        let text = s == s.rounded() && s < 1e15 ? String(Int64(s)) : String(s)
        return text + (s == 1 ? " second" : " seconds")
    }
}
