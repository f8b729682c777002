import Testing
import RTDBTestSupport
@testable import RTDBCore

/// `JSONReader.flatValue` against `JSONReader.parse` and `Limits.validate`: a value read flat
/// holds exactly the normal form of its text, which is valid; a value it refuses is left to the
/// ordinary path; invalid text fails with the ordinary path's error.
@Suite struct FlatValueTests {
    enum Flat {
        case value(FlatValue)
        case notFlat
        case error(String)
    }

    /// Reads `text` flat, as a value written `depth` keys deep.
    func flat(_ text: String, depth: Int = 0) -> Flat {
        var text = text
        return text.withUTF8 { bytes in
            var r = JSONReader(bytes)
            r.skipSpace()
            var out = FlatValue()
            do {
                try r.flatValue(into: &out, depth: 0, room: Limits.maxDepth - depth)
                r.skipSpace()
                if r.i != r.end { throw r.fail("unexpected text after the JSON value") }
                return .value(out)
            } catch is JSONReader.NotFlat {
                return .notFlat
            } catch let e as RTDBError {
                return .error("\(e.code.rawValue): \(e.message)")
            } catch {
                return .error("\(error)")
            }
        }
    }

    /// What the ordinary path makes of `text`: its valid normal form, or its error.
    func ordinary(_ text: String, depth: Int = 0) -> Result<Node, RTDBError> {
        do {
            let v = try JSONReader.parse(text)
            try Limits.validate(v, at: Path(validatedKeys: Array(repeating: "p", count: depth)))
            return .success(v)
        } catch let e as RTDBError {
            return .failure(e)
        } catch {
            return .failure(RTDBError(.internal, "\(error)"))
        }
    }

