import Foundation
import Testing
import RTDBCore

/// Reads, writes and deletes larger than the server takes in one request, against `rtdb serve`
/// with small limits: the read is walked and prints what one read prints, `set --chunked`
/// writes in bounded updates, `remove` deletes in chunks when refused at once.
@Suite struct RemoteBigDataTests {
    /// About 60 kB: many children (their keys alone outgrow a 4 kB answer), arrays, priorities,
    /// awkward keys and strings, and one child larger than the answer limit by itself.
    static func document() -> String {
        var s = #"{"list":{"#
        for i in 0..<400 {
            if i > 0 { s += "," }
            s += "\"item\(String(format: "%04d", i))\":{\"n\":\(i),\"t\":\"text \(i) é\\\"q\",\"tags\":[\(i % 3),\"x\"]"
            if i % 7 == 0 { s += ",\".priority\":\(i)" }
            s += "}"
        }
        s += #"},"big":{"inner":{"#
        for i in 0..<150 {
            if i > 0 { s += "," }
            s += "\"k\(i)\":{\".value\":\"\(String(repeating: "v", count: 40))\",\".priority\":\"p\(i)\"}"
        }
        s += #"},".priority":1.5},"arr":[1,null,{"a":[true,false]},"s"],"ints":{"0":"a","2":"c","10":"k"},"small":{"x":1}}"#
        return s
    }

    func url(_ server: ServeProcess) -> String { server.url + "?ns=test" }

    @Test func aReadPastTheResponseLimitIsWalkedAndPrintsWhatOneReadPrints() throws {
        let sb = Sandbox()
        let doc = sb.write("doc.json", RemoteBigDataTests.document())
        #expect(sb.rtdb("set", "/", "--file", doc, "-q").status == 0)
        let server = try #require(ServeProcess(sb, ["--max-response-bytes", "4000", "--log"]))
        for path in ["/", "/list", "/big", "/arr", "/small", "/nothing"] {
            for extra in [[], ["--export"], ["--pretty"], ["--export", "--pretty"]] {
                let local = sb.rtdb(["get", path] + extra)
                let remote = sb.rtdb(["--url", url(server), "get", path] + extra)
                #expect(remote.status == 0 && remote.stderr.isEmpty, "\(path) \(extra): \(remote)")
                #expect(remote.stdout == local.stdout, "\(path) \(extra)")
            }
        }
        // The whole value was refused, then read in pieces: shallow pages and key-ordered pages.
        let log = server.child.stderr
        #expect(log.contains(#""status":400"#))
        #expect(sb.rtdb("--url", url(server), "get", "/list", "--shallow").status == 3, "a shallow read of /list is itself too large")
        // One read that fits is one request, as before.
        let before = server.child.stderr.split(separator: "\n").count
        #expect(sb.rtdb("--url", url(server), "get", "/small").stdout == "{\"x\":1}\n")
        #expect(server.child.stderr.split(separator: "\n").count == before + 1)
    }

