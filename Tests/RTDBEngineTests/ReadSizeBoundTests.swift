import Foundation
import Testing
import RTDBCore
import RTDBTestSupport
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

    /// `jsonBytesExceed` answers what the count answers, for every node of random trees and
    /// caps on both sides of the threshold, and past the threshold it reads no row of `data`
    /// (a server asks it of every read).
    @Test(arguments: 0..<6)
    func exceedingAgreesWithTheCountAndLooksUpPastTheThreshold(seed: UInt64) throws {
        var r = SeededRandom(seed &+ 77)
        let t = TempDatabase()
        t.db.sizeThreshold = [40, 90, 250][Int(seed % 3)]
        for _ in 0..<30 {
            _ = try? t.db.set(StoredSizesTests.randomPath(&r), StoredSizesTests.randomValue(&r))
        }
        let threshold = t.db.sizeThreshold
        var paths: [Path] = [.root, path("/nothing/here")]
        for _ in 0..<40 { paths.append(StoredSizesTests.existingPath(t.db, &r)) }
        for at in paths {
            for cap in [1, threshold / 2, threshold - 1, threshold, threshold + 7, 3 * threshold, 20 * threshold] {
                let counted = try t.db.jsonBytesAtLeast(at, stoppingAbove: cap) > cap
                #expect(try t.db.jsonBytesExceed(at, cap) == counted, "seed \(seed): \(at) cap \(cap)")
            }
        }
        let statements = try WriteStatementsTests.traced(t.db) {
            for at in paths { _ = try t.db.jsonBytesExceed(at, threshold) }
        }
        #expect(!statements.contains { $0.contains("FROM data") }, "\(statements)")
        #expect(statements.contains { $0.contains("FROM sizes") })
    }
}
