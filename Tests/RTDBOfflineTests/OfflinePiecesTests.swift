import Foundation
import Testing
import RTDBCore
import RTDBEngine
import RTDBRemote
@testable import RTDBOffline

private func row(_ id: Int64, _ p: String, _ data: String, kind: QueuedWrite.Kind = .set, principal: String = "anonymous") -> QueuedWrite {
    let d: Node = kind == .update ? .object((try? JSONReader.parseEntries(data)) ?? nil ?? []) : json(data)
    return QueuedWrite(id: id, cmd: kind == .set ? "set" : "update", kind: kind, path: path(p), data: d, state: .pending,
                       attempts: 0, createdMillis: 0, principal: principal)
}

/// Pure pieces of the offline cache: which queued rows travel together, tracked-query params,
/// principals of credentials.
@Suite struct OfflinePiecesTests {
    @Test func rowsThatDoNotOverlapGoTogether() {
        let rows = [row(1, "/a", "1"), row(2, "/b", "2"), row(3, "/c", #"{"x":1,"y/z":2}"#, kind: .update), row(4, "/d", "4")]
        #expect(OfflineDatabase.coalesce(rows, from: 0, principal: "anonymous").map(\.id) == [1, 2, 3, 4])
    }

    @Test func aRowOverlappingAnEarlierOneEndsTheBatch() {
        // /l then /l/y: applied together as one update they would be refused (overlap), and
        // their order matters, so the batch stops before /l/y.
        let rows = [row(1, "/l", #"{"x":1}"#), row(2, "/m", "1"), row(3, "/l/y", "2"), row(4, "/n", "1")]
        #expect(OfflineDatabase.coalesce(rows, from: 0, principal: "anonymous").map(\.id) == [1, 2])
        #expect(OfflineDatabase.coalesce(rows, from: 2, principal: "anonymous").map(\.id) == [3, 4])
        // Two increments of one counter never travel together.
        let inc = #"{".sv":{"increment":1}}"#
        #expect(OfflineDatabase.coalesce([row(1, "/n", inc), row(2, "/n", inc)], from: 0, principal: "anonymous").count == 1)
    }

    @Test func anotherPrincipalOrTheRootEndsTheBatch() {
        let rows = [row(1, "/a", "1"), row(2, "/b", "2", principal: "uid:x"), row(3, "/c", "3")]
        #expect(OfflineDatabase.coalesce(rows, from: 0, principal: "anonymous").map(\.id) == [1])
        #expect(OfflineDatabase.coalesce([row(1, "/", "1"), row(2, "/b", "2")], from: 0, principal: "anonymous").count == 0)
        #expect(OfflineDatabase.coalesce([row(1, "/a", "1"), row(2, "/", "2")], from: 0, principal: "anonymous").map(\.id) == [1])
    }

    @Test func trackedParamsAreCanonical() throws {
        #expect(TrackedParams.canonical(nil) == "{}")
        #expect(TrackedParams.canonical(Query(order: .value)) == "{}", "an order alone is the default query")
        let q = Query(order: .value, limit: .last(4))
        let text = TrackedParams.canonical(q)
        #expect(text == #"{"limitToLast":"4","orderBy":"\"$value\""}"#)
        let back = try #require(try TrackedParams.query(text))
        #expect(TrackedParams.canonical(back) == text)
    }

    @Test func principalsNameWhoNotTheSecret() {
        func b64(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let jwt = b64(#"{"alg":"none"}"#) + "." + b64(#"{"sub":"joe","exp":1700000000}"#) + "."
        #expect(Principal.of(.auth(jwt)) == "uid:joe")
        #expect(Principal.expiryMillis(.auth(jwt)) == 1_700_000_000_000)
        #expect(Principal.of(.auth("a-database-secret")) == "admin")
        #expect(Principal.of(.accessToken("ya29.x")) == "admin")
        #expect(Principal.of(.none) == "anonymous")
    }
}