    @Test func aChunkedSetWritesADocumentTooLargeForOneRequest() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb, ["--max-write-bytes", "8192", "--log"]))
        let text = RemoteBigDataTests.document()
        let doc = sb.write("doc.json", text)
        // One request cannot carry it.
        expectError(sb.rtdb("--url", url(server), "set", "/", "--file", doc), status: 3, code: "too_large")
        #expect(sb.get("/") == "null")

        let r = sb.rtdb("--url", url(server), "set", "/", "--file", doc, "--chunked", "--chunk-size", "2048")
        #expect(r.status == 0, "\(r)")
        let line = try #require(object(r.stdout))
        #expect(line["path"] as? String == "/" && line["atomic"] as? Bool == false)
        #expect((line["requests"] as? Int ?? 0) > 20, "\(r.stdout)")
        let stored = sb.rtdb("get", "/", "--export").stdout
        #expect(stored == JSONWriter.string(try JSONReader.parse(text), export: true) + "\n")

        // Not atomic, so not over data, unless --force (which removes it first).
        let again = sb.rtdb("--url", url(server), "set", "/", "--file", doc, "--chunked", "--chunk-size", "2048")
        expectError(again, status: 5, code: "not_committed")
        #expect(again.error?.message.contains("not atomic") == true, "\(again)")
        #expect(sb.rtdb("set", "/extra", "1", "-q").status == 0)
        let smaller = sb.write("smaller.json", #"{"list":{"a":{"b":[1,2]}},"arr":[3]}"#)
        let forced = sb.rtdb("--url", url(server), "set", "/", "--file", smaller, "--chunked", "--chunk-size", "1024", "--force")
        #expect(forced.status == 0, "\(forced)")
        #expect(sb.get("/") == #"{"arr":[3],"list":{"a":{"b":[1,2]}}}"#)

        // From stdin, below a path, and a value given as an argument.
        let piped = sb.program(["sh", "-c", "\"$RTDB\" --url '\(url(server))' set /sub - --chunked --chunk-size 1024 < '\(doc)'"])
        #expect(piped.status == 0, "\(piped)")
        #expect(sb.rtdb("get", "/sub", "--export").stdout == JSONWriter.string(try JSONReader.parse(text), export: true) + "\n")
        #expect(sb.rtdb("--url", url(server), "set", "/one", "5", "--chunked").status == 0)
        #expect(sb.get("/one") == "5")
    }

    /// About 5 MB: 50 children of about 100 kB, each of 1000 small children.
    static func fiveMegabytes() -> String {
        var s = "{"
        for i in 0..<50 {
            if i > 0 { s += "," }
            s += "\"part\(i)\":{"
            for j in 0..<1000 {
                if j > 0 { s += "," }
                s += "\"k\(j)\":{\"n\":\(j),\"text\":\"\(String(repeating: "t", count: 80))\"}"
            }
            s += "}"
        }
        return s + "}"
    }

    @Test func aChunkedSetHalvesItsChunksWhenTheServerTakesLessPerWrite() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb, ["--max-write-bytes", "1000000", "--log"]))
        let text = RemoteBigDataTests.fiveMegabytes()
        #expect(text.utf8.count > 5_000_000)
        let doc = sb.write("doc.json", text)
        // In one request it is too large, and the error says what to do.
        let whole = sb.rtdb("--url", url(server), "set", "/", "--file", doc)
        expectError(whole, status: 3, code: "too_large")
        #expect(whole.error?.message.contains("set --chunked") == true, "\(whole)")
        // The default chunk (1 MiB) is more than the server takes: refused, halved, and on.
        let r = sb.rtdb("--url", url(server), "set", "/", "--file", doc, "--chunked")
        #expect(r.status == 0, "\(r)")
        // (Refusals at the head are not logged; what was written is.)
        #expect(server.child.stderr.split(separator: "\n").filter { $0.contains(#""status":204"#) }.count > 5)
        #expect(sb.rtdb("get", "/").stdout == JSONWriter.string(try JSONReader.parse(text)) + "\n")
        // A single value larger than the server takes cannot be split: a clear error.
        let leaf = sb.write("leaf.json", #"{"a":1,"b":""# + String(repeating: "x", count: 1_200_000) + #""}"#)
        let refused = sb.rtdb("--url", url(server), "set", "/leaf", "--file", leaf, "--chunked")
        expectError(refused, status: 3, code: "too_large")
        #expect(refused.error?.message.contains("/leaf/b") == true && refused.error?.message.contains("cannot be split") == true, "\(refused)")
    }

    @Test func chunkedOptionsAreChecked() {
        let sb = Sandbox()
        expectError(sb.rtdb("set", "/", "{}", "--chunked"), status: 2, code: "usage")
        expectError(sb.rtdb("set", "/", "{}", "--chunk-size", "4096"), status: 2, code: "usage")
        // (--force alone is for replacing a root that holds data; this one is empty.)
        expectOK(sb.rtdb("set", "/", "{}", "--force"), "{\"path\":\"/\",\"value\":null}\n")
        expectError(sb.rtdb("set", "/", "{}", "--chunked", "--chunk-size", "12"), status: 2, code: "usage")
    }

    @Test func aRemoveTheServerRefusesAtOnceIsDoneInChunksDeepestFirst() throws {
        let sb = Sandbox()
        let doc = sb.write("doc.json", RemoteBigDataTests.document())
        #expect(sb.rtdb("set", "/", "--file", doc, "-q").status == 0)
        // Writes that name no limit are held to "small": 2560 bytes at this size.
        let server = try #require(ServeProcess(sb, ["--max-write-bytes", "65536", "--write-size-limit", "small", "--log"]))
        let small = sb.rtdb("--url", url(server), "remove", "/small")
        #expect(small.stdout == "{\"path\":\"/small\",\"value\":null}\n" && small.stderr.isEmpty, "\(small)")
        let requestsBefore = server.child.stderr.split(separator: "\n").count
        #expect(requestsBefore == 1)

        let r = sb.rtdb("--url", url(server), "remove", "/list")
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "{\"path\":\"/list\",\"value\":null}\n")
        #expect(r.stderr.isEmpty, "not a terminal: no note")
        #expect(sb.get("/list") == "null")
        #expect(sb.get("/big/inner/k3") == "\"" + String(repeating: "v", count: 40) + "\"")
        let log = server.child.stderr.split(separator: "\n").dropFirst(requestsBefore)
        #expect(log.count > 3)
        #expect(log.first?.contains(#""status":400"#) == true, "the whole delete was refused first: \(log.first ?? "")")
        #expect(log.contains { $0.contains(#""method":"PATCH""#) && $0.contains(#""status":204"#) })
        // Everything goes, however large.
        #expect(sb.rtdb("--url", url(server), "remove", "/", "--force").status == 0)
        #expect(sb.get("/") == "null")
    }

    @Test func serveAnswersPastItsLimitsAsFirebaseDoes() throws {
        let sb = Sandbox()
        sb.seed("/a", #"{"x":"\#(String(repeating: "y", count: 300))"}"#)
        let server = try #require(ServeProcess(sb, ["--max-response-bytes", "200", "--max-write-bytes", "25600"]))
        let read = curl(sb, [server.url + "/a.json"])
        #expect(read.code == "400")
        #expect(read.body == #"{"error":"Data requested exceeds the maximum size that can be accessed with a single request."}"#)
        #expect(curl(sb, [server.url + "/a.json?shallow=true"]).body == #"{"x":true}"#)
        // writeSizeLimit=tiny is 1/256 of 25600 bytes: this delete replaces more.
        let tiny = curl(sb, ["-X", "DELETE", server.url + "/a.json?writeSizeLimit=tiny"])
        #expect(tiny.code == "400" && tiny.body.contains("exceeds the maximum size"), "\(tiny)")
        #expect(curl(sb, ["-X", "PUT", "-d", "1", server.url + "/b.json?writeSizeLimit=tiny"]).code == "200")
        #expect(curl(sb, ["-X", "PUT", "-d", "1", server.url + "/b.json?writeSizeLimit=huge"]).code == "400")
        #expect(curl(sb, ["-X", "DELETE", server.url + "/a.json?writeSizeLimit=small"]).code == "200")
        let body = "\"" + String(repeating: "z", count: 30_000) + "\""
        #expect(curl(sb, ["-X", "PUT", "-d", body, server.url + "/c.json"]).code == "413")
        let refused = ServeProcess(sb, ["--max-write-bytes", "10"], name: "bad")
        #expect(refused == nil)
    }
}
