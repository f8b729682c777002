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

/// The schema version written in a database file (`PRAGMA user_version`).
func userVersion(_ file: String) throws -> Int64? {
    try Connection(file: file, create: false, timeoutSeconds: 5).integer("PRAGMA user_version")
}

func json(_ text: String) -> Node {
    (try? JSONReader.parse(text)) ?? .string("<<invalid test JSON>>")
}

func text(_ node: Node) -> String { JSONWriter.string(node) }

func path(_ s: String) -> Path { (try? Path(s)) ?? Path(validatedKeys: ["<<invalid test path>>"]) }

