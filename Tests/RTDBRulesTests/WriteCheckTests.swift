import Testing
import RTDBCore
@testable import RTDBRules

/// Stored data for a check, in both forms a store reads: with priorities (the export form) and
/// without. Counts the reads of each.
final class CountingStore {
    let tree: Node
    var exportReads = 0
    var plainReads = 0

    init(_ json: String) throws { tree = try JSONReader.parse(json) }

    func ruleData() -> RuleData {
        RuleData(read: { [unowned self] path in
            exportReads += 1
            return tree.child(at: path)
        }, readPlain: { [unowned self] path in
            plainReads += 1
            return tree.child(at: path).withoutPriorities
        })
    }
}

/// Whether `rules` allow `writes` (paths and JSON values, one operation) by `uid` (nil:
/// signed out) on `store`.
func allows(_ rules: String, _ store: CountingStore, _ writes: [(String, String)], uid: String? = nil) throws -> Bool {
    let set = try RuleSet(rules)
    let data = store.ruleData()
    data.setWrites(try writes.map { (try Path($0.0), try JSONReader.parse($0.1)) })
    let principal: Principal = uid.map { .user(auth: .object([Node.Entry("uid", .string($0))])) } ?? .anonymous
    return set.canWrite(principal: principal, now: 1_700_000_000_000, data: data)
}

func allows(_ rules: String, stored: String = "null", _ writes: [(String, String)], uid: String? = nil) throws -> Bool {
    try allows(rules, try CountingStore(stored), writes, uid: uid)
}

/// Write checks on the rule tree alone: the new data validations see at and below a write, the
/// stored data they see beside it, priorities, and `$` variables.
@Suite("Rules: what a write check sees")
struct WriteCheckTests {
    @Test("a validation below a write sees its part of the written value; parent() and child() reach the rest of the new tree")
    func belowTheWrite() throws {
        let rules = #"{"rules":{"w":{".write":true,"a":{".validate":"newData.val() == newData.parent().child('b/c').val()"}}}}"#
        #expect(try allows(rules, [("/w", #"{"a":3,"b":{"c":3}}"#)]))
        #expect(try !allows(rules, [("/w", #"{"a":3,"b":{"c":4}}"#)]))
        // The sibling written by another path of the same update, or stored beside it.
        #expect(try allows(rules, [("/w/a", "3"), ("/w/b/c", "3")]))
        #expect(try !allows(rules, [("/w/a", "3"), ("/w/b/c", "4")]))
        #expect(try allows(rules, stored: #"{"w":{"b":{"c":3}}}"#, [("/w/a", "3")]))
        #expect(try !allows(rules, stored: #"{"w":{"b":{"c":4}}}"#, [("/w/a", "3")]))
        // Deeper: each level hands its own part down.
        let deep = #"{"rules":{".write":true,"x":{"$k":{"y":{".validate":"newData.child('z').val() == $k && newData.parent().parent().child('n').val() == 1"}}}}}"#
        #expect(try allows(deep, [("/x", #"{"n":1,"k1":{"y":{"z":"k1"}}}"#)]))
        #expect(try !allows(deep, [("/x", #"{"n":2,"k1":{"y":{"z":"k1"}}}"#)]))
        #expect(try !allows(deep, [("/x", #"{"n":1,"k1":{"y":{"z":"k2"}}}"#)]))
    }

    @Test("data is the stored value and newData the new one, at the write and below it")
    func dataAndNewData() throws {
        let rules = #"{"rules":{"w":{".write":"data.child('a/x').val() == 1 && newData.child('a/x').val() == 2","a":{"x":{".validate":"data.val() == 1 && newData.val() == 2 && data.parent().parent().exists()"}}}}}"#
        let stored = #"{"w":{"a":{"x":1}}}"#
        #expect(try allows(rules, stored: stored, [("/w", #"{"a":{"x":2}}"#)]))
        #expect(try !allows(rules, stored: stored, [("/w", #"{"a":{"x":1}}"#)]))
        #expect(try !allows(rules, stored: #"{"w":{"a":{"x":3}}}"#, [("/w", #"{"a":{"x":2}}"#)]))
    }

