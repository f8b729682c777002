import Foundation
import Testing

/// `push --lines` in bounded memory however many lines: on the database file one transaction
/// fed line by line (the lines to print wait in a temporary file until it commits); through
/// --url every line checked first, then writes of about 1 MiB, halved when the server refuses
/// one for its size. Peak memory is measured with GNU time (BoundedInputTests.swift).
@Suite(.enabled(if: PeakMemory.available, "GNU time (/usr/bin/time) is needed to measure peak memory; run scripts/install-test-tools"))
struct PushLinesStreamTests {
    /// `n` lines of small objects, made by awk (about 40 bytes each).
    static func generator(_ n: Int, from first: Int = 1) -> String {
        "awk 'BEGIN { for (i = \(first); i < \(first + n); i++) printf \"{\\\"n\\\":%d,\\\"text\\\":\\\"item %d\\\"}\\n\", i, i }'"
    }

    /// Held whole, 100,000 lines took 72 MB (1.5 million: 994 MB); streamed, about 23 MB, and
    /// the peak does not grow with the lines.
    static let lines = 100_000
    static let bound = 40 * 1024 * 1024

    @Test func manyLinesIntoTheFileStayWithinABoundAndPrintEveryLine() throws {
        let sb = Sandbox()
        sb.seed("/items", #"{"old":true}"#)
        let (r, peak) = PeakMemory.run(sb, PushLinesStreamTests.generator(PushLinesStreamTests.lines)
                                       + " | $MEASURE \"$RTDB\" push /items --lines > '\(sb.dir)/out'", timeout: 300)
        #expect(r.status == 0, "\(r)")
        let p = try #require(peak)
        #expect(p <= PushLinesStreamTests.bound, "peak memory \(p / 1024 / 1024) MiB")
        // A line per item, in order, each as stored.
        let out = try String(contentsOfFile: sb.dir + "/out", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(out.count == PushLinesStreamTests.lines)
        let first = try #require(object(out.first ?? ""))
        let last = try #require(object(out.last ?? ""))
        #expect((first["value"] as? [String: Any])?["n"] as? Int == 1)
        #expect((last["value"] as? [String: Any])?["n"] as? Int == PushLinesStreamTests.lines)
        let lastKey = try #require(last["key"] as? String)
        #expect(sb.get("/items/\(lastKey)/n") == String(PushLinesStreamTests.lines))
        #expect(sb.rtdb("query", "/items", "--order-by-key", "--limit-to-first", "1").stdout.contains(first["key"] as? String ?? "?"))
        let count = sb.program(["sh", "-c", "\"$RTDB\" get /items --shallow | tr ',' '\\n' | wc -l"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(PushLinesStreamTests.lines + 1))
    }

    @Test func aBadLastLineWritesNothingOnTheFile() {
        let sb = Sandbox()
        sb.seed("/items", #"{"old":true}"#)
        let r = sb.program(["sh", "-c", "{ " + PushLinesStreamTests.generator(50_000) + "; echo '{bad'; } | \"$RTDB\" push /items --lines"])
        expectError(r, status: 3, code: "invalid_json")
        #expect(r.error?.message.hasPrefix("line 50001: ") == true && r.error?.message.hasSuffix("; nothing was pushed") == true, "\(r)")
        #expect(r.stdout.isEmpty, "nothing printed: nothing was stored")
        #expect(sb.get("/items") == #"{"old":true}"#)
    }

    @Test func manyLinesThroughAServerGoInBoundedWrites() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb, ["--log"]))
        let url = server.url + "?ns=test"
        let n = 50_000
        let (r, peak) = PeakMemory.run(sb, PushLinesStreamTests.generator(n)
                                       + " | $MEASURE \"$RTDB\" --url '\(url)' push /items --lines | wc -l", timeout: 300)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(n))
        let p = try #require(peak)
        #expect(p <= PushLinesStreamTests.bound, "peak memory \(p / 1024 / 1024) MiB")
        let writes = server.child.stderr.split(separator: "\n").filter { $0.contains(#""method":"PATCH""#) }
        #expect(writes.count > 1, "about 2 MB of values in writes of at most 1 MiB: \(writes.count)")
        let count = sb.program(["sh", "-c", "\"$RTDB\" get /items --shallow | tr ',' '\\n' | wc -l"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(n))
        // In order: the last key holds the last line.
        let last = sb.rtdb("query", "/items", "--order-by-key", "--limit-to-last", "1")
        #expect(last.stdout.contains("\"n\":\(n),"), "\(last)")
    }

    @Test func aBadLastLineWritesNothingThroughAServer() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let r = sb.program(["sh", "-c", "{ " + PushLinesStreamTests.generator(50_000) + "; echo '[1,'; } | \"$RTDB\" --url '\(server.url)?ns=test' push /items --lines"])
        expectError(r, status: 3, code: "invalid_json")
        #expect(r.error?.message.hasPrefix("line 50001: ") == true && r.error?.message.hasSuffix("; nothing was pushed") == true, "\(r)")
        #expect(r.stdout.isEmpty)
        #expect(sb.get("/") == "null")
    }

    @Test func aServerThatTakesLessPerWriteIsMetByHalving() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb, ["--max-write-bytes", "100000", "--log"]))
        let n = 20_000   // about 800 kB: more than one write may carry
        let r = sb.program(["sh", "-c", PushLinesStreamTests.generator(n) + " | \"$RTDB\" --url '\(server.url)?ns=test' push /items --lines -q"])
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        // Refused at the head (not logged), then in halves: writes of at most 100 kB.
        let writes = server.child.stderr.split(separator: "\n").filter { $0.contains(#""method":"PATCH""#) }
        #expect(writes.count >= 8, "\(writes.count) writes")
        let count = sb.program(["sh", "-c", "\"$RTDB\" get /items --shallow | tr ',' '\\n' | wc -l"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(n))
        // A single value larger than the server takes is refused, and says how far it got.
        let big = "{\"s\":\"" + String(repeating: "x", count: 200_000) + "\"}"
        let refused = sb.rtdb(["--url", server.url + "?ns=test", "push", "/more", "--lines"], stdin: .text("1\n2\n" + big + "\n"))
        #expect(refused.status == 3 && refused.error?.code == "too_large", "\(refused)")
        #expect(refused.error?.message.hasSuffix("2 of 3 values were pushed (those printed), the rest were not") == true, "\(refused)")
        #expect(refused.lines.count == 2)
    }
}