    /// Checks one text; returns whether it was read flat.
    @discardableResult
    func check(_ text: String, depth: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let expected = ordinary(text, depth: depth)
        switch flat(text, depth: depth) {
        case .value(let v):
            guard case .success(let node) = expected else {
                Issue.record("read flat, but the ordinary path fails (\(expected)): \(text)", sourceLocation: sourceLocation)
                return true
            }
            #expect(v.node.same(as: node), "\(JSONWriter.string(v.node, export: true)) != \(JSONWriter.string(node, export: true)): \(text)",
                    sourceLocation: sourceLocation)
            #expect(!ServerValues.containsPlaceholder(node), "a server value read flat: \(text)", sourceLocation: sourceLocation)
            return true
        case .error(let message):
            if case .failure(let e) = expected {
                #expect(message == "\(e.code.rawValue): \(e.message)", "\(text)", sourceLocation: sourceLocation)
            } else {
                Issue.record("flat reading fails (\(message)), the ordinary path does not: \(text)", sourceLocation: sourceLocation)
            }
            return false
        case .notFlat:
            return false
        }
    }

    @Test func plainDataIsReadFlatAsItsNormalForm() {
        var docs = JSONDocuments(seed: 1, specials: false)
        var flatCount = 0
        for _ in 0..<400 where check(docs.document()) { flatCount += 1 }
        // Without the special cases every document is flat.
        #expect(flatCount == 400)
    }

    @Test func everyDocumentIsReadFlatOnlyWhenThatIsItsNormalForm() {
        var flatCount = 0, total = 0
        for seed in 0..<8 as Range<UInt64> {
            var docs = JSONDocuments(seed: seed, specials: true)
            for _ in 0..<150 {
                total += 1
                if check(docs.document(), depth: Int(seed % 3) * 14) { flatCount += 1 }
            }
        }
        // Both paths are exercised.
        #expect(flatCount > total / 10 && flatCount < total * 9 / 10, "\(flatCount) of \(total) flat")
    }

    @Test func casesWithRules() {
        // Normal form that flat values keep: nulls and empty nodes go, arrays become objects,
        // a priority stays with a node that holds data, the last `.priority` counts.
        #expect(check(#"{"b":1,"a":{"x":[1,null,3],"e":{},"f":[]},"c":null,"d":{"g":null}}"#))
        #expect(check(#"{"a":{"b":1,".priority":2},"c":{".priority":3},"d":{"e":null,".priority":4}}"#))
        #expect(check(#"{".priority":1,"a":1,".priority":null}"#))
        #expect(check(#"{".priority":"p","x":{"y":"z"}}"#))
        #expect(check(#"[[1,[2,{"q":[null,null]}]],{"b":[]}]"#))
        #expect(check(#"{"10":1,"9":2,"007":3,"-1":4,"a":5,"\uE000":6,"😀":7}"#))
        #expect(check(#""\u00e9\ud83d\ude00\n""#))
        // Refused, for the ordinary path to answer.
        #expect(!check(#"{"a":1,"a":2}"#))
        #expect(!check(#"{"a":1,"b":2,"a":null}"#))
        #expect(!check(#"{"a":{".value":1}}"#))
        #expect(!check(#"{"a":{".sv":"timestamp"}}"#))
        #expect(!check(#"{"a":{"b":1,".priority":true}}"#))
        #expect(!check(#"{"a":{"b":1,".priority":{".sv":"timestamp"}}}"#))
        #expect(!check(#"{"a.b":1}"#))
        #expect(!check(#"{"":1}"#))
        #expect(!check(#"{"a":1e400}"#))
        #expect(!check(#"{"a":{"b":1}}"#, depth: 31))
        #expect(check(#"{"a":1}"#, depth: 31))
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(!check(deep))
        // Wide objects: in key order at any width, out of it up to a limit.
        let ordered = "{" + (0..<100).map { #""k\#(1000 + $0)":\#($0)"# }.joined(separator: ",") + "}"
        #expect(check(ordered))
        let shuffled = "{" + (0..<JSONReader.flatUnorderedMembers).reversed().map { #""k\#(1000 + $0)":\#($0)"# }.joined(separator: ",") + "}"
        #expect(check(shuffled))
        let wider = "{" + (0...JSONReader.flatUnorderedMembers).reversed().map { #""k\#(1000 + $0)":\#($0)"# }.joined(separator: ",") + "}"
        #expect(!check(wider))
        // Invalid text: the ordinary path's error.
        #expect(!check(#"{"a":[1,2,}"#))
        #expect(!check(#"{"a":"\ud800"}"#))
        #expect(!check(#"{"a":01}"#))
        #expect(!check("{\"a\":\"\u{1}\"}"))
        #expect(!check(#"{"a" 1}"#))
    }

    @Test func invalidUTF8IsRefusedAsTheOrdinaryPathRefusesIt() {
        for bytes: [UInt8] in [[0x22, 0xC3, 0x28, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0x5C, 0x6E, 0xFF, 0x22],
                               [0x7B, 0x22, 0xE0, 0x80, 0x80, 0x22, 0x3A, 0x31, 0x7D]] {
            let text = String(decoding: bytes, as: UTF8.self)   // not used for reading: the bytes are
            let flatError: String? = bytes.withUnsafeBufferPointer { b in
                var r = JSONReader(b)
                var out = FlatValue()
                do { try r.flatValue(into: &out, depth: 0, room: 32); return nil } catch let e as RTDBError { return e.message } catch { return "\(error)" }
            }
            let ordinaryError: String? = bytes.withUnsafeBufferPointer { b in
                do { _ = try JSONReader.parse(b); return nil } catch let e as RTDBError { return e.message } catch { return "\(error)" }
            }
            #expect(flatError != nil && flatError == ordinaryError, "\(text)")
        }
    }

    @Test func theUTF8CheckAgreesWithTheStandardLibrary() {
        var random = SeededRandom(7)
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF,
                                    0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF, 0x8F, 0x90, 0x9F, 0xA0]
        for _ in 0..<20_000 {
            let n = random.below(7)
            let bytes = (0..<n).map { _ in random.below(3) == 0 ? UInt8(random.below(256)) : interesting[random.below(interesting.count)] }
            let mine = bytes.withUnsafeBufferPointer { UTF8Check.isValid($0) }
            #expect(mine == (String(validating: bytes, as: UTF8.self) != nil), "\(bytes)")
        }
    }

    @Test func aKeyComparedAsBytesComparesAsAString() {
        let keys = ["a", "b", "0", "7", "07", "10", "-1", "2147483647", "2147483648", "-2147483648", "é", "\u{E000}", "😀", "aa", ""]
        for a in keys {
            for b in keys {
                var x = a, y = b
                let bytes = x.withUTF8 { pa in y.withUTF8 { pb in
                    KeyOrder.compare(bytes: pa, KeyOrder.intValue(bytes: pa), pb, KeyOrder.intValue(bytes: pb))
                } }
                #expect(bytes.signum() == SortableKey.compare(SortableKey(a), SortableKey(b)).signum(), "\(a) \(b)")
            }
        }
    }
}

/// The streaming reader gives a sink that takes flat values the same values, in the same
/// calls, as a sink that takes `Node`s, and fails the same way, through windows of every size.
@Suite struct FlatStreamTests {
    final class FlatRecorder: JSONStreamSink {
        let inner = JSONStreamReaderTests.Recorder()
        var flatValues = 0
        var takesFlatValues: Bool { true }
        func value(_ node: Node, at keys: [String], fresh: Bool) throws { try inner.value(node, at: keys, fresh: fresh) }
        func value(flat: FlatValue, at keys: [String], fresh: Bool) throws {
            flatValues += 1
            try inner.value(flat.node, at: keys, fresh: fresh)
        }
        func beginObject(at keys: [String], fresh: Bool) throws { try inner.beginObject(at: keys, fresh: fresh) }
        func endObject(at keys: [String], priority: Node?) throws { try inner.endObject(at: keys, priority: priority) }
        func beginEntry(_ key: String) throws -> Path { try inner.beginEntry(key) }
        func endEntry() throws { try inner.endEntry() }
    }

    func calls(_ text: String, window: Int, _ sink: JSONStreamSink, _ recorded: () -> [String]) -> [String] {
        do {
            try JSONStreamReader(source: BytesSource(Array(text.utf8)), sink: sink, base: .root, window: window).readValue()
            return recorded()
        } catch let e as RTDBError {
            return recorded() + ["error \(e.code.rawValue): \(e.message)"]
        } catch {
            return ["error \(error)"]
        }
    }

    @Test func flatAndNodeSinksSeeTheSameCalls() {
        var flatValues = 0
        for seed in 0..<6 as Range<UInt64> {
            var docs = JSONDocuments(seed: 100 + seed, specials: seed % 2 == 1)
            for _ in 0..<60 {
                let text = docs.document()
                for window in [24, 96, 1 << 16] {
                    let node = JSONStreamReaderTests.Recorder()
                    let flat = FlatRecorder()
                    let expected = calls(text, window: window, node) { node.calls }
                    let got = calls(text, window: window, flat) { flat.inner.calls }
                    // After a problem with the data the sink is no longer called: the calls
                    // before it, and the error, must agree.
                    #expect(got == expected, "window \(window): \(text)")
                    flatValues += flat.flatValues
                }
            }
        }
        #expect(flatValues > 1000)
    }
}
