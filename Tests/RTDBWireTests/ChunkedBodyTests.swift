import Testing
@testable import RTDBWire

/// Runs the decoder over `text` fed `step` bytes at a time; the body, the trailer text and
/// the failure, if any.
private func decode(_ text: String, step: Int = 1_000_000, maxBody: Int = 1 << 20, maxTrailers: Int = 1024)
    -> (body: String, trailers: String?, failure: ChunkedDecoder.Failure?, rest: String) {
    var d = ChunkedDecoder(maxBodyBytes: maxBody, maxTrailerBytes: maxTrailers)
    let all = Array(text.utf8)
    var buffer: [UInt8] = []
    var start = 0
    var body: [UInt8] = []
    var fed = 0
    while true {
        do {
            if case .complete(let t) = try d.decode(buffer, from: &start, into: &body) {
                return (String(decoding: body, as: UTF8.self), String(decoding: buffer[t], as: UTF8.self), nil,
                        String(decoding: buffer[start...], as: UTF8.self) + String(decoding: all[fed...], as: UTF8.self))
            }
        } catch {
            return (String(decoding: body, as: UTF8.self), nil, error, "")
        }
        if fed == all.count { return (String(decoding: body, as: UTF8.self), nil, nil, "") }
        let n = min(step, all.count - fed)
        buffer += all[fed..<(fed + n)]
        fed += n
    }
}

@Suite("The chunked transfer coding, shared by requests and responses (RFC 9112 §7.1)")
struct ChunkedBodyTests {
    @Test("sizes, extensions, bare LF line ends and trailers, fed in any split", arguments: [1, 2, 3, 7, 1000])
    func decodes(step: Int) {
        let text = "5\r\n{\"a\":\r\n3;ext=1\r\n123\r\n1A\n" + String(repeating: "z", count: 26) + "\n0\r\nX-T: yes\r\n\r\nNEXT"
        let r = decode(text, step: step)
        #expect(r.failure == nil)
        #expect(r.body == "{\"a\":123" + String(repeating: "z", count: 26))
        #expect(r.trailers == "X-T: yes\r\n")
        #expect(r.rest == "NEXT")
    }

    @Test("no trailer fields: the section is one empty line", arguments: ["0\r\n\r\n", "0\n\n"])
    func emptyTrailers(text: String) {
        let r = decode("2\r\nok\r\n" + text, step: 1)
        #expect(r.body == "ok")
        #expect(r.trailers == "")
        #expect(r.failure == nil)
    }

    @Test("hostile input: each refusal names what was wrong", arguments: [
        ("zz\r\n", ChunkedDecoder.Failure.invalidSize),
        ("\r\n", .invalidSize),
        ("2 x\r\n", .invalidSize),
        ("2;a\u{1}b\r\n", .invalidExtension),
        ("2\r\nabc\r\n", .dataLongerThanSize),
        ("2\r\nab\rx", .dataNotFollowedByCRLF),
        ("FFFFFFFFFFFFFFFFFFFF\r\n", .bodyTooLarge(limit: 1 << 20)),
        ("1;" + String(repeating: "e", count: 5000), .sizeLineTooLong(limit: 4096)),
        ("0\r\nX: " + String(repeating: "a", count: 2000), .trailersTooLong(limit: 1024)),
    ])
    func refusals(text: String, failure: ChunkedDecoder.Failure) {
        #expect(decode(text).failure == failure)
        #expect(decode(text, step: 1).failure == failure)
    }

    @Test("the size limit counts the whole body, checked at each chunk size before its data")
    func runningLimit() {
        #expect(decode("6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n", maxBody: 10).body == "0123456789")
        let over = decode("6\r\n012345\r\n5\r\n", maxBody: 10)
        #expect(over.failure == .bodyTooLarge(limit: 10))
        #expect(over.body == "012345")
    }

    @Test("an unbounded decoder (a stream) still refuses a size that overflows")
    func overflow() {
        #expect(decode("8000000000000000\r\n", maxBody: Int.max).failure == .bodyTooLarge(limit: Int.max))
        #expect(decode("7\r\nabcdefg\r\n0\r\n\r\n", maxBody: Int.max).body == "abcdefg")
    }
}
