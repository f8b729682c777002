import Foundation
import Testing
import RTDBTestSupport
import RTDBCore
@testable import RTDBEngine

/// Keys that exercise every rule of Firebase's key order: integers (negative, leading zeros,
/// the 32-bit limits and just past them), strings that extend each other, and characters
/// whose UTF-8 and UTF-16 orders differ.
func randomKey(_ r: inout SeededRandom) -> String {
    let fixed = ["0", "-0", "00", "7", "07", "007", "-1", "-01", "10", "9", "2147483647", "2147483648",
                 "-2147483648", "-2147483649", "a", "ab", "a b", "b", "A", "-", "-a", "1a", "\u{E000}",
                 "\u{FFFD}", "\u{1F600}", "é", "z\u{1F600}", "z\u{FFFF}", "~", " "]
    switch Int.random(in: 0..<4, using: &r) {
    case 0: return fixed[Int.random(in: 0..<fixed.count, using: &r)]
    case 1: return String(Int.random(in: -3000...3000, using: &r))
    case 2:
        var ids = PushIDGenerator()
        return ids.next(now: Int64.random(in: 0..<2_000_000_000_000, using: &r))
    default:
        let alphabet = Array("ab-_09Zé\u{E001}\u{1F601}")
        return String((0..<Int.random(in: 1...4, using: &r)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &r)] })
    }
}

@Suite struct KeyOrderedStorageTests {
    @Test func encodedKeysSortInFirebaseKeyOrderAndDecodeBack() {
        var r = SeededRandom(1)
        let keys = (0..<2_000).map { _ in randomKey(&r) }
        for k in keys {
            let seg = StorageKey.segment(k)
            #expect(seg.withUnsafeBufferPointer { StorageKey.key($0, 0..<StorageKey.segmentEnd($0, from: 0)) } == k)
            #expect(seg.withUnsafeBufferPointer { StorageKey.segmentEnd($0, from: 0) } == seg.count)
        }
        for _ in 0..<5_000 {
            let a = keys[Int.random(in: 0..<keys.count, using: &r)], b = keys[Int.random(in: 0..<keys.count, using: &r)]
            let byBytes = StorageKey.segment(a).lexicographicallyPrecedes(StorageKey.segment(b))
            #expect(byBytes == (KeyOrder.compare(a, b) < 0), "\(a) vs \(b)")
        }
        let p = Path(validatedKeys: ["rooms", "-12", "é\u{1F600}", "2147483648"])
        #expect(StorageKey.encode(p).withUnsafeBufferPointer { StorageKey.keys($0) } == p.keys)
    }

