import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine

/// `jsonBytesAtLeast` is what lets a server refuse a read without rendering it: it must never
/// count more than the JSON really takes (a read within the limit would be refused), in any of
/// the forms a read can take, and it must stop counting once past its cap.
@Suite struct ReadSizeBoundTests {
    /// Values whose JSON is smaller than their rows suggest: arrays (integer keys not written),
    /// escapes, non-ASCII text, keys that sort as integers, booleans, numbers, priorities.
    static let awkward = [
        #"{"a":1}"#,
        #""just a string""#,
        #"true"#,
        #"-12.5"#,
        #"[1,2,3,4,5,6,7,8,9,10,11,12]"#,
        #"[[1,[2,[3]]],{"x":[true,false]},null,"s"]"#,
        #"{"0":"a","2":"c","10":"k"}"#,
        #"{"0":"a","1":"b","-1":"neg","007":"padded"}"#,
        #"{"é":"ü","日本":"語","q\"uote":"back\\slash\n"}"#,
        #"{"nested":{"deeper":{"deepest":{"k":"v"}}},"flag":false,"n":0}"#,
        #"{"p":{".value":1,".priority":"high"},"o":{"x":1,".priority":2}}"#,
    ]

    @Test func theBoundNeverPassesTheRenderedSize() throws {
        let t = TempDatabase()
        for (i, doc) in ReadSizeBoundTests.awkward.enumerated() {
            let at = path("/doc\(i)")
            _ = try t.db.set(at, json(doc))
            let plain = JSONWriter.string(try t.db.get(at)).utf8.count
            let bound = try t.db.jsonBytesAtLeast(at, stoppingAbove: Int.max - 1)
            #expect(bound <= plain, "\(doc): bound \(bound) > \(plain)")
        }
        // The root, holding them all; a path with nothing; a priority.
        let root = JSONWriter.string(try t.db.get(Path.root)).utf8.count
        #expect(try t.db.jsonBytesAtLeast(Path.root, stoppingAbove: Int.max - 1) <= root)
        #expect(try t.db.jsonBytesAtLeast(path("/nothing/here"), stoppingAbove: 100) == 0)
        #expect(try t.db.jsonBytesAtLeast(path("/doc10/p/.priority"), stoppingAbove: 100) == 0)
    }

    @Test func aLargeValueIsCountedCloseToItsSizeAndTheCountStopsAtTheCap() throws {
        let t = TempDatabase()
        var children: [Node.Entry] = []
        for i in 0..<5_000 { children.append(Node.Entry("user\(i)", json(#"{"name":"someone","age":42}"#))) }
        _ = try t.db.set(path("/users"), .object(children))
        let size = JSONWriter.string(try t.db.get(path("/users"))).utf8.count
        let bound = try t.db.jsonBytesAtLeast(path("/users"), stoppingAbove: Int.max - 1)
        // Exact but for the braces of /users itself: a refusal needs no more than the limit's
        // worth of rows.
        #expect(bound <= size && bound >= size - 2, "bound \(bound) of \(size)")
        // A node this large has its count stored: once the rows reach the stored threshold,
        // the whole count at once (the cap here is past the threshold, short of the count).
        #expect(bound > 100_000 && t.db.sizeThreshold < 100_000)
        #expect(try t.db.jsonBytesAtLeast(path("/users"), stoppingAbove: 100_000) == bound)
        // A cap below the threshold: the rows pass it first.
        let early = try t.db.jsonBytesAtLeast(path("/users"), stoppingAbove: 1_000)
        #expect(early > 1_000 && early < 1_100, "\(early)")
        // One whose count is not stored is counted from its rows, and the count stops past the
        // cap: just over it, not the whole count.
        let unstored = t.another()
        unstored.sizeThreshold = Int.max
        _ = try unstored.set(path("/users"), .object(children))
        let capped = try unstored.jsonBytesAtLeast(path("/users"), stoppingAbove: 1_000)
        #expect(capped > 1_000 && capped < 1_100, "\(capped)")
    }
}
