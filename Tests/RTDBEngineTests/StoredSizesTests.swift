import Foundation
import Testing
import RTDBCore
import RTDBTestSupport
@testable import RTDBEngine

/// `sizes` must never be wrong: a stored size past the response limit refuses a read, so a
/// size too large would refuse a valid one. After every write of every kind, on a random tree
/// with the threshold lowered so that small trees have many stored sizes, every stored size is
/// what a fresh count of the node's rows gives, and every node counting at least the threshold
/// is stored.
@Suite struct StoredSizesTests {
    static let keys = ["a", "b", "c", "0", "1", "7", "10", "-3", "007", "k y", "é", "日", "q\"x"]

    static func randomKey(_ r: inout SeededRandom) -> String { keys[Int(r.next() % UInt64(keys.count))] }

    static func randomPath(_ r: inout SeededRandom, maxDepth: Int = 3) -> Path {
        Path(validatedKeys: (0..<Int(r.next() % UInt64(maxDepth + 1))).map { _ in randomKey(&r) })
    }

    static func randomLeaf(_ r: inout SeededRandom) -> Node {
        switch r.next() % 7 {
        case 0: return .int(Int64(bitPattern: r.next()) >> Int64(r.next() % 64))
        case 1: return .double(Double(Int64(r.next() % 20_000) - 10_000) / 8)
        case 2: return .bool(r.next() % 2 == 0)
        case 3: return .string(String(repeating: "é\"x", count: Int(r.next() % 40)))
        default: return .string(String(repeating: "v", count: Int(r.next() % 120)))
        }
    }

    /// A value as a client writes one: leaves, objects (some empty, some holding only nulls),
    /// arrays (integer keys), nulls and priorities.
    static func randomValue(_ r: inout SeededRandom, depth: Int = 0) -> Node {
        let roll = r.next() % 10
        var node: Node
        if depth >= 3 || roll < 3 {
            node = r.next() % 12 == 0 ? .null : randomLeaf(&r)
        } else {
            var entries: [Node.Entry] = []
            var used = Set<String>()
            let asArray = roll == 9
            for i in 0..<Int(r.next() % 5) {
                let key = asArray ? String(i) : randomKey(&r)
                if !used.insert(key).inserted { continue }
                entries.append(Node.Entry(key, randomValue(&r, depth: depth + 1)))
            }
            node = Node.object(normalizing: entries)
        }
        if r.next() % 8 == 0, !node.isNull { node = node.withPriority(.int(Int64(r.next() % 5))) }
        return node
    }