    @Test func childrenAreStoredInKeyOrder() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/k"), json(#"{"b":1,"10":2,"9":3,"-1":4,"07":5,"a":{"x":1},"\#u{E000}":6,"\#u{1F600}":7}"#))
        #expect(text(try t.db.shallow(path("/k"))) == #"{"-1":true,"07":true,"9":true,"10":true,"a":true,"b":true,"\#u{1F600}":true,"\#u{E000}":true}"#)
        #expect(text(try t.db.get(path("/k"))) == #"{"-1":4,"07":5,"9":3,"10":2,"a":{"x":1},"b":1,"\#u{1F600}":7,"\#u{E000}":6}"#)
    }

    /// Key-ordered windows (limits and key bounds, answered by seeking to the children in the
    /// window) equal the same query applied to the whole location.
    @Test func keyWindowsEqualTheFilteredWholeLocation() throws {
        let t = TempDatabase()
        var r = SeededRandom(7)
        var doc: [Node.Entry] = []
        for _ in 0..<150 {
            let v: Node = Bool.random(using: &r) ? .int(Int64.random(in: 0..<9, using: &r)) : json(#"{"x":{"y":1},"z":"s"}"#)
            doc.append(Node.Entry(randomKey(&r), v))
        }
        _ = try t.db.set(path("/list"), Node.object(normalizing: doc))
        _ = try t.db.set(path("/list/a/.priority"), .int(3))
        _ = try t.db.set(path("/lisu"), .int(1))   // a sibling right after the location
        let whole = try t.db.export(path("/list"))
        for i in 0..<400 {
            var q = Query(order: .key)
            if Bool.random(using: &r) { q.start = Query.Bound(.string(randomKey(&r)), exclusive: Bool.random(using: &r)) }
            if Bool.random(using: &r) { q.end = Query.Bound(.string(randomKey(&r)), exclusive: Bool.random(using: &r)) }
            switch Int.random(in: 0..<3, using: &r) {
            case 0: q.limit = .first(Int.random(in: 0..<20, using: &r))
            case 1: q.limit = .last(Int.random(in: 0..<20, using: &r))
            default: break
            }
            let got = try t.db.query(path("/list"), q)
            let want = q.window(of: whole)
            #expect(got.map(\.key) == want.map(\.key), "query \(i)")
            #expect(zip(got, want).allSatisfy { JSONWriter.string($0.node, export: true) == JSONWriter.string($1.node, export: true) })
        }
        // A primitive has no children; a bound that is no valid key still filters exactly.
        #expect(try t.db.query(path("/lisu"), Query(order: .key, limit: .first(3))).isEmpty)
        let odd = Query(order: .key, start: Query.Bound(.string("a\u{1}")), limit: .first(2))
        #expect(try t.db.query(path("/list"), odd).map(\.key) == odd.window(of: whole).map(\.key))
    }

    // MARK: files made by the previous release (schema version 2)

    private func versionTwoCopy(_ t: TempDatabase) throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/schema-v2.db")
        try FileManager.default.createDirectory(atPath: t.dir + "/sub", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.path, toPath: t.file)
    }

    private func fixture(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/" + name)
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aVersionTwoFileIsUpgradedByItsFirstWriteWithItsDataAndPriorities() throws {
        let t = TempDatabase()
        try versionTwoCopy(t)
        #expect(try userVersion(t.file) == 2)
        #expect(text(try t.db.get(.root)) == (try fixture("schema-v2.json")))
        #expect(try userVersion(t.file) == 2)
        _ = try t.db.set(path("/motd"), .string("hello"))
        #expect(try userVersion(t.file) == EmbeddedDatabase.schemaVersion)
        #expect(text(try t.db.get(.root)) == (try fixture("schema-v2.json")))
        #expect(JSONWriter.string(try t.another().export(.root), export: true) == (try fixture("schema-v2.export.json")))
        #expect(try t.db.query(path("/users"), Query(order: .key, limit: .last(2))).map(\.key) == ["bob", "carol"])
        #expect(try t.db.query(path("/ranked"), Query(order: .priority)).map(\.key) == ["b", "a"])
        _ = try t.db.set(path("/users/07/age"), .int(8))
        #expect(text(try t.db.get(path("/users/07"))) == #"{"age":8}"#)
    }

    @Test func aVersionTwoFileReadsAsItIsUntilAnotherProcessUpgradesIt() throws {
        let t = TempDatabase()
        try versionTwoCopy(t)
        #expect(JSONWriter.string(try t.db.export(.root), export: true) == (try fixture("schema-v2.export.json")))
        #expect(try t.db.query(path("/users"), Query(order: .key, start: Query.Bound(.string("9")), limit: .first(2))).map(\.key) == ["9", "10"])
        #expect(try userVersion(t.file) == 2)
        // Another process upgrades the file and writes: the reader follows.
        _ = try t.another().set(path("/flag"), .bool(false))
        #expect(try userVersion(t.file) == EmbeddedDatabase.schemaVersion)
        #expect(text(try t.db.get(path("/flag"))) == "false")
        #expect(JSONWriter.string(try t.db.export(path("/users/alice")), export: true) == #"{"age":30,"name":"Alice",".priority":5}"#)
    }
}
