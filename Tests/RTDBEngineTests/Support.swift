import Foundation
import RTDBCore
@testable import RTDBEngine

/// A fresh database file in its own temporary folder, removed when the value goes away.
final class TempDatabase {
    let dir: String
    let file: String
    let db: EmbeddedDatabase

    init(clock: @escaping @Sendable () -> Int64 = { 1_700_000_000_000 }) {
        dir = NSTemporaryDirectory() + "rtdb-engine-" + UUID().uuidString
        file = dir + "/sub/test.db"
        db = EmbeddedDatabase(file: file, timeoutSeconds: 5, clock: clock)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func another() -> EmbeddedDatabase { EmbeddedDatabase(file: file, timeoutSeconds: 5) }
}

func json(_ text: String) -> Node {
    (try? JSONReader.parse(text)) ?? .string("<<invalid test JSON>>")
}

func text(_ node: Node) -> String { JSONWriter.string(node) }

func path(_ s: String) -> Path { (try? Path(s)) ?? Path(validatedKeys: ["<<invalid test path>>"]) }

/// A small deterministic generator (SplitMix64), so that a failing case can be run again.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(_ seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A number in 0..<n.
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
