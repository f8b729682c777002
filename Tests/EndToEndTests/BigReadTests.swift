import Foundation
import Testing
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads of large values from `rtdb serve`, as a client that wants to stall the server would
/// ask for them: a read past the response limit is refused after counting to the limit (not
/// after rendering the value), a large read within it is answered away from the loop while a
/// one-leaf read goes on being answered quickly, and a walked `--url get /` keeps to a per-page
/// timeout shorter than the whole walk and shows its progress in bytes.
@Suite(.serialized) struct BigReadTests {
    /// About 30 MB: 20,000 children of about 1.5 kB each (40,000 rows), and one small leaf.
    static func document() -> String {
        let filler = String(repeating: "x", count: 1_500)
        var s = #"{"leaf":"here","items":{"#
        s.reserveCapacity(32 << 20)
        for i in 0..<20_000 {
            if i > 0 { s += "," }
            s += "\"k\(String(format: "%06d", i))\":{\"n\":\(i),\"s\":\"\(filler)\"}"
        }
        return s + "}}"
    }

    /// A sandbox whose database holds `document()`.
    static func filled() -> Sandbox {
        let sb = Sandbox()
        let r = sb.rtdb(["set", "/", "--file", sb.write("doc.json", document()), "-q"], timeout: 600)
        #expect(r.status == 0, "\(r)")
        return sb
    }

