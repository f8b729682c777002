import Foundation
import Testing
import RTDBCore
import RTDBEngine
import RTDBWire
import RTDBRules
@testable import RTDBServer

/// Rules put through `/.settings/rules.json` are stored in the file they govern and are in
/// force again after a restart; `--rules` at start wins over them; they belong to the file,
/// whatever name reached it.
@Suite("Stored rules: kept in the file, keyed by the file")
struct StoredRulesTests {
    static let denyWrites = #"{"rules":{".read":true,".write":false}}"#
    static let admin = [("Authorization", "Bearer owner")]

    func folder() -> String {
        let dir = NSTemporaryDirectory() + "rtdb-stored-rules-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A REST handler over a data folder (or one file), as a fresh `rtdb serve` makes it.
    func handler(folder: String? = nil, file: String? = nil, startRules: String? = nil) throws -> RESTHandler {
        let ns = file.map { ServerNamespaces(file: $0, timeoutSeconds: 5) } ?? ServerNamespaces(folder: folder ?? ".", timeoutSeconds: 5)
        let h = RESTHandler(provider: ns, secret: nil)
        if let startRules { h.security.rules = try RuleSet(startRules) }
        return h
    }

    func send(_ h: RESTHandler, _ method: String, _ target: String, _ body: String = "",
              headers: [(String, String)] = []) -> (status: Int, body: String) {
        var all = [(name: "Host", value: "127.0.0.1:9000")]
        for (n, v) in headers { all.append((n, v)) }
        guard case .response(let r) = h.handle(HTTPRequest(method: method, target: target, headers: all, body: Array(body.utf8))) else {
            return (-1, "a stream")
        }
        return (r.status, String(decoding: r.body, as: UTF8.self))
    }

    @Test func rulesPutAtRunTimeAreInForceAfterARestart() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let first = try handler(folder: dir)
            #expect(send(first, "PUT", "/.settings/rules.json?ns=prod", StoredRulesTests.denyWrites, headers: StoredRulesTests.admin).status == 200)
            #expect(send(first, "PUT", "/a.json?ns=prod", "1").status == 401)
        }
        // A new handler over new handles: the process started again.
        let second = try handler(folder: dir)
        #expect(send(second, "PUT", "/a.json?ns=prod", "1").status == 401)
        #expect(send(second, "GET", "/a.json?ns=prod").status == 200)
        #expect(send(second, "PUT", "/a.json?ns=prod", "2", headers: StoredRulesTests.admin).status == 200)
        // GET answers them as they were put.
        #expect(send(second, "GET", "/.settings/rules.json?ns=prod", headers: StoredRulesTests.admin).body == StoredRulesTests.denyWrites)
        // Another namespace (another file) has none of them.
        #expect(send(second, "PUT", "/a.json?ns=other", "1").status == 200)
        // Rules put again replace the stored ones, after a restart too.
        #expect(send(second, "PUT", "/.settings/rules.json?ns=prod", #"{"rules":{".write":true}}"#, headers: StoredRulesTests.admin).status == 200)
        let third = try handler(folder: dir)
        #expect(send(third, "PUT", "/a.json?ns=prod", "3").status == 200)
    }

    @Test func aDryRunStoresNothing() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try handler(folder: dir)
        #expect(send(first, "PUT", "/.settings/rules.json?ns=prod&dryRun=true", StoredRulesTests.denyWrites, headers: StoredRulesTests.admin).status == 200)
        #expect(!FileManager.default.fileExists(atPath: dir + "/prod.db"))
        #expect(send(try handler(folder: dir), "PUT", "/a.json?ns=prod", "1").status == 200)
    }

    @Test func rulesGivenAtStartWinOverStoredOnes() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(send(try handler(folder: dir), "PUT", "/.settings/rules.json?ns=prod", StoredRulesTests.denyWrites,
                     headers: StoredRulesTests.admin).status == 200)
        let started = try handler(folder: dir, startRules: #"{"rules":{".read":true,".write":true}}"#)
        #expect(send(started, "PUT", "/a.json?ns=prod", "1").status == 200)
        // Rules put while it runs are in force at once, and stored.
        #expect(send(started, "PUT", "/.settings/rules.json?ns=prod", StoredRulesTests.denyWrites, headers: StoredRulesTests.admin).status == 200)
        #expect(send(started, "PUT", "/a.json?ns=prod", "2").status == 401)
        #expect(send(try handler(folder: dir), "PUT", "/a.json?ns=prod", "3").status == 401)
    }

    @Test func twoNamesThatReachOneFileShareItsRules() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try handler(folder: dir)
        #expect(send(h, "PUT", "/x.json?ns=prod", "0", headers: StoredRulesTests.admin).status == 200)
        // `alias` reaches prod's file (as `PROD` would on a case-insensitive file system).
        #expect(symlink(dir + "/prod.db", dir + "/alias.db") == 0)
        #expect(send(h, "PUT", "/.settings/rules.json?ns=alias", StoredRulesTests.denyWrites, headers: StoredRulesTests.admin).status == 200)
        #expect(send(h, "PUT", "/a.json?ns=prod", "1").status == 401)
        #expect(send(h, "PUT", "/a.json?ns=alias", "1").status == 401)
        #expect(h.rulesTable.counts.rules == 1)
        // After a restart, under either name, whichever is asked first.
        let again = try handler(folder: dir)
        #expect(send(again, "PUT", "/a.json?ns=alias", "1").status == 401)
        #expect(send(again, "PUT", "/a.json?ns=prod", "1").status == 401)
        // Rules put under one name replace those of the other.
        #expect(send(again, "PUT", "/.settings/rules.json?ns=prod", #"{"rules":{".write":true}}"#, headers: StoredRulesTests.admin).status == 200)
        #expect(send(again, "PUT", "/a.json?ns=alias", "2").status == 200)
        #expect(again.rulesTable.counts.rules == 1)
    }

    @Test func withOneFileRulesPutUnderAnyNameGovernEveryNameAfterARestart() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/one.db"
        #expect(send(try handler(file: file), "PUT", "/.settings/rules.json?ns=a", StoredRulesTests.denyWrites,
                     headers: StoredRulesTests.admin).status == 200)
        let h = try handler(file: file)
        #expect(send(h, "PUT", "/x.json?ns=b", "1").status == 401)
        #expect(send(h, "PUT", "/x.json", "1").status == 401)
    }

    @Test func storedRulesThatNoLongerLoadRefuseAllButTheAdmin() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = EmbeddedDatabase(file: dir + "/prod.db", timeoutSeconds: 5)
        try StoredRules.write(#"{"rules":{".read":"nul"}}"#, to: db)
        let h = try handler(folder: dir)
        #expect(send(h, "GET", "/a.json?ns=prod").status == 401)
        #expect(send(h, "PUT", "/a.json?ns=prod", "1").status == 401)
        #expect(send(h, "PUT", "/a.json?ns=prod", "1", headers: StoredRulesTests.admin).status == 200)
        #expect(send(h, "PUT", "/.settings/rules.json?ns=prod", #"{"rules":{".read":true}}"#, headers: StoredRulesTests.admin).status == 200)
        #expect(send(h, "GET", "/a.json?ns=prod").status == 200)
    }

    @Test func readsOfNamespacesWithoutAFileCreateNothingAndAreNotRemembered() throws {
        let dir = folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try handler(folder: dir)
        for i in 0..<200 { #expect(send(h, "GET", "/a.json?ns=made-up-\(i)").status == 200) }
        #expect(h.rulesTable.counts.read == 0)
        #expect(h.rulesTable.counts.rules == 0)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).isEmpty)
    }
}