    @Test("a location the write deletes is not validated; an ancestor's validation sees it gone")
    func deletedLocations() throws {
        let rules = #"{"rules":{"w":{".write":true,".validate":"newData.hasChild('keep')","gone":{".validate":false}}}}"#
        let stored = #"{"w":{"keep":1,"gone":2}}"#
        #expect(try allows(rules, stored: stored, [("/w/gone", "null")]))
        #expect(try !allows(rules, stored: stored, [("/w/keep", "null")]))
        #expect(try allows(rules, stored: stored, [("/w", #"{"keep":1}"#)]))
        #expect(try !allows(rules, stored: stored, [("/w", #"{"keep":1,"gone":3}"#)]))
        // Deleting the whole location validates nothing.
        #expect(try allows(rules, stored: stored, [("/w", "null")]))
    }

    @Test("getPriority() reads the stored priority, also after a plain read of the same place, and sees a written one")
    func priorities() throws {
        let stored = #"{"w":{".priority":3,"a":{".value":1,".priority":5}}}"#
        let read = #"{"rules":{"w":{".write":"data.child('a').exists() && data.child('a').getPriority() == 5"}}}"#
        let store = try CountingStore(stored)
        #expect(try allows(read, store, [("/w/b", "1")]))
        #expect(store.plainReads == 1 && store.exportReads == 1)
        // New data above a write keeps the stored priority; written priorities are seen below.
        let merged = #"{"rules":{".write":true,"w":{".validate":"newData.getPriority() == 3","a":{".validate":"newData.getPriority() == 7"}}}}"#
        #expect(try allows(merged, stored: stored, [("/w/b", "2")]))
        #expect(try allows(merged, stored: stored, [("/w/a", #"{".value":1,".priority":7}"#)]))
        #expect(try !allows(merged, stored: stored, [("/w/a", "1")]))
        #expect(try allows(merged, stored: stored, [("/w", #"{".priority":3,"a":{".value":2,".priority":7}}"#)]))
        #expect(try !allows(merged, stored: stored, [("/w", #"{"a":{".value":2,".priority":7}}"#)]))
    }

    @Test("stored data is read once per location, without priorities unless a rule asks for one; data.old has them")
    func storedReads() throws {
        let rules = #"{"rules":{"items":{"$k":{".write":"auth != null && (!data.exists() || data.child('owner').val() == auth.uid)","owner":{".validate":"newData.val() == auth.uid"}}}}}"#
        let store = try CountingStore(#"{"items":{"k1":{".priority":1,"owner":"ann","n":1}}}"#)
        #expect(try allows(rules, store, [("/items/k1", #"{"owner":"ann","n":2}"#)], uid: "ann"))
        #expect(store.plainReads == 1 && store.exportReads == 0)
        #expect(try !allows(rules, store, [("/items/k1", #"{"owner":"bob","n":2}"#)], uid: "bob"))
        let data = store.ruleData()
        #expect(try data.old(Path("/items/k1")).priority.same(as: .int(1)))
        #expect(try data.before(Path("/items/k1/owner"), priorities: false).same(as: .string("ann")))
        #expect(store.exportReads == 1 && store.plainReads == 2)
    }

    @Test("$ variables are bound by position, through literal levels and nested wildcards")
    func wildcards() throws {
        let rules = #"{"rules":{"a":{"$x":{"b":{"$y":{".write":"$x == 'p' && $y == 'q'","$z":{".validate":"$z == 'r' && $x + $y == 'pq'"}}}}}}}"#
        #expect(try allows(rules, [("/a/p/b/q", #"{"r":1}"#)]))
        #expect(try !allows(rules, [("/a/p/b/q", #"{"s":1}"#)]))
        #expect(try !allows(rules, [("/a/o/b/q", #"{"r":1}"#)]))
        #expect(try !allows(rules, [("/a/p/b/o", #"{"r":1}"#)]))
        #expect(try allows(rules, [("/a/p/b/q/r", "1")]))
    }

    @Test("writes that reach inside one another: each location's new data is looked up, the first write over it deciding")
    func overlappingWrites() throws {
        // REST and the realtime protocol refuse such updates; RuleData still answers for them.
        let rules = #"{"rules":{"a":{".write":true,"b":{".validate":"newData.val() == 1"}}}}"#
        #expect(try allows(rules, [("/a/b", "1"), ("/a", #"{"b":2,"c":3}"#)]))
        #expect(try !allows(rules, [("/a", #"{"b":2,"c":3}"#), ("/a/b", "1")]))
        #expect(RuleData.disjoint([try Path("/a/b"), try Path("/a/c"), try Path("/b")]))
        #expect(!RuleData.disjoint([try Path("/a/c"), try Path("/b"), try Path("/a")]))
        #expect(!RuleData.disjoint([try Path("/a"), try Path("/a")]))
    }
}
