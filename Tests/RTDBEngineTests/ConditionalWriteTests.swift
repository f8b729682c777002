import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine

/// A database that forwards everything to the engine except the conditional write, so the
/// protocol's default (compare-and-set based) implementation is the one that runs.
final class WithoutNativeConditionalWrite: Database {
    let base: EmbeddedDatabase
    init(_ base: EmbeddedDatabase) { self.base = base }
    func get(_ path: Path) throws -> Node { try base.get(path) }
    func shallow(_ path: Path) throws -> Node { try base.shallow(path) }
    func export(_ path: Path) throws -> Node { try base.export(path) }
    func query(_ path: Path, _ query: Query) throws -> [Node.Entry] { try base.query(path, query) }
    func set(_ path: Path, _ value: Node) throws -> Node { try base.set(path, value) }
    func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] {
        try base.update(path, entries)
    }
    func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] { try base.push(path, values) }
    func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult {
        try base.compareAndSet(path, expected: expected, value: value)
    }
    func increment(_ path: Path, by delta: Node) throws -> Node { try base.increment(path, by: delta) }
    func observe(_ path: Path, idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        try base.observe(path, idle: idle, onChange: onChange)
    }
}

@Suite struct ConditionalWriteTests {
    @Test func writesWhenTheConditionHoldsOnTheStoredValue() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/v"), json("{\"n\":1}"))
        var seen: [String] = []
        let result = try t.db.set(path("/v"), json("{\"n\":2}"), if: { seen.append(text($0)); return true })
        guard case .committed(let stored) = result else { Issue.record("expected a commit"); return }
        #expect(text(stored) == "{\"n\":2}")
        #expect(seen == ["{\"n\":1}"])
        #expect(text(try t.another().get(path("/v"))) == "{\"n\":2}")
    }

    @Test func writesNothingWhenTheConditionFails() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/v"), .int(1))
        guard case .stale(let current) = try t.db.set(path("/v"), .int(2), if: { _ in false }) else {
            Issue.record("expected a stale result"); return
        }
        #expect(text(current) == "1")
        #expect(text(try t.db.get(path("/v"))) == "1")
    }

    @Test func aMissingValueIsNullAndCanBeCreatedOnlyIfAbsent() throws {
        let t = TempDatabase()
        let first = try t.db.set(path("/new"), .string("a"), if: { $0.isNull })
        guard case .committed = first else { Issue.record("expected a commit"); return }
        guard case .stale(let cur) = try t.db.set(path("/new"), .string("b"), if: { $0.isNull }) else {
            Issue.record("expected a stale result"); return
        }
        #expect(text(cur) == "\"a\"")
    }

    @Test func deletesConditionally() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a/b"), .int(1))
        guard case .committed(let stored) = try t.db.set(path("/a/b"), .null, if: { $0.same(as: .int(1)) }) else {
            Issue.record("expected a commit"); return
        }
        #expect(stored.isNull)
        #expect(try t.db.get(path("/a")).isNull)
    }

    @Test func serverValuesResolveAgainstTheCheckedValue() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/c"), json("{\"n\":4,\"m\":1}"))
        let v = json("{\"n\":{\".sv\":{\"increment\":1}},\"t\":{\".sv\":\"timestamp\"}}")
        guard case .committed(let stored) = try t.db.set(path("/c"), v, if: { _ in true }) else {
            Issue.record("expected a commit"); return
        }
        #expect(text(stored) == "{\"n\":5,\"t\":1700000000000}")
    }

    @Test func noOtherWriterCommitsBetweenTheCheckAndTheWrite() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/v"), .int(1))
        let impatient = EmbeddedDatabase(file: t.file, timeoutSeconds: 0.2)
        var intruderFailed = false
        let result = try t.db.set(path("/v"), .int(2), if: { current in
            // The check runs inside the write transaction: another writer must wait.
            do { _ = try impatient.set(path("/v"), .int(100)) } catch { intruderFailed = true }
            return current.same(as: .int(1))
        })
        guard case .committed = result else { Issue.record("expected a commit"); return }
        #expect(intruderFailed)
        #expect(text(try t.db.get(path("/v"))) == "2")
    }

    @Test func theDefaultImplementationChecksAgainAfterAConcurrentWrite() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/v"), .int(1))
        let db = WithoutNativeConditionalWrite(t.db)
        let other = t.another()
        var seen: [String] = []
        let result = try db.set(path("/v"), .int(3), if: { current in
            seen.append(text(current))
            if seen.count == 1 { _ = try? other.set(path("/v"), .int(2)) }   // lands in between
            return true
        })
        guard case .committed = result else { Issue.record("expected a commit"); return }
        #expect(seen == ["1", "2"])
        #expect(text(try t.db.get(path("/v"))) == "3")
        guard case .stale(let cur) = try db.set(path("/v"), .int(4), if: { $0.same(as: .int(1)) }) else {
            Issue.record("expected a stale result"); return
        }
        #expect(text(cur) == "3")
    }

    @Test func concurrentConditionalIncrementsAreExact() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let file = t.file
        let errors = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let db = EmbeddedDatabase(file: file, timeoutSeconds: 10)
            for _ in 0..<25 {
                var done = false
                while !done {
                    do {
                        let seen = try db.get(path("/n"))
                        guard case .int(let n) = seen else { errors.add(); return }
                        if case .committed = try db.set(path("/n"), .int(n + 1), if: { $0.same(as: seen) }) { done = true }
                    } catch {
                        errors.add()
                        return
                    }
                }
            }
        }
        #expect(errors.value == 0)
        #expect(text(try t.db.get(path("/n"))) == "100")
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