    /// The count `ReadSizeBound` gives the node at the encoded key, from all its rows.
    static func freshCount(_ c: Connection, _ db: EmbeddedDatabase, _ key: [UInt8]) throws -> Int {
        var count = ReadSizeBound(skip: key.count)
        let s = try db.range(c, StorageKey.subtree(key), "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
        defer { s.reset() }
        while try s.step() { count.add(s) }
        return count.total
    }

    /// Every stored size is exact and at least the threshold; every node at least the threshold
    /// is stored. Returns how many sizes are stored.
    @discardableResult
    static func expectExact(_ db: EmbeddedDatabase, _ what: @autoclosure () -> String,
                            sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        try db.reading(0) { c in
            var nodes = Set<[UInt8]>()
            let rows = try c.statement("SELECT path FROM data")
            while try rows.step() {
                let key = Array(rows.blob(0))
                nodes.insert([])
                for end in SizeRules.segmentEnds(key) { nodes.insert(Array(key[..<end])) }
            }
            rows.reset()
            var stored: [[UInt8]: Int] = [:]
            let sizes = try c.statement("SELECT path, bytes FROM sizes")
            while try sizes.step() { stored[Array(sizes.blob(0))] = Int(sizes.int(0 + 1)) }
            sizes.reset()
            for (key, bytes) in stored {
                let fresh = try freshCount(c, db, key)
                #expect(fresh == bytes, "\(what()): \(StorageKey.keys(key.withUnsafeBufferPointer { $0 })) stored \(bytes), counts \(fresh)",
                        sourceLocation: sourceLocation)
                #expect(bytes >= db.sizeThreshold, "\(what()): a size below the threshold is stored", sourceLocation: sourceLocation)
            }
            for key in nodes where stored[key] == nil {
                let fresh = try freshCount(c, db, key)
                #expect(fresh < db.sizeThreshold, "\(what()): \(StorageKey.keys(key.withUnsafeBufferPointer { $0 })) counts \(fresh), not stored",
                        sourceLocation: sourceLocation)
            }
            return stored.count
        }
    }

    /// A node that holds data, its path sometimes extended by a key.
    static func existingPath(_ db: EmbeddedDatabase, _ r: inout SeededRandom) -> Path {
        let keys = (try? db.reading([[UInt8]]()) { c in
            var all: [[UInt8]] = []
            let s = try c.statement("SELECT path FROM data")
            defer { s.reset() }
            while try s.step() { all.append(Array(s.blob(0))) }
            return all
        }) ?? []
        guard !keys.isEmpty else { return randomPath(&r) }
        let key = keys[Int(r.next() % UInt64(keys.count))]
        let ends = [0] + SizeRules.segmentEnds(key)
        let prefix = Array(key[..<ends[Int(r.next() % UInt64(ends.count))]])
        var p = Path(validatedKeys: prefix.withUnsafeBufferPointer { StorageKey.keys($0) })
        if r.next() % 4 == 0 { p = p.appending(randomKey(&r)) }
        return p
    }

    /// One random write of any kind, through `db`; a write the database refuses changes nothing.
    /// `imports` false: none of the streamed imports (they run a transaction of their own, so
    /// not inside a batch).
    static func randomWrite(_ db: EmbeddedDatabase, _ r: inout SeededRandom, imports: Bool = true) -> String {
        // Mostly a node that holds data (or a place beside or below one), so that writes
        // shrink, empty and replace nodes as often as they grow them.
        let at = r.next() % 3 == 0 ? randomPath(&r) : existingPath(db, &r)
        let value = randomValue(&r)
        let window = [16, 64, 4096][Int(r.next() % 3)]
        do {
            var kind = r.next() % 13
            if !imports && (6...8).contains(kind) { kind = 12 }
            switch kind {
            case 0, 1:
                _ = try db.set(at, value)
                return "set \(at) \(text(value))"
            case 2, 10:
                _ = try db.set(at, .null)
                return "remove \(at)"
            case 3:
                // Several paths at once, none inside another, priorities among them.
                var entries: [(path: Path, value: Node)] = []
                var firsts = Set<String>()
                for _ in 0..<Int(1 + r.next() % 4) {
                    let first = randomKey(&r)
                    guard firsts.insert(first).inserted else { continue }
                    let rest = randomPath(&r, maxDepth: 2)
                    let p = Path(validatedKeys: [first] + rest.keys)
                    entries.append(r.next() % 6 == 0 ? (p.priority, .int(3)) : (p, r.next() % 4 == 0 ? .null : randomValue(&r)))
                }
                _ = try db.update(at, entries)
                return "update \(at) \(entries.map { "\($0.path)=\(text($0.value))" })"
            case 4:
                let values = (0..<Int(1 + r.next() % 3)).map { _ in randomValue(&r) }
                _ = try db.push(at, values)
                return "push \(at) \(values.map(text))"
            case 5:
                _ = try db.set(at.priority, r.next() % 3 == 0 ? .null : .string("p"))
                return "priority \(at)"
            case 6:
                // Sometimes with a key given twice (the last value counts).
                let doc = r.next() % 3 == 0 ? "{\"k\":\(text(value)),\"j\":1,\"k\":\(text(randomValue(&r)))}" : text(value)
                _ = try db.importJSON(at, from: BytesSource(Array(doc.utf8)), as: .set, window: window,
                                      progress: Progress.none, flatValues: r.next() % 2 == 0)
                return "import set \(at) \(doc) window \(window)"
            case 7:
                guard case .object = value.withoutPriorities else { return "skip" }
                _ = try db.importJSON(at, from: BytesSource(Array(text(value).utf8)), as: .update, window: window,
                                      progress: Progress.none, flatValues: r.next() % 2 == 0)
                return "import update \(at) \(text(value)) window \(window)"
            case 8:
                guard case .object = value.withoutPriorities else { return "skip" }
                try db.importChildren(at, from: BytesSource(Array(text(value.withoutPriorities).utf8)), window: window)
                return "import children \(at) \(text(value)) window \(window)"
            case 9:
                _ = try db.increment(at, by: .int(Int64(r.next() % 1000)))
                return "increment \(at)"
            case 11:
                let current = try db.get(at)
                _ = try db.compareAndSet(at, expected: current, value: value)
                return "compare-and-set \(at) \(text(value))"
            default:
                _ = try db.set(at, randomLeaf(&r))
                return "set leaf \(at)"
            }
        } catch let e as RTDBError {
            return "refused (\(e.code.rawValue))"
        } catch {
            return "failed: \(error)"
        }
    }

    @Test(arguments: 0..<24)
    func everyWriteKeepsEveryStoredSizeExact(seed: UInt64) throws {
        var r = SeededRandom(seed)
        let t = TempDatabase()
        let threshold = [1, 12, 40, 90, 250][Int(seed % 5)]
        t.db.sizeThreshold = threshold
        // A second handle on the file writes too (another process would).
        let other = t.another()
        other.sizeThreshold = threshold
        _ = try t.db.set(.root, StoredSizesTests.randomValue(&r))
        try StoredSizesTests.expectExact(t.db, "seed \(seed), first set")
        var history: [String] = []
        var storedAtSomePoint = 0
        for step in 0..<60 {
            let db = r.next() % 4 == 0 ? other : t.db
            history.append(StoredSizesTests.randomWrite(db, &r))
            let n = try StoredSizesTests.expectExact(t.db, "seed \(seed) step \(step): \(history.suffix(3))")
            storedAtSomePoint = max(storedAtSomePoint, n)
            #expect(!history.last!.hasPrefix("failed"), "\(history.last!)")
        }
        // The runs stored sizes to check (a threshold of 1 stores every node).
        #expect(storedAtSomePoint > 0)
    }

    /// Writes grouped in batches, as serve's group commit makes them, on a handle that keeps
    /// what its transactions learned (`KnownCounts`, carried from one commit to the next), with
    /// a second handle writing now and then; rolled-back batches among them. Every stored size
    /// stays exact after every batch.
    @Test(arguments: 0..<16)
    func batchedWritesKeepEveryStoredSizeExact(seed: UInt64) throws {
        var r = SeededRandom(seed &+ 1_000)
        let t = TempDatabase()
        let threshold = [40, 90, 250, 1_000][Int(seed % 4)]
        t.db.sizeThreshold = threshold
        let other = t.another()
        other.sizeThreshold = threshold
        _ = try t.db.set(.root, StoredSizesTests.randomValue(&r))
        var history: [String] = []
        for step in 0..<40 {
            if r.next() % 6 == 0 {
                history.append("other: " + StoredSizesTests.randomWrite(other, &r))
                continue
            }
            t.db.beginBatch()
            for _ in 0..<Int(1 + r.next() % 8) {
                // Lists filling up (new keys, pushes) as well as anything else.
                let at = StoredSizesTests.existingPath(t.db, &r)
                switch r.next() % 4 {
                case 0:
                    let key = "n\(r.next() % 10_000)"
                    _ = try? t.db.set(at.appending(key), StoredSizesTests.randomValue(&r))
                    history.append("set \(at)/\(key)")
                case 1:
                    _ = try? t.db.push(at, [StoredSizesTests.randomLeaf(&r)])
                    history.append("push \(at)")
                default:
                    history.append(StoredSizesTests.randomWrite(t.db, &r, imports: false))
                }
            }
            if r.next() % 7 == 0 {
                t.db.rollbackBatch()
                history.append("rolled back")
            } else {
                try t.db.commitBatch()
            }
            try StoredSizesTests.expectExact(t.db, "seed \(seed) batch \(step): \(history.suffix(4))")
        }
    }

    /// A write into a list below the threshold does not count the list's rows again when the
    /// handle counted them already: its count moves by the difference (`KnownCounts`). The
    /// first insert counts them; the next ones, and a push, do not.
    @Test func insertsIntoAListCountItOnce() throws {
        let t = TempDatabase()
        t.db.sizeThreshold = 4_000
        let other = t.another()
        other.sizeThreshold = 4_000
        // A root past the threshold (stored: writes keep `sizes`), a list well below it,
        // written by another handle (this one knows nothing of them).
        _ = try other.set(path("/filler"), .string(String(repeating: "f", count: 5_000)))
        _ = try other.set(path("/list"), .object((0..<40).map { Node.Entry("k\($0)", .string("some text")) }))
        // A range count: of the new key's own (empty) node, once per insert; of the rest of
        // the list beside it, twice (before and after the key) when the list is counted.
        let scan = "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2"
        func scans(_ statements: [String]) -> Int { statements.filter { $0 == scan }.count }
        let first = try WriteStatementsTests.servedWrite(t.db, "/list/new0", .string("hello"))
        #expect(scans(first) == 3, "\(first)")
        for n in 1..<5 {
            let next = try WriteStatementsTests.servedWrite(t.db, "/list/new\(n)", .string("hello"))
            #expect(scans(next) == 1, "insert \(n): \(next)")
        }
        let pushed = try WriteStatementsTests.traced(t.db) {
            t.db.beginBatch(waitingForLock: false)
            _ = try t.db.push(path("/list"), [.string("pushed")])
            try t.db.commitBatch()
        }
        #expect(scans(pushed) == 0, "push: \(pushed)")
        try StoredSizesTests.expectExact(t.db, "inserts")
        // Another handle's write: the next insert counts again (what this handle knew may be
        // stale), and the sizes stay exact.
        _ = try other.set(path("/list/k3"), .null)
        let afterOther = try WriteStatementsTests.servedWrite(t.db, "/list/new9", .string("hello"))
        #expect(scans(afterOther) == 3, "\(afterOther)")
        try StoredSizesTests.expectExact(t.db, "after another handle's write")
    }

    /// A write that replaces a node forgets what its handle knew of the nodes below it: a count
    /// kept from before would be moved by the next write below and stored once it crossed the
    /// threshold, wrong.
    @Test func aNodeReplacedForgetsTheCountsBelowIt() throws {
        let t = TempDatabase()
        t.db.sizeThreshold = 1_000
        _ = try t.db.set(path("/filler"), .string(String(repeating: "f", count: 1_500)))
        t.db.beginBatch()
        _ = try t.db.set(path("/a/b"), .object((0..<12).map { Node.Entry("k\($0)", .string("twenty bytes of text")) }))
        _ = try t.db.set(path("/a"), json(#"{"b":{"x":"small"}}"#))
        _ = try t.db.set(path("/a/b/y"), .string(String(repeating: "y", count: 700)))
        try t.db.commitBatch()
        try StoredSizesTests.expectExact(t.db, "after the replaced node grew")
    }

    /// Removing the last child of a node too small to be stored removes that node from its
    /// stored parent's count too (its key and braces go with it).
    @Test func aSmallNodeLeftEmptyLeavesItsStoredParentsCount() throws {
        let t = TempDatabase()
        t.db.sizeThreshold = 40
        _ = try t.db.set(.root, json(#"{"a":{"b":"x"},"c":"0123456789012345678901234567890123456789"}"#))
        try StoredSizesTests.expectExact(t.db, "set")
        _ = try t.db.set(path("/a/b"), .null)
        #expect(try StoredSizesTests.expectExact(t.db, "remove") == 2)
        _ = try t.db.set(path("/a/b/c"), .int(5))
        try StoredSizesTests.expectExact(t.db, "set below a leaf")
        _ = try t.db.set(path("/c/d"), .int(5))
        #expect(try StoredSizesTests.expectExact(t.db, "set below a stored leaf") == 0)
    }

    /// A value large enough for the default threshold, through each kind of write.
    @Test func theDefaultThresholdStoresLargeNodesAndDropsThemWhenTheyShrink() throws {
        let t = TempDatabase()
        let filler = String(repeating: "x", count: 1_000)
        let users = Node.object((0..<200).map { Node.Entry("u\($0)", .object([Node.Entry("s", .string(filler))])) })
        _ = try t.db.set(path("/users"), users)
        #expect(try StoredSizesTests.expectExact(t.db, "set") == 2)   // /users and the root
        let bound = try t.db.jsonBytesAtLeast(path("/users"), stoppingAbove: 2 * t.db.sizeThreshold)
        #expect(bound == JSONWriter.string(try t.db.get(path("/users"))).utf8.count - 1)
        _ = try t.db.push(path("/users"), [.string(String(repeating: "y", count: 70_000))])
        #expect(try StoredSizesTests.expectExact(t.db, "push") == 3)   // and the pushed string
        _ = try t.db.importJSON(path("/copy"), from: BytesSource(Array(JSONWriter.string(users).utf8)), as: .set, window: 4096)
        #expect(try StoredSizesTests.expectExact(t.db, "import") == 4)
        _ = try t.db.set(path("/users"), .null)
        #expect(try StoredSizesTests.expectExact(t.db, "remove") == 2)   // /copy and the root
    }

    /// A file made before sizes were kept (schema version 4) reads by counting rows, and gets
    /// its sizes on its first write.
    @Test func anOlderFileGetsItsSizesOnItsFirstWrite() throws {
        let t = TempDatabase()
        var r = SeededRandom(99)
        t.db.sizeThreshold = 30
        _ = try t.db.set(.root, StoredSizesTests.randomValue(&r))
        _ = try t.db.set(path("/list"), .object((0..<40).map { Node.Entry("n\($0)", StoredSizesTests.randomValue(&r)) }))
        let rendered = JSONWriter.string(try t.db.get(.root)).utf8.count
        do {
            let raw = try Connection(file: t.file, create: false, timeoutSeconds: 5)
            try raw.exec("DROP TABLE sizes; PRAGMA user_version=4")
        }
        let old = t.another()
        old.sizeThreshold = 30
        // Read before the upgrade: counted from the rows, the file left at version 4.
        let counted = try old.jsonBytesAtLeast(.root, stoppingAbove: Int.max - 1)
        #expect(counted <= rendered && counted > 30)
        #expect(try userVersion(t.file) == 4)
        // The first write (one that changes no data) upgrades the file and fills the table.
        _ = try old.set(path("/nothing/here"), .null)
        #expect(try userVersion(t.file) == EmbeddedDatabase.schemaVersion)
        #expect(try old.jsonBytesAtLeast(.root, stoppingAbove: Int.max - 1) == counted)
        #expect(try StoredSizesTests.expectExact(old, "after the upgrade") > 1)
        _ = try old.set(path("/a/b"), .int(1))
        #expect(try StoredSizesTests.expectExact(old, "after the upgrade") > 1)
    }

    /// A read's bound comes from the stored size: no row is counted (a stored size changed
    /// behind rtdb's back is what it answers).
    @Test func aStoredSizeIsAnsweredWithoutCountingRows() throws {
        let t = TempDatabase()
        t.db.sizeThreshold = 10
        _ = try t.db.set(path("/big"), json(#"{"a":"0123456789","b":"0123456789"}"#))
        let key = StorageKey.encode(path("/big"))
        #expect(try t.db.jsonBytesAtLeast(path("/big"), stoppingAbove: 20) == 34)
        do {
            let raw = try Connection(file: t.file, create: false, timeoutSeconds: 5)
            let s = try raw.statement("UPDATE sizes SET bytes = 123456789 WHERE path = ?1")
            s.bind(1, blob: key)
            try s.run()
        }
        #expect(try t.db.jsonBytesAtLeast(path("/big"), stoppingAbove: 20) == 123_456_789)
        // A node below the threshold is counted: up to the cap.
        #expect(try t.db.jsonBytesAtLeast(path("/big/a"), stoppingAbove: 5) == 12)
    }

    /// Many small writes on one handle, as serve makes them: while the file is small they leave
    /// `sizes` alone (RootSize.swift), and the sizes are exact as it grows past the threshold,
    /// shrinks below it and grows again.
    @Test func smallWritesOnOneHandleKeepSizesExactAcrossTheThreshold() throws {
        let t = TempDatabase()
        t.db.sizeThreshold = 200
        _ = try t.db.set(path("/items/k"), json(#"{"n":1}"#))
        _ = try t.db.set(path("/items/k"), json(#"{"n":2}"#))
        let small = try WriteStatementsTests.traced(t.db) { _ = try t.db.set(path("/items/k"), json(#"{"n":3}"#)) }
        #expect(!small.contains { $0.contains("sizes") }, "\(small)")
        var stored = 0
        for round in 0..<2 {
            for n in 0..<40 {
                t.db.beginBatch()
                _ = try t.db.set(path("/items/k\(n)"), json(#"{"n":1,"t":"xy"}"#))
                _ = try t.db.update(path("/meta"), [(path("count"), .int(Int64(n)))])
                try t.db.commitBatch()
                stored = max(stored, try StoredSizesTests.expectExact(t.db, "round \(round), insert \(n)"))
            }
            for n in 0..<40 where n % 4 != 0 {
                _ = try t.db.set(path("/items/k\(n)"), .null)
                try StoredSizesTests.expectExact(t.db, "round \(round), remove \(n)")
            }
        }
        #expect(stored >= 2)   // the file went past the threshold
    }
}
