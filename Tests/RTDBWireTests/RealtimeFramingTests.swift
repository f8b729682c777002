import Testing
@testable import RTDBWire

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Feeds frames to an assembler, returning what each one gave (messages as text).
private func assemble(_ frames: [String], _ a: inout RealtimeFraming.Assembler) throws -> [String] {
    var out: [String] = []
    for f in frames {
        switch try a.receive(bytes(f)) {
        case .message(let m): out.append("message:" + String(decoding: m, as: UTF8.self))
        case .keepAlive: out.append("keepalive")
        case .none: out.append("-")
        }
    }
    return out
}

@Suite("Realtime message splitting")
struct RealtimeFramingTests {
    @Test("messages up to 16,384 UTF-16 units go as they are", arguments: [0, 1, 100, 16_383, 16_384])
    func unsplit(n: Int) {
        let m = String(repeating: "a", count: n)
        #expect(RealtimeFraming.frames(m) == [m])
    }

    @Test("the spec's 20 KB set: a count of 2, 16,384 units, then the rest")
    func twentyKB() {
        let head = #"{"t":"d","d":{"r":13,"a":"p","b":{"p":"/big","d":""#
        let tail = #""}}}"#
        let m = head + String(repeating: "x", count: 20_054 - head.utf16.count - tail.utf16.count) + tail
        #expect(m.utf16.count == 20_054)
        let f = RealtimeFraming.frames(m)
        #expect(f.count == 3)
        #expect(f.first == "2")
        #expect(f.dropFirst().map { $0.utf16.count } == [16_384, 3_670])
        #expect(f[1].hasPrefix(#"{"t":"d","d":{"r":13,"a":"p""#))
        #expect(f.dropFirst().joined() == m)
    }

    @Test("counts: exact multiples and one unit over", arguments: [
        (16_385, ["2"], [16_384, 1]),
        (32_768, ["2"], [16_384, 16_384]),
        (32_769, ["3"], [16_384, 16_384, 1]),
        (16_384 * 10, ["10"], Array(repeating: 16_384, count: 10)),
    ])
    func counts(n: Int, count: [String], sizes: [Int]) {
        let f = RealtimeFraming.frames(String(repeating: "b", count: n))
        #expect(Array(f.prefix(1)) == count)
        #expect(f.dropFirst().map { $0.utf16.count } == sizes)
    }

    @Test("cuts fall between Unicode scalars: a surrogate pair at the boundary moves whole to the next piece")
    func scalars() {
        let emoji = "\u{1F600}"   // two UTF-16 units, four UTF-8 bytes
        let m = String(repeating: "a", count: 16_383) + emoji + "b" + String(repeating: "é", count: 20_000)
        let f = RealtimeFraming.frames(m)
        #expect(f.first == String(f.count - 1))
        #expect(f[1].utf16.count == 16_383)
        #expect(f[2].hasPrefix(emoji + "b"))
        for piece in f.dropFirst() {
            #expect(piece.utf16.count <= RealtimeFraming.maxFrameUnits)
            #expect(String(validating: Array(piece.utf8), as: UTF8.self) != nil)
        }
        #expect(f.dropFirst().joined() == m)
        // Units, not bytes: 16,384 two-byte characters still fit one frame.
        let wide = String(repeating: "é", count: 16_384)
        #expect(RealtimeFraming.frames(wide) == [wide])
    }

    @Test("reassembly: whole messages, keep-alives, counts then pieces, a count of 1")
    func reassembly() throws {
        var a = RealtimeFraming.Assembler()
        #expect(try assemble([#"{"t":"c"}"#, "0", "2", "{\"a\":", "1}", "00", "1", "{}", "3", "[", "1", "]"], &a) == [
            #"message:{"t":"c"}"#, "keepalive", "-", "-", #"message:{"a":1}"#, "keepalive", "-", "message:{}",
            "-", "-", "-", "message:[1]",
        ])
    }

    @Test("what is not a count is a message: negative, over six characters, not a number")
    func notCounts() throws {
        var a = RealtimeFraming.Assembler()
        #expect(try assemble(["-1", "1234567", "x", "", "1.5"], &a) == [
            "message:-1", "message:1234567", "message:x", "message:", "message:1.5",
        ])
    }

    @Test("while pieces are awaited every frame is a piece, even one that looks like a count")
    func piecesAreData() throws {
        var a = RealtimeFraming.Assembler()
        #expect(try assemble(["3", "0", "2", "5"], &a) == ["-", "-", "-", "message:025"])
    }

    @Test("too many pieces or too many bytes are refused")
    func limits() throws {
        var a = RealtimeFraming.Assembler()
        #expect(throws: RealtimeFraming.Assembler.TooLarge.self) { try a.receive(bytes("10000")) }
        var b = RealtimeFraming.Assembler()
        #expect(try b.receive(bytes("9999")) == .none)
        var c = RealtimeFraming.Assembler(maxMessageBytes: 10)
        #expect(try c.receive(bytes("3")) == .none)
        #expect(try c.receive(bytes("123456")) == .none)
        #expect(throws: RealtimeFraming.Assembler.TooLarge.self) { try c.receive(bytes("12345")) }
    }

    @Test("split then reassembled gives the message back", arguments: [10, 16_385, 50_000, 100_001])
    func roundTrip(n: Int) throws {
        let m = String((0..<n).map { i in i % 7 == 0 ? "ß" : "q" })
        var a = RealtimeFraming.Assembler()
        var got: [UInt8]? = nil
        for f in RealtimeFraming.frames(m) {
            if case .message(let b) = try a.receive(bytes(f)) { got = b }
        }
        #expect(got == bytes(m))
    }
}
