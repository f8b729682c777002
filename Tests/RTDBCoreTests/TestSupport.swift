import RTDBTestSupport
import Testing
@testable import RTDBCore

// Shared helpers for the RTDBCore tests.

/// A typed, byte-exact rendering of a node for comparisons: ints and doubles are told apart
/// (`i1` vs `d1.0`), strings and keys show non-ASCII scalars as `\u{…}` so canonically
/// equivalent spellings stay different, and children appear in stored order.
func shape(_ node: Node) -> String {
    switch node {
    case .null: return "null"
    case .bool(let b): return b ? "true" : "false"
    case .int(let v): return "i\(v)"
    case .double(let v): return "d\(v)"
    case .string(let s): return "s" + scalars(s)
    case .object(let list):
        return "{" + list.map { scalars($0.key) + ":" + shape($0.node) }.joined(separator: ",") + "}"
    case .prioritized(let base, let p):
        return shape(base) + "^" + shape(p)
    }
}

func scalars(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        if u.value >= 0x20 && u.value < 0x7F && u != "\"" && u != "\\" {
            out.unicodeScalars.append(u)
        } else {
            out += "\\u{" + String(u.value, radix: 16) + "}"
        }
    }
    return out + "\""
}

/// The error code `body` throws, nil when it does not throw (`internal` for a foreign error).
func errorCode(_ body: () throws -> Void) -> RTDBError.Code? {
    do {
        try body()
        return nil
    } catch let e as RTDBError {
        return e.code
    } catch {
        return .internal
    }
}

/// Parses JSON text (test input is always expected to be valid here).
func node(_ json: String) throws -> Node { try JSONReader.parse(json) }

/// Compact JSON of a node.
func json(_ n: Node) -> String { JSONWriter.string(n) }

/// Parses and writes back compactly.
func roundTrip(_ text: String) throws -> String { json(try JSONReader.parse(text)) }

/// Keys of a list of entries, in order.
func keys(_ entries: [Node.Entry]) -> [String] { entries.map(\.key) }

/// An object node built from literal pairs (normalised: sorted, nulls dropped).
func obj(_ pairs: KeyValuePairs<String, Node>) -> Node {
    Node.object(normalizing: pairs.map { Node.Entry($0.key, $0.value) })
}

/// Deterministic pseudo-random bits (`SeededRandom`) for injecting into generators, which take
/// a source they can share.
final class SplitMix64: @unchecked Sendable {
    private var random: SeededRandom
    init(seed: UInt64) { random = SeededRandom(state: seed) }
    func next() -> UInt64 { random.next() }
}

/// Returns the given values in turn, cycling (for adversarial random sources).
final class Sequence64: @unchecked Sendable {
    private let values: [UInt64]
    private var i = 0
    init(_ values: [UInt64]) { self.values = values }
    func next() -> UInt64 {
        defer { i = (i + 1) % values.count }
        return values[i]
    }
}

/// The reference UTF-16 code-unit order, computed independently of `KeyOrder`.
func utf16Sign(_ a: String, _ b: String) -> Int {
    let x = Array(a.utf16), y = Array(b.utf16)
    if x == y { return 0 }
    return x.lexicographicallyPrecedes(y) ? -1 : 1
}

func sign(_ v: Int) -> Int { v == 0 ? 0 : (v < 0 ? -1 : 1) }
