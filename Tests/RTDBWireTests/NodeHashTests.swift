import Testing
import RTDBCore
@testable import RTDBWire

func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
}

func node(_ json: String) -> Node {
    (try? JSONReader.parse(json)) ?? .string("<<invalid test JSON>>")
}

@Suite("SHA-1, base64 and the node hash")
struct NodeHashTests {
    @Test("FIPS 180 / RFC 3174 SHA-1 vectors", arguments: [
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "a49b2446a02c645bf419f995b67091253a04a259"),
        ("The quick brown fox jumps over the lazy dog", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
    ])
    func sha1(input: String, digest: String) {
        #expect(hex(SHA1.digest(Array(input.utf8))) == digest)
    }

    @Test("SHA-1 of a million 'a' (RFC 3174 test 3), fed in uneven pieces")
    func sha1Million() {
        var s = SHA1()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 999)
        var left = 1_000_000
        while left > 0 {
            let n = min(left, piece.count)
            s.update(piece[..<n])
            left -= n
        }
        #expect(hex(s.finish()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test("SHA-1 around the padding boundary (55, 56, 63, 64, 65 bytes) matches one-shot and split input")
    func sha1Boundaries() {
        for n in [55, 56, 57, 63, 64, 65, 119, 120] {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            var s = SHA1()
            for b in bytes { s.update([b]) }
            #expect(s.finish() == SHA1.digest(bytes), "length \(n)")
        }
        // Known vector: 64 bytes of "a".
        #expect(hex(SHA1.digest([UInt8](repeating: 0x61, count: 64))) == "0098ba824b5c16427bd7a1122a5a442a25ec644d")
    }

    @Test("base64 (RFC 4648 vectors)", arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func base64(input: String, output: String) {
        #expect(Base64.encode(Array(input.utf8)) == output)
    }

    @Test("the spec's node hash vectors", arguments: [
        ("true", "E5z61QM0lN/U2WsOnusszCTkR8M="),
        ("2", "WtSt2Xo3L0JtPuArzQHofPrZOuU="),
        ("\"hi\"", "jrODRP7VX0SYea22x77RsWRrgcQ="),
        ("5", "w28swksk9+tXf5jEdS9R5oSFAv8="),
        ("{\"b\":1}", "lUwqxaYTHjA4XN/UJjS/cI8JKaM="),
        ("\"z\"", "spma6tfW0Nl5KpHLWlVJbGOveJM="),
        ("{\"k1\":{\"x\":1},\"k2\":{\"x\":2},\"k3\":{\"x\":3}}", "ECp3q7JbtQjhn1L9BjpfrCAYaxU="),
        ("4", "eVih19a6ZDz3NL32uVBtg9KSgQY="),
        ("4.5623", "vf1CL0tIRwXXunHcG/irRECk3lY="),
        ("\"hey guys\"", "CUNLXWpCVoJE6z7z1vE57lGaKAU="),
        ("{\"intNode\":4,\"doubleNode\":4.5623,\"stringNode\":\"hey guys\",\"boolNode\":true}", "6Mc4jFmNdrLVIlJJjz2/MakTK9I="),
        ("null", ""),
        ("{}", ""),
        // Priorities (stored now): the worked example and node.test.ts's priority vectors.
        ("{\"x\":true,\".priority\":1}", "Dgk4rSu8KpUWWLzlIbm/0uQBhnc="),
        ("{\"b\":2,\"a\":{\"x\":true,\".priority\":1},\"c\":\"hi\"}", "R/xDVVp858adWjAA0+ZbtSX2Wc8="),
        ("{\"root\":{\"c\":{\".value\":99,\".priority\":\"abc\"},\".priority\":\"def\"}}", "Fm6tzN4CVEu5WxFDZUdTtqbTVaA="),
        ("{\"root\":{\"c\":{\".value\":99,\".priority\":42},\".priority\":3.14}}", "B15QCqrzCxrI5zz1y00arWqFRFg="),
    ])
    func vectors(json: String, hash: String) {
        #expect(NodeHash.hash(node(json)) == hash)
    }

    @Test("canonical strings: integers hash as doubles, exact bits, -0 keeps its sign")
    func canonical() {
        func canon(_ n: Node) -> String {
            var out: [UInt8] = []
            _ = NodeHash.canonical(n, into: &out)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(canon(.int(1)) == "number:3ff0000000000000")
        #expect(canon(.double(1)) == "number:3ff0000000000000")
        #expect(NodeHash.hash(.int(4)) == NodeHash.hash(.double(4)))
        #expect(canon(.int(9_007_199_254_740_991)) == "number:433fffffffffffff")
        #expect(canon(.double(-0.0)) == "number:8000000000000000")
        #expect(canon(.bool(false)) == "boolean:false")
        #expect(canon(node("{\"b\":2,\"a\":\"x\"}")) == ":a:\(NodeHash.hash(.string("x"))):b:\(NodeHash.hash(.int(2)))")
        // Priority prefixes, and children in priority order (no priority, numbers, strings).
        #expect(canon(node("{\"x\":true,\".priority\":1}")) == "priority:number:3ff0000000000000::x:E5z61QM0lN/U2WsOnusszCTkR8M=")
        #expect(canon(node("{\".value\":\"hi\",\".priority\":\"p\"}")) == "priority:string:p:string:hi")
        let ordered = node("{\"a\":{\".value\":1,\".priority\":\"s\"},\"b\":{\".value\":1,\".priority\":2},\"c\":1}")
        let keys = canon(ordered).split(separator: ":").enumerated().filter { $0.offset % 2 == 0 }.map { String($0.element) }
        #expect(keys == ["c", "b", "a"])
    }

    @Test("ETags: the hash, null_etag for null; matching accepts quotes, weak tags, lists and *")
    func etags() {
        let v = node("{\"b\":1}")
        #expect(ETag.of(v) == "lUwqxaYTHjA4XN/UJjS/cI8JKaM=")
        #expect(ETag.of(.null) == "null_etag")
        #expect(ETag.matches("lUwqxaYTHjA4XN/UJjS/cI8JKaM=", v))
        #expect(ETag.matches("\"lUwqxaYTHjA4XN/UJjS/cI8JKaM=\"", v))
        #expect(ETag.matches("W/\"lUwqxaYTHjA4XN/UJjS/cI8JKaM=\"", v))
        #expect(ETag.matches("abc, lUwqxaYTHjA4XN/UJjS/cI8JKaM=", v))
        #expect(!ETag.matches("abc", v))
        #expect(!ETag.matches("null_etag", v))
        #expect(ETag.matches("null_etag", .null))
        #expect(ETag.matches("*", v))
        #expect(!ETag.matches("*", .null))
    }
}
