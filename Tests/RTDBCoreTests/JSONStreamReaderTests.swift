import Testing
@testable import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The streaming reader's own behaviour, apart from the engine: what it hands a sink for the
/// same text through windows of every size, and the byte sources it reads.
@Suite struct JSONStreamReaderTests {
    /// Records the calls as text.
    final class Recorder: JSONStreamSink {
        var calls: [String] = []
        func value(_ node: Node, at keys: [String], fresh: Bool) throws {
            calls.append("value /\(keys.joined(separator: "/")) \(JSONWriter.string(node, export: true))\(fresh ? "" : " again")")
        }
        func beginObject(at keys: [String], fresh: Bool) throws { calls.append("begin /\(keys.joined(separator: "/"))\(fresh ? "" : " again")") }
        func endObject(at keys: [String], priority: Node?) throws {
            calls.append("end /\(keys.joined(separator: "/"))" + (priority.map { " " + JSONWriter.string($0) } ?? ""))
        }
        func beginEntry(_ key: String) throws -> Path { calls.append("entry \(key)"); return try Path(key) }
        func endEntry() throws { calls.append("entry end") }
    }

    func read(_ text: String, window: Int) throws -> [String] {
        let r = Recorder()
        try JSONStreamReader(source: BytesSource(Array(text.utf8)), sink: r, base: .root, window: window).readValue()
        return r.calls
    }

    @Test func aValueThatFitsIsHandedWhole() throws {
        #expect(try read(#"{"b":[1,2],"a":{".value":1,".priority":2}}"#, window: 1 << 16)
                == [#"value / {"a":{".value":1,".priority":2},"b":{"0":1,"1":2}}"#])
    }

    @Test func aLargerObjectIsWalkedKeyByKey() throws {
        // A key that does not come after the one before it may repeat an earlier one: "again".
        let calls = try read(#"{"a":{"x":1},"b":[1,2],"a":{"y":2},".priority":"p"}"#, window: 16)
        #expect(calls == ["begin /", #"value /a {"x":1}"#, #"value /b {"0":1,"1":2}"#, #"value /a {"y":2} again"#, #"end / "p""#])
    }

    @Test func numbersCutByTheWindowAreReadWhole() throws {
        // Every window size puts the end of the window somewhere inside a number once.
        for w in 16...40 {
            let calls = try read(#"{"a":123456789012,"b":-1.25e-3,"c":[true,false,null]}"#, window: w)
            #expect(calls.contains(#"value /a 123456789012"#), "window \(w): \(calls)")
            #expect(calls.contains(#"value /b -0.00125"#), "window \(w): \(calls)")
        }
    }

    /// A streamed reader drops what it has read: lines and columns are still counted from the
    /// start of the input, through windows of every size, as the whole-text reader counts them.
    @Test func syntaxErrorsHaveTheSamePlaceThroughEveryWindow() throws {
        let texts = [
            "{\n  \"name\": \"é\u{1F600}\",\n  \"tags\": [\"a\", \"b\",],\n  \"n\": 1\n}",
            "{\"a\": {\"b\": [1, 2, 3],\n\"c\": {\"d\": \"str\"}},\r\n\"x\": nul}",
            "[\n" + String(repeating: "  {\"k\": \"vvvvvvvv\"},\n", count: 20) + "  {\"k\": 1,}\n]",
        ]
        for text in texts {
            var expected: String? = nil
            do { _ = try JSONReader.parse(text) } catch let e as RTDBError { expected = e.message }
            let wanted = try #require(expected, "\(text) should not read")
            #expect(wanted.contains("(line "), "\(wanted)")
            for window in 16...80 {
                do {
                    _ = try read(text, window: window)
                    Issue.record("window \(window): read")
                } catch let e as RTDBError {
                    #expect(e.message == wanted, "window \(window)")
                }
            }
        }
    }

    func readInPlace(_ text: String, wholeLimit: Int) throws -> [String] {
        let r = Recorder()
        var t = text
        try t.withUTF8 { try JSONStreamReader(borrowing: $0, sink: r, base: .root, wholeLimit: wholeLimit).readValue() }
        return r.calls
    }

    @Test func aDocumentReadInPlaceIsHandedAsThroughAWindowOfItsLimit() throws {
        for text in [#"{"a":{"x":1},"b":[1,2],"a":{"y":2},".priority":"p"}"#, #"[{"k":"v"},{"k":"w"},null,3]"#,
                     #"{"n":{"m":{"o":123456789012}},"z":true}"#] {
            let inPlace = try readInPlace(text, wholeLimit: 16)
            #expect(inPlace == (try read(text, window: 16)), "\(text)")
            #expect(inPlace.first == "begin /", "\(text): walked, not read whole")
        }
    }

    @Test func aStringPastTheLimitForValuesIsStillReadWholeInPlace() throws {
        let calls = try readInPlace(#"{"s":"\#(String(repeating: "x", count: 100))","t":1}"#, wholeLimit: 16)
        #expect(calls == ["begin /", #"value /s "\#(String(repeating: "x", count: 100))""#, "value /t 1", "end /"])
    }

    @Test func aDescriptorSourceReadsItsPrefixThenTheRestAndSkipsAByteOrderMark() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        // Close-on-exec: a process another test starts meanwhile must not hold the write end
        // open past its close (the read below would then never see the end).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let rest: [UInt8] = Array(#"2,3]"#.utf8)
        _ = rest.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        close(fds[1])
        defer { close(fds[0]) }
        let source = DescriptorSource(fd: fds[0], what: "pipe", prefix: [0xEF, 0xBB, 0xBF] + Array("[1,".utf8))
        let r = Recorder()
        try JSONStreamReader(source: source, sink: r, base: .root, window: 16).readValue()
        #expect(r.calls == [#"value / {"0":1,"1":2,"2":3}"#])
    }
}
