import Testing
import RTDBTestSupport
@testable import RTDBCore

/// `BracketScan` finds the end of an object or array exactly where the reader does, so that the
/// streaming reader walks a value at once only when it is larger than its window.
@Suite struct BracketScanTests {
    func closes(_ text: String) -> Bool {
        var t = text
        return t.withUTF8 { BracketScan.closes(within: $0) }
    }

    @Test func bracketsInStringsAndEscapesDoNotCount() {
        #expect(closes(#"{"a":"}","b":"\"}\\"}"#))
        #expect(!closes(#"{"a":"}","b":"\"}\\""#))
        #expect(closes(#"[[],{},"]",["\\"]]"#))
        #expect(!closes(#"[[],{},"]",["\\"]"#))
        #expect(!closes(#"{"a":"\"#))
        #expect(!closes("{"))
    }

    @Test func itClosesAtTheLastByteOfEveryValidDocumentAndNotBefore() throws {
        var docs = JSONDocuments(seed: 5, specials: false)
        var checked = 0
        for _ in 0..<300 {
            let text = docs.document()
            let space: Set<UInt8> = [0x20, 0x0A, 0x09, 0x0D]
            var bytes = Array(text.utf8.drop(while: { space.contains($0) }))
            while let last = bytes.last, space.contains(last) { bytes.removeLast() }
            guard let first = bytes.first, first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { continue }
            try bytes.withUnsafeBufferPointer { all in
                // The reader's own idea of where the value ends.
                var r = JSONReader(all)
                _ = try r.value(depth: 0)
                #expect(r.i == all.count)
                #expect(BracketScan.closes(within: all), "\(text)")
                #expect(!BracketScan.closes(within: UnsafeBufferPointer(rebasing: all[..<(all.count - 1)])), "\(text)")
            }
            checked += 1
        }
        #expect(checked > 200)
    }
}
