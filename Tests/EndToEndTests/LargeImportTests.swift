import Foundation
import Testing
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `set` and `update` of an input past the streaming threshold (16 MiB) on the database file:
/// streamed, one transaction, and printing and storing what the parsed value would give.
@Suite struct LargeImportTests {
    /// A document of about 18 MB with the awkward cases before and after the bulk, keys out of
    /// order, a repeated key, arrays, priorities and a server value.
    static func document(tail: String = "") -> String {
        var s = #"{"zeta":{"b":[1,null,{"c":"é\n"}],"a":{".value":true,".priority":"p"}},"dup":{"x":1},"#
        s += #""bulk":{"#
        let filler = String(repeating: "x", count: 120)
        for i in 0..<130_000 {
            if i > 0 { s += "," }
            s += "\"k\(i)\":{\"n\":\(i),\"s\":\"\(filler)\",\"l\":[\(i % 7),\(Double(i) / 8)]}"
        }
        s += #"},"dup":{"y":2},"alpha":{"when":{".sv":"timestamp"},".priority":4},"nulls":{"a":null,"b":{}}"#
        return s + tail + "}"
    }

    @Test func aLargeSetIsStoredAndPrintedAsTheParsedValue() throws {
        let sb = Sandbox()
        sb.seed("/keep", "1")
        sb.seed("/x", #"{"old":true}"#)
        let text = LargeImportTests.document()
        #expect(text.utf8.count > 17 << 20)
        let file = sb.write("big.json", text)
        let r = sb.rtdb(["set", "/x", "--file", file], timeout: 300)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "not a terminal: no progress line")
        // The timestamp is the one stored; the rest is the parsed text.
        let stamp = sb.get("/x/alpha/when")
        let parsed = try JSONReader.parse(text.replacingOccurrences(of: #"{".sv":"timestamp"}"#, with: stamp))
        #expect(r.stdout == #"{"path":"/x","value":"# + JSONWriter.string(parsed) + "}\n")
        #expect(sb.get("/x") == JSONWriter.string(parsed))
        #expect(sb.rtdb("get", "/x", "--export").stdout == JSONWriter.string(parsed, export: true) + "\n")
        #expect(sb.rtdb("get", "/x/zeta", "--pretty").stdout == JSONWriter.string(parsed.child("zeta"), pretty: true) + "\n")
        #expect(sb.get("/keep") == "1")

        // The same through stdin, pretty.
        let p = sb.program(["sh", "-c", "cat \"$0\" | \"$RTDB\" set /y - --pretty", file], timeout: 300)
        #expect(p.status == 0, "\(p.stderr)")
        let stampY = sb.get("/y/alpha/when")
        let parsedY = try JSONReader.parse(text.replacingOccurrences(of: #"{".sv":"timestamp"}"#, with: stampY))
        let value = JSONWriter.string(parsedY, pretty: true).replacingOccurrences(of: "\n", with: "\n  ")
        #expect(p.stdout == "{\n  \"path\": \"/y\",\n  \"value\": " + value + "\n}\n")
    }

    @Test func aLargeUpdatePrintsItsEntries() throws {
        let sb = Sandbox()
        sb.seed("/", #"{"old":1,"c":{"d":1},"keep":2}"#)
        let big = LargeImportTests.document()
        let text = #"{"c/e":[1,2],"a/b":"# + big + #","old":null}"#
        let r = sb.rtdb(["update", "/", "--file", sb.write("u.json", text)], timeout: 300)
        #expect(r.status == 0, "\(r.stderr)")
        let stamp = sb.get("/a/b/alpha/when")
        let parsed = try JSONReader.parse(big.replacingOccurrences(of: #"{".sv":"timestamp"}"#, with: stamp))
        let shown = Node.object([Node.Entry("a/b", parsed), Node.Entry("c/e", try JSONReader.parse("[1,2]")), Node.Entry("old", .null)])
        #expect(r.stdout == #"{"path":"/","value":"# + JSONWriter.string(shown) + "}\n")
        #expect(sb.get("/c") == #"{"d":1,"e":[1,2]}"#)
        #expect(sb.get("/keep") == "2")
        #expect(sb.get("/old") == "null")
    }

    @Test func invalidJSONAtTheEndLeavesNothingWritten() {
        let sb = Sandbox()
        sb.seed("/x", #"{"old":true}"#)
        let text = LargeImportTests.document(tail: #","late":[1,2,}"#)
        let r = sb.rtdb(["set", "/x", "--file", sb.write("bad.json", text)], timeout: 300)
        expectError(r, status: 3, code: "invalid_json")
        var expected = ""
        do { _ = try JSONReader.parse(text) } catch let e as RTDBError { expected = e.message } catch {}
        // The `}` after `2,` is read as what it is: a trailing comma, pointed at, with its line
        // and column counted here as an editor counts them (characters, not bytes).
        let comma = text.utf8.count - 3
        let before = Array(text.utf8.prefix(comma))
        let line = before.filter { $0 == 10 }.count + 1
        let lastLine = before.split(separator: 10, omittingEmptySubsequences: false).last ?? []
        let column = lastLine.filter { $0 & 0xC0 != 0x80 }.count + 1
        #expect(expected == "invalid JSON at byte \(comma) (line \(line), column \(column)): a trailing comma before '}' (JSON allows none)")
        #expect(r.error?.message == expected, "\(r)")
        #expect(sb.get("/") == #"{"x":{"old":true}}"#)
        // A problem with the data is reported as it is when the value is read whole.
        let bad = LargeImportTests.document(tail: #","late":{"a.b":1}"#)
        let b = sb.rtdb(["set", "/x", "--file", sb.write("bad2.json", bad)], timeout: 300)
        expectError(b, status: 3, code: "invalid_key")
        #expect(b.error?.message == #"invalid key at /x/late: key "a.b" contains the forbidden character ".""#, "\(b)")
        #expect(sb.get("/") == #"{"x":{"old":true}}"#)
    }

    @Test func aKilledImportLeavesNothing() throws {
        let sb = Sandbox()
        sb.seed("/x", #"{"old":true}"#)
        // The input never ends: the import has stored rows in its transaction when it is killed.
        let text = LargeImportTests.document()
        let file = sb.write("big.json", String(text.dropLast()) + ",")
        let done = sb.dir + "/all-sent"
        let child = try #require(sb.background(["sh", "-c", "{ cat \"$0\"; touch \"$1\"; sleep 60; } | exec \"$RTDB\" set /x -", file, done],
                                               name: "import"))
        // Once all but a pipe's buffer of the input has been read, the import has stored nearly
        // all of it in its transaction, and waits for the rest.
        #expect(eventually(120) { sb.exists(done) })
        Thread.sleep(forTimeInterval: 0.5)
        child.killGroup(SIGKILL)
        _ = child.wait(timeout: 10)
        #expect(sb.get("/") == #"{"x":{"old":true}}"#)
    }
}
