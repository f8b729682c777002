import Testing
import RTDBCore
import RTDBTestSupport
@testable import RTDBEngine

/// A streamed import that stores flat values straight from their text stores the same rows as
/// one that reads every value as a `Node` first (the path a value that is not flat takes), and
/// fails with the same error: generated documents with priorities, server values, arrays,
/// Unicode keys, deep nesting and the limits, through windows of several sizes, on files that
/// hold the same data before.
@Suite struct FlatImportTests {
    static let before = #"{"n":5,"t":{"a":1,"b":{".value":2,".priority":7}},"leaf":"x"}"#

    struct Outcome: Equatable, CustomStringConvertible {
        var data: [String]
        var priorities: [String]
        var error: String?
        var description: String { error.map { "error \($0)" } ?? "\(data.count) rows, \(priorities.count) priorities" }
    }

    /// Every row of `table`, in key order, as text.
    func rows(_ t: TempDatabase, _ table: String) throws -> [String] {
        let c = try t.db.writeConnection()
        let s = try c.statement("SELECT hex(path), typeof(\(table == "data" ? "v" : "p")), quote(\(table == "data" ? "v" : "p")) FROM \(table) ORDER BY path")
        defer { s.reset() }
        var out: [String] = []
        while try s.step() { out.append(s.string(0) + " " + s.string(1) + " " + s.string(2)) }
        return out
    }

    func imported(_ text: String, at p: Path, _ kind: ImportKind, window: Int, flat: Bool, inPlace: Bool) throws -> Outcome {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(FlatImportTests.before))
        var error: String? = nil
        do {
            let source: ByteSource = inPlace ? BytesSource(Array(text.utf8)) : StreamImportTests.CopiedSource(text)
            _ = try t.db.importJSON(p, from: source, as: kind, window: window, progress: Progress.none, flatValues: flat)
        } catch let e as RTDBError {
            error = "\(e.code.rawValue): \(e.message)"
        }
        return Outcome(data: try rows(t, "data"), priorities: try rows(t, "priorities"), error: error)
    }

    func compare(seed: UInt64, specials: Bool, count: Int, at p: String, _ kind: ImportKind = .set) throws {
        var docs = JSONDocuments(seed: seed, specials: specials)
        for n in 0..<count {
            let text = docs.document()
            for window in [40, 512, JSONStreamReader.defaultWindow] {
                // Read in place (a request body) strings may be as long as the whole text; read
                // through the window, no longer than it: both paths read the same way.
                let inPlace = n % 2 == 0
                let expected = try imported(text, at: path(p), kind, window: window, flat: false, inPlace: inPlace)
                let got = try imported(text, at: path(p), kind, window: window, flat: true, inPlace: inPlace)
                #expect(got == expected, "seed \(seed) #\(n), window \(window): \(text)")
            }
        }
    }

    @Test func plainDocumentsStoreTheSameRows() throws {
        try compare(seed: 11, specials: false, count: 40, at: "/t")
    }

    @Test func documentsWithEveryRuleStoreTheSameRowsOrFailAlike() throws {
        for seed in 20..<24 as Range<UInt64> {
            try compare(seed: seed, specials: true, count: 30, at: seed % 2 == 0 ? "/t" : "/")
        }
    }

    @Test func updatesStoreTheSameRows() throws {
        for seed in 30..<32 as Range<UInt64> {
            try compare(seed: seed, specials: seed == 31, count: 25, at: "/", .update)
        }
    }

    @Test func nearTheDepthLimit() throws {
        let deep = path("/" + (1...28).map { "d\($0)" }.joined(separator: "/"))
        for text in [#"{"a":{"b":{"c":1}}}"#, #"{"a":{"b":{"c":{"d":1}}}}"#, #"{"a":{"b":{"c":{"d":{"e":null}}}}}"#,
                     #"[[[[1]]]]"#, #"[[[[[1]]]]]"#] {
            for window in [16, 4096] {
                let expected = try imported(text, at: deep, .set, window: window, flat: false, inPlace: false)
                let got = try imported(text, at: deep, .set, window: window, flat: true, inPlace: false)
                #expect(got == expected, "window \(window): \(text)")
            }
        }
    }

    @Test func aManyRowImportWrittenInTheBackgroundIsWhole() throws {
        // Enough rows for many hand-overs to the writer thread, with priorities among them.
        var text = #"{"list":{"#
        for i in 0..<3000 {
            if i > 0 { text += "," }
            text += #""k\#(100_000 + i)":{"n":\#(i),"s":"v\#(i)","p":{"q":[true,\#(i)]}\#(i % 7 == 0 ? #",".priority":\#(i)"# : "")}"#
        }
        text += "}}"
        for window in [4096, JSONStreamReader.defaultWindow] {
            let expected = try imported(text, at: .root, .set, window: window, flat: false, inPlace: false)
            let got = try imported(text, at: .root, .set, window: window, flat: true, inPlace: false)
            #expect(got == expected)
            #expect(got.data.count == 3000 * 4)
            #expect(got.priorities.count == 429)
        }
        // A syntax error at the very end leaves nothing of it, after thousands of rows were written.
        let broken = String(text.dropLast())
        let failed = try imported(broken, at: .root, .set, window: 4096, flat: true, inPlace: false)
        #expect(failed.error?.hasPrefix("invalid_json") == true)
        #expect(failed.data == (try imported("null", at: path("/none"), .set, window: 4096, flat: true, inPlace: false)).data)
    }
}
