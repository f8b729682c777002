import Foundation
import Testing
import RTDBCore
@testable import RTDBServer
@testable import RTDBEngine

/// The open files of a data folder are bounded: past the limit the least recently used one
/// closes (unless something holds it) and opens again on its next request; rules belong to the
/// file a name reaches.
@Suite("Server namespaces: open files bounded, rules by file")
struct ServerNamespacesTests {
    func folder() -> String { NSTemporaryDirectory() + "rtdb-ns-" + UUID().uuidString }

    @Test func theLeastRecentlyUsedFileClosesPastTheLimitAndOpensAgain() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ns = ServerNamespaces(folder: dir, timeoutSeconds: 5)
        ns.maxOpenFiles = 3
        for name in ["a", "b", "c"] { _ = try ns.database(name).set(Path.root, .int(1)) }
        #expect(ns.openCount == 3)
        _ = try ns.database("a").get(Path.root)   // a is now the most recent
        _ = try ns.database("d").set(Path.root, .int(4))
        #expect(ns.openCount == 3)
        #expect(ns.openDatabase(dir + "/b.db") == nil)   // b was the least recent
        #expect(ns.openDatabase(dir + "/a.db") != nil)
        #expect(try ns.database("b").get(Path.root).same(as: .int(1)))   // opens again
        #expect(ns.openCount == 3)
    }

    @Test func theServerCheckpointsItsFilesEveryTenThousandPages() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ns = ServerNamespaces(folder: dir, timeoutSeconds: 5)
        _ = try ns.database("a").set(Path.root, .int(1))
        let db = try #require(ns.openDatabase(dir + "/a.db"))
        #expect(try db.writeConnection().integer("PRAGMA wal_autocheckpoint") == Int64(ServerNamespaces.checkpointPages))
    }

    @Test func aFileSomethingHoldsStaysOpen() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ns = ServerNamespaces(folder: dir, timeoutSeconds: 5)
        ns.maxOpenFiles = 2
        ns.keepOpen = { $0.hasSuffix("/kept.db") }
        _ = try ns.database("kept").set(Path.root, .int(1))
        for name in ["x", "y", "z"] { _ = try ns.database(name).set(Path.root, .int(2)) }
        #expect(ns.openDatabase(dir + "/kept.db") != nil)
        #expect(ns.openCount == 2)
    }

    @Test func rulesBelongToTheFileANameReaches() {
        let one = ServerNamespaces(file: "/tmp/one.db", timeoutSeconds: 5)
        #expect(one.rulesScope(of: "a") == one.rulesScope(of: "b"))
        let many = ServerNamespaces(folder: "/tmp/many", timeoutSeconds: 5)
        #expect(many.rulesScope(of: "a") != many.rulesScope(of: "b"))
    }
}
