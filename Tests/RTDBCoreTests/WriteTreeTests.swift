import Testing
@testable import RTDBCore

/// Pending writes layered over a base (WriteTree.swift): when an estimated increment stands
/// on a number nobody knows.
@Suite("WriteTree")
struct WriteTreeTests {
    static func write(_ id: Int64, _ path: String, _ value: String) throws -> WriteTree.Write {
        WriteTree.Write(id: id, sets: [(try Path(path), try node(value))])
    }

    static let increment = #"{".sv":{"increment":1}}"#

    /// Each row: the writes (read at /c), the base (what the cache holds at /c), which of its
    /// children it knows (nil: all of it), whether the estimate stands on an unknown base, and
    /// the value.
    static let cases: [(writes: [(String, String)], base: String, known: [String]?, unknown: Bool, value: String)] = [
        ([("/c", increment)], "5", nil, false, "6"),                                      // the base holds /c = 5
        ([("/c", increment)], "null", [], true, "1"),                                     // nothing known: the increment alone
        ([("/c", "10"), ("/c", increment)], "null", [], false, "11"),                     // an earlier write set it
        ([("/c/n", increment)], #"{"n":7}"#, ["n"], false, #"{"n":8}"#),                  // the child is known
        ([("/c/m", increment)], #"{"n":7}"#, ["n"], true, #"{"n":7,"m":1}"#),             // this child is not
        ([("/c", #"{"t":{".sv":"timestamp"}}"#)], "null", [], false, #"{"t":42}"#),       // a timestamp stands on nothing
        ([("/", #"{"c":5,"x":{".sv":{"increment":1}}}"#)], "null", [], false, "5"),       // outside the value read
    ]

    @Test("an increment on an unknown base is noted", arguments: cases.indices)
    func unknownBase(_ i: Int) throws {
        let c = WriteTreeTests.cases[i]
        let writes = try c.writes.enumerated().map { try WriteTreeTests.write(Int64($0.offset + 1), $0.element.0, $0.element.1) }
        let layered = WriteTree.layer(try node(c.base), at: try Path("/c"), writes: writes, now: 42) { rel in
            c.known.map { known in rel.keys.first.map { known.contains($0) } ?? false } ?? true
        }
        #expect(layered.unknownBase == c.unknown, "case \(i)")
        #expect(layered.value.same(as: try node(c.value)), "case \(i): \(JSONWriter.string(layered.value))")
    }
}
