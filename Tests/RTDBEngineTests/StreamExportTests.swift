import Testing
import RTDBTestSupport
import RTDBCore
@testable import RTDBEngine

/// `streamJSON` writes, from the rows, exactly the text `JSONWriter` writes for the value read
/// whole: compared on generated trees (arrays dense and sparse, integer-like keys that are not
/// indices, priorities on leaves and objects, every kind of leaf and awkward strings) in every
/// form, at the root and below it.
@Suite struct StreamExportTests {

    static let keys = ["a", "b", "zz", "0", "1", "2", "3", "7", "10", "-1", "007", "01", "é", "\u{E000}", "日本",
                       "with space", "q\"uote", "back\\slash", "2147483648", "99"]
    static let strings = ["", "x", "line\nbreak", "tab\t", "\u{1}ctl", "é日本\u{1F600}", "quote\"back\\", "\u{E000}\u{FFFF}"]

    func leaf(_ g: inout SeededRandom) -> Node {
        switch g.below(6) {
        case 0: return .int(Int64(g.below(2000)) - 1000)
        case 1: return .double([0.5, -1.25e-7, 1e21, 3.0e300, 0.1][g.below(5)])
        case 2: return .bool(g.below(2) == 0)
        case 3: return .int(Int64.max - Int64(g.below(3)))
        default: return .string(StreamExportTests.strings[g.below(StreamExportTests.strings.count)])
        }
    }

    func priority(_ g: inout SeededRandom) -> Node? {
        switch g.below(8) {
        case 0: return .int(Int64(g.below(10)))
        case 1: return .string("p\(g.below(5))")
        case 2: return .double(2.5)
        default: return nil
        }
    }

    func tree(_ g: inout SeededRandom, depth: Int) -> Node {
        if depth > 4 || g.below(4) == 0 {
            let v = leaf(&g)
            return priority(&g).map { v.withPriority($0) } ?? v
        }
        var entries: [Node.Entry] = []
        switch g.below(3) {
        case 0:
            // Array-like: indices, dense or with holes.
            let n = 1 + g.below(6)
            for i in 0..<n where g.below(3) != 0 || i == n - 1 { entries.append(Node.Entry(String(i), tree(&g, depth: depth + 1))) }
        default:
            for _ in 0..<(1 + g.below(5)) {
                entries.append(Node.Entry(StreamExportTests.keys[g.below(StreamExportTests.keys.count)], tree(&g, depth: depth + 1)))
            }
        }
        let object = Node.object(normalizing: entries)
        return priority(&g).map { object.withPriority($0) } ?? object
    }

    func streamed(_ db: EmbeddedDatabase, _ p: Path, export: Bool, pretty: Bool) throws -> String {
        var out: [UInt8] = []
        try db.streamJSON(p, export: export, pretty: pretty, progress: Progress.none) { out += $0 }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func generatedTreesPrintAsTheWholeValueDoes() throws {
        var g = SeededRandom(20_261_125)
        var compared = 0
        for _ in 0..<60 {
            let t = TempDatabase()
            let value = tree(&g, depth: 0)
            _ = try t.db.set(.root, value)
            var paths: [Path] = [.root, path("/nothing/here")]
            for e in try t.db.get(.root).children.prefix(3) {
                paths.append(Path.root.appending(e.key))
                for f in e.node.children.prefix(2) { paths.append(Path.root.appending(e.key).appending(f.key)) }
            }
            for p in paths {
                for export in [false, true] {
                    for pretty in [false, true] {
                        let whole = export ? try t.db.export(p) : try t.db.get(p)
                        let expected = JSONWriter.string(whole, pretty: pretty, export: export)
                        #expect(try streamed(t.db, p, export: export, pretty: pretty) == expected, "\(p) export \(export) pretty \(pretty)")
                        compared += 1
                    }
                }
            }
        }
        #expect(compared > 500)
    }

    @Test func arraysTheWayTheWriterDecides() throws {
        let t = TempDatabase()
        let cases = [#"{"0":"a","1":"b","2":"c"}"#, #"{"0":1,"5":2}"#, #"{"0":1,"3":2}"#, #"{"1":1,"2":2}"#,
                     #"{"0":1,"01":2}"#, #"{"0":1,"a":2}"#, #"{"-1":1,"0":2}"#, #"{"2147483647":1}"#, #"{"7":{"0":{"0":true}}}"#]
        for c in cases {
            _ = try t.db.set(path("/x"), json(c))
            for pretty in [false, true] {
                #expect(try streamed(t.db, path("/x"), export: false, pretty: pretty) == JSONWriter.string(json(c), pretty: pretty), "\(c)")
            }
        }
        #expect(try streamed(t.db, path("/x/7/0/0/.priority"), export: false, pretty: false) == "null")
    }

    @Test func aMissingFilePrintsNull() throws {
        let t = TempDatabase()
        #expect(try streamed(t.db, .root, export: true, pretty: false) == "null")
    }
}
