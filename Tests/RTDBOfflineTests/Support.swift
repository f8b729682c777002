import Foundation
import RTDBCore
@testable import RTDBEngine
@testable import RTDBOffline

/// A fresh cache file in its own temporary folder, removed when the value goes away.
final class TempCache {
    static let url = "http://127.0.0.1:9000?ns=t"

    let dir: String
    let file: String
    let db: EmbeddedDatabase

    init(clock: @escaping @Sendable () -> Int64 = { 1_700_000_000_000 }) {
        dir = NSTemporaryDirectory() + "rtdb-offline-" + UUID().uuidString
        file = dir + "/sub/cache.db"
        db = EmbeddedDatabase(file: file, timeoutSeconds: 5, clock: clock)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// The cache store over this file, for the database at `url`.
    func store(url: String = TempCache.url, limit: Int? = nil) -> CacheStore {
        CacheStore(db, url: url, namespace: "t", limit: limit)
    }

    /// Another handle on the same file.
    func another() -> EmbeddedDatabase { EmbeddedDatabase(file: file, timeoutSeconds: 5) }
}

func json(_ text: String) -> Node {
    (try? JSONReader.parse(text)) ?? .string("<<invalid test JSON>>")
}

func text(_ node: Node) -> String { JSONWriter.string(node) }

func path(_ s: String) -> Path { (try? Path(s)) ?? Path(validatedKeys: ["<<invalid test path>>"]) }
