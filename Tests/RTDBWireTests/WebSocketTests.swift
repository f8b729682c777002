import Testing
@testable import RTDBWire

/// Bytes of a frame as a client sends it: masked with `key`.
private func clientFrame(_ first: UInt8, _ payload: [UInt8], key: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]) -> [UInt8] {
    var out: [UInt8] = [first]
    let n = payload.count
    if n < 126 {
        out.append(0x80 | UInt8(n))
    } else if n <= 0xFFFF {
        out += [0x80 | 126, UInt8(n >> 8), UInt8(n & 0xFF)]
    } else {
        out.append(0x80 | 127)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(n) >> UInt64(shift)) & 0xFF)) }
    }
    out += key
    for (i, b) in payload.enumerated() { out.append(b ^ key[i & 3]) }
    return out
}

/// Everything a parser yields for `bytes`, or the protocol error that ended it.
private func wsParse(_ bytes: [UInt8], server: Bool = true, limit: Int = 16 << 20) -> (messages: [(WebSocket.Opcode, [UInt8])], error: WebSocket.ProtocolError?) {
    var p = WebSocket.Parser(maxMessageBytes: limit, expectMasked: server)
    p.append(bytes)
    var out: [(WebSocket.Opcode, [UInt8])] = []
    do {
        while let m = try p.next() { out.append((m.opcode, m.payload)) }
    } catch let e as WebSocket.ProtocolError {
        return (out, e)
    } catch {
        return (out, WebSocket.ProtocolError(code: 0, reason: "unexpected \(error)"))
    }
    return (out, nil)
}

private let hello = Array("Hello".utf8)