    /// One GET by curl: the status and the seconds curl measured from connecting to the last
    /// byte of the answer.
    func timedGet(_ sb: Sandbox, _ url: String) -> (code: String, seconds: Double) {
        let r = sb.program(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", url], timeout: 120)
        let parts = r.stdout.split(separator: " ")
        return (parts.first.map(String.init) ?? "", parts.count > 1 ? Double(parts[1]) ?? -1 : -1)
    }

    @Test func aReadPastTheResponseLimitIsRefusedWithoutRenderingIt() throws {
        let sb = BigReadTests.filled()
        // A 2 MB limit on a 30 MB value: the refusal counts 2 MB of rows, never renders 30 MB.
        let server = try #require(ServeProcess(sb, ["--max-response-bytes", "2000000"]))
        var times: [Double] = []
        for path in ["/.json", "/items.json", "/.json?format=export", "/.json?print=pretty"] {
            let r = timedGet(sb, server.url + path)
            #expect(r.code == "400", "\(path)")
            times.append(r.seconds)
        }
        // Under 100 ms in a release build; a debug build on a busy machine gets more room.
        #expect(times.max()! < 1.0, "refusals took \(times) s")
        let body = curl(sb, [server.url + "/.json"])
        #expect(body.code == "400")
        #expect(body.body.contains("Data requested exceeds the maximum size"))
        // Within the limit: answered whole, the same text as the file gives.
        let small = curl(sb, [server.url + "/items/k000007.json"])
        #expect(small.code == "200")
        #expect(small.body == sb.get("/items/k000007"))
        // A shallow page of keys is not a whole read: answered.
        let page = curl(sb, [server.url + "/items.json?shallow=true&orderBy=%22$key%22&limitToFirst=2"])
        #expect(page.body == #"{"k000000":true,"k000001":true}"#)
    }

    @Test func aReadPastTheLimitIsRefusedFromItsStoredSizeWithoutCountingRows() throws {
        let sb = Sandbox()
        let filler = String(repeating: "x", count: 1_000)
        let doc = "{\"leaf\":\"here\",\"items\":{" + (0..<300).map { "\"k\($0)\":\"\(filler)\"" }.joined(separator: ",") + "}}"
        #expect(sb.rtdb(["set", "/", "--file", sb.write("doc.json", doc), "-q"]).status == 0)
        // /items (300 kB) has its size stored. Doctored to 1 TB behind rtdb's back, it is what
        // serve goes by: had the refusal counted the rows, it would have found 300 kB and
        // answered them (the default limit is 256 MiB).
        let stored = sb.program(["sqlite3", sb.db, "SELECT count(*) FROM sizes WHERE bytes > 300000"])
        #expect(stored.stdout == "2\n", "\(stored)")   // /items and the root
        let doctored = sb.program(["sqlite3", sb.db, "UPDATE sizes SET bytes = 1000000000000 WHERE bytes > 300000"])
        #expect(doctored.status == 0, "\(doctored)")
        let server = try #require(ServeProcess(sb))
        for path in ["/.json", "/items.json", "/items.json?format=export"] {
            let r = curl(sb, [server.url + path])
            #expect(r.code == "400", "\(path): \(r)")
            #expect(r.body.contains("Data requested exceeds the maximum size"), "\(path)")
        }
        // Nodes too small to be stored are counted from their rows: answered.
        #expect(curl(sb, [server.url + "/items/k7.json"]).body == "\"\(filler)\"")
        #expect(curl(sb, [server.url + "/leaf.json"]).body == #""here""#)
    }

    @Test func aOneLeafReadIsAnsweredWhileALargeReadIsRendered() throws {
        let sb = BigReadTests.filled()
        let server = try #require(ServeProcess(sb))
        let out = sb.dir + "/all.json"
        let big = try #require(sb.background(["curl", "-s", "-o", out, "-w", "%{http_code} %{time_total}", server.url + "/.json?print=pretty"], name: "big"))
        var probes: [Double] = []
        var duringBigRead = 0
        let started = Date()
        while Date().timeIntervalSince(started) < 120 {
            let running = big.isRunning
            let r = timedGet(sb, server.url + "/leaf.json")
            #expect(r.code == "200")
            probes.append(r.seconds)
            if running && big.isRunning { duringBigRead += 1 }
            if !big.isRunning { break }
            usleep(20_000)
        }
        _ = big.wait(timeout: 120)
        #expect(big.stdout.hasPrefix("200"), "\(big.stdout)")
        // The big read was still going while several probes were answered, each quickly.
        #expect(duringBigRead >= 3, "probes answered during the big read: \(duringBigRead) of \(probes.count)")
        #expect(probes.max() ?? 9 < 0.25, "one-leaf reads took up to \(probes.max() ?? -1) s: \(probes)")
        // And the big answer is whole.
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let same = try JSONWriter.string(JSONReader.parse(text)) == sb.get("/")
        #expect(same, "the big answer differs from the file's value")
    }

    @Test func aServerToldToStopAnswersTheLargeReadItIsRendering() throws {
        let sb = BigReadTests.filled()
        let server = try #require(ServeProcess(sb))
        let out = sb.dir + "/all.json"
        let big = try #require(sb.background(["curl", "-s", "-o", out, "-w", "%{http_code}", server.url + "/.json?print=pretty"], name: "big"))
        // The read has reached the server (a one-leaf read on another connection was answered
        // after it arrived), then the server is told to stop.
        usleep(300_000)
        #expect(curl(sb, [server.url + "/leaf.json"]).body == #""here""#)
        kill(server.child.pid, SIGTERM)
        _ = big.wait(timeout: 120)
        #expect(big.stdout == "200")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let same = try JSONWriter.string(JSONReader.parse(text)) == sb.get("/")
        #expect(same, "the answer sent while stopping is not the whole value")
        _ = server.child.wait(timeout: 60)
    }

    @Test func aWalkedGetKeepsToAPerPageTimeoutAndCountsBytes() throws {
        let sb = BigReadTests.filled()
        let server = try #require(ServeProcess(sb, ["--max-response-bytes", "2000000"]))
        let local = sb.rtdb("get", "/")
        // Each page is answered well within two seconds; the walk as a whole takes longer.
        let remote = sb.rtdb(["--url", server.url, "--timeout", "2", "get", "/"], timeout: 300)
        #expect(remote.status == 0, "\(remote.stderr)")
        let same = remote.stdout == local.stdout
        #expect(same, "the walked value differs from the file's")
        #expect(remote.elapsed > 2, "the walk took \(remote.elapsed) s: too quick to show that the timeout bounds each page")

        // On a terminal the progress line counts the bytes and the children read.
        let tool = try #require(Binary.onPath("script"), "util-linux script is needed for a terminal")
        let screen = sb.program([tool, "-qec", "\"$RTDB\" --url '\(server.url)' --timeout 2 get / >/dev/null; echo \"status=$?\"", "/dev/null"],
                                env: ["SHELL": "/bin/sh"], timeout: 300).stdout
        #expect(screen.hasSuffix("status=0\r\n"), "\(screen.suffix(300))")
        let lines = screen.components(separatedBy: "\r").compactMap { part -> String? in
            guard let end = part.range(of: "\u{1B}[K") else { return nil }
            let text = String(part[..<end.lowerBound])
            return text.isEmpty ? nil : text
        }
        #expect(!lines.isEmpty, "no progress line: \(screen.suffix(300))")
        #expect(lines.allSatisfy { $0.hasPrefix("read: ") && $0.contains(" children, ") && $0.contains("B/s") }, "\(lines)")
    }
}