@Suite("WebSocket framing (RFC 6455)")
struct WebSocketTests {
    @Test("the accept value of RFC 6455's example key, with surrounding spaces ignored")
    func accept() {
        #expect(WebSocket.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(WebSocket.acceptValue(forKey: " dGhlIHNhbXBsZSBub25jZQ==\t") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test("RFC 6455 §5.7: unmasked and masked \"Hello\", an unmasked ping")
    func rfcExamples() {
        #expect(WebSocket.frame(.text, hello) == [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f])
        let masked: [UInt8] = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        #expect(WebSocket.frame(.text, hello, mask: (0x37, 0xfa, 0x21, 0x3d)) == masked)
        #expect(WebSocket.frame(.ping, hello) == [0x89, 0x05] + hello)

        let server = wsParse(masked)
        #expect(server.error == nil)
        #expect(server.messages.count == 1)
        #expect(server.messages.first?.0 == .text)
        #expect(server.messages.first?.1 == hello)

        // A client reads the unmasked forms, including RFC 6455 §5.7's fragmented "Hel" + "lo".
        let client = wsParse([0x81, 0x05] + hello + [0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f], server: false)
        #expect(client.error == nil)
        #expect(client.messages.map { $0.1 } == [hello, hello])
    }

    @Test("7-, 16- and 64-bit lengths: header bytes out, payload back in", arguments: [
        (0, [0x82, 0x00] as [UInt8]),
        (125, [0x82, 125]),
        (126, [0x82, 126, 0x00, 126]),
        (256, [0x82, 126, 0x01, 0x00]),
        (65_535, [0x82, 126, 0xFF, 0xFF]),
        (65_536, [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00]),
        (70_000, [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70]),
    ])
    func lengths(n: Int, header: [UInt8]) {
        let payload = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let out = WebSocket.frame(.binary, payload)
        #expect(Array(out.prefix(header.count)) == header)
        #expect(out.count == header.count + n)
        let back = wsParse(clientFrame(0x82, payload))
        #expect(back.error == nil)
        #expect(back.messages.count == 1)
        #expect(back.messages.first?.1 == payload)
        // The server's own encoder, masked, gives the same bytes as the reference encoder.
        #expect(WebSocket.frame(.binary, payload, mask: (0x37, 0xfa, 0x21, 0x3d)) == clientFrame(0x82, payload))
    }

    @Test("frames split at every byte, and fed one byte at a time, give the same messages")
    func everySplit() throws {
        let long = Array(repeating: UInt8(ascii: "x"), count: 300)
        let stream = clientFrame(0x81, hello) + clientFrame(0x89, Array("p".utf8)) + clientFrame(0x81, long, key: [1, 2, 3, 4])
            + clientFrame(0x82, [])
        for cut in 0...stream.count {
            var p = WebSocket.Parser()
            var got: [[UInt8]] = []
            p.append(Array(stream[..<cut]))
            while let m = try p.next() { got.append(m.payload) }
            p.append(Array(stream[cut...]))
            while let m = try p.next() { got.append(m.payload) }
            #expect(got == [hello, Array("p".utf8), long, []], "cut at \(cut)")
        }
        var p = WebSocket.Parser()
        var opcodes: [WebSocket.Opcode] = []
        for b in stream {
            p.append([b])
            while let m = try p.next() { opcodes.append(m.opcode) }
        }
        #expect(opcodes == [.text, .ping, .text, .binary])
    }

    @Test("a fragmented message is joined; control frames between its fragments come out first")
    func fragmentation() {
        let bytes = clientFrame(0x01, Array("Hel".utf8)) + clientFrame(0x89, Array("ping".utf8))
            + clientFrame(0x00, Array("l".utf8)) + clientFrame(0x8A, []) + clientFrame(0x88, [0x03, 0xE8])
            + clientFrame(0x80, Array("o".utf8))
        let r = wsParse(bytes)
        #expect(r.error == nil)
        #expect(r.messages.map { $0.0 } == [WebSocket.Opcode.ping, .pong, .close, .text])
        #expect(r.messages.last?.1 == hello)
        #expect(r.messages.first?.1 == Array("ping".utf8))
        #expect(r.messages[2].1 == [0x03, 0xE8])
    }

    @Test("protocol errors close with the right code", arguments: [
        ("an unmasked client frame", [0x81, 0x05] + hello, UInt16(1002)),
        ("RSV1 set", clientFrame(0xC1, hello), 1002),
        ("RSV2 set", clientFrame(0xA1, hello), 1002),
        ("RSV3 set", clientFrame(0x91, hello), 1002),
        ("opcode 3", clientFrame(0x83, hello), 1002),
        ("opcode 0xB", clientFrame(0x8B, hello), 1002),
        ("a ping of 126 bytes", clientFrame(0x89, Array(repeating: 0, count: 126)), 1002),
        ("a fragmented ping", clientFrame(0x09, hello), 1002),
        ("a fragmented close", clientFrame(0x08, [0x03, 0xE8]), 1002),
        ("a continuation without a message", clientFrame(0x80, hello), 1002),
        ("a new message inside a fragmented one", clientFrame(0x01, hello) + clientFrame(0x81, hello), 1002),
        ("a 64-bit length with the top bit set", [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4], 1002),
    ] as [(String, [UInt8], UInt16)])
    func errors(name: String, bytes: [UInt8], code: UInt16) {
        let r = wsParse(bytes)
        #expect(r.error?.code == code, "\(name)")
        #expect(r.messages.isEmpty, "\(name)")
    }

    @Test("a client parser refuses masked server frames")
    func maskedFromServer() {
        #expect(wsParse(clientFrame(0x81, hello), server: false).error?.code == 1002)
    }

    @Test("a message over the limit is refused with 1009: one frame, its header alone, or its fragments")
    func tooBig() {
        let limit = 100
        #expect(wsParse(clientFrame(0x81, Array(repeating: 0x61, count: 101)), limit: limit).error?.code == 1009)
        #expect(wsParse(clientFrame(0x81, Array(repeating: 0x61, count: 100)), limit: limit).error == nil)
        // The declared length is enough: the payload need not arrive.
        #expect(wsParse([0x81, 0xFF, 0, 0, 0, 0x10, 0, 0, 0, 0], limit: limit).error?.code == 1009)
        let fragments = clientFrame(0x01, Array(repeating: 0x61, count: 60)) + clientFrame(0x80, Array(repeating: 0x61, count: 60))
        let r = wsParse(fragments, limit: limit)
        #expect(r.error?.code == 1009)
        #expect(r.messages.isEmpty)
    }

    @Test("after a protocol error the parser keeps failing, whatever comes next")
    func sticky() {
        var p = WebSocket.Parser()
        p.append([0x81, 0x05] + hello)
        #expect(throws: WebSocket.ProtocolError.self) { try p.next() }
        p.append(clientFrame(0x81, hello))
        #expect(throws: WebSocket.ProtocolError.self) { try p.next() }
    }

    @Test("close frames carry the code big-endian and a reason cut to 120 bytes")
    func closeFrames() {
        #expect(WebSocket.closeFrame(1002) == [0x88, 0x02, 0x03, 0xEA])
        #expect(WebSocket.closeFrame(1000, "bye") == [0x88, 0x05, 0x03, 0xE8] + Array("bye".utf8))
        let long = WebSocket.closeFrame(1009, String(repeating: "x", count: 300))
        #expect(long[1] == 122)
        #expect(long.count == 124)
    }

    @Test("a large buffer is compacted without losing frames")
    func compaction() throws {
        var p = WebSocket.Parser()
        let payload = Array(repeating: UInt8(ascii: "y"), count: 40_000)
        var count = 0
        for _ in 0..<5 {
            p.append(clientFrame(0x81, payload) + Array(clientFrame(0x81, hello).prefix(3)))
            while let m = try p.next() {
                count += 1
                #expect(m.payload == payload || m.payload == hello)
            }
            p.append(Array(clientFrame(0x81, hello).dropFirst(3)))
            while let m = try p.next() { count += 1; #expect(m.payload == hello) }
        }
        #expect(count == 10)
    }
}
