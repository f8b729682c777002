import Foundation
import Testing

/// Reliability: a write that committed is never reported as a failed one. When its result
/// cannot be printed (stdout on a full disk, or not open at all), the error line says `"committed":true`
/// with the path and the status is 9, so a script can tell "written, not shown" from "not written".
@Suite struct CommittedOutputTests {
    /// The error line of a run whose stderr is exactly one JSON line.
    func errorLine(_ r: RunResult) -> [String: Any]? {
        guard r.stderr.hasSuffix("\n"), !r.stderr.dropLast().contains("\n") else { return nil }
        return object(r.stderr)?["error"] as? [String: Any]
    }

    func expectCommittedNotPrinted(_ r: RunResult, path: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 9, "\(r)", sourceLocation: sourceLocation)
        let e = errorLine(r)
        #expect(e?["code"] as? String == "io_error", "\(r)", sourceLocation: sourceLocation)
        #expect(e?["committed"] as? Bool == true, "\(r)", sourceLocation: sourceLocation)
        #expect(e?["path"] as? String == path, "\(r)", sourceLocation: sourceLocation)
        #expect((e?["message"] as? String)?.contains("committed") == true, "\(r)", sourceLocation: sourceLocation)
    }

    /// Each write command with its stdout sent to `redirect`, and what it leaves in the database.
    func everyWrite(_ sb: Sandbox, redirect: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let cases: [(command: String, path: String, check: String, expected: String)] = [
            ("increment /c", "/c", "/c", "1"),
            ("increment /c 2", "/c", "/c", "3"),
            ("set /s '{\"a\":1}'", "/s", "/s", #"{"a":1}"#),
            ("update /u '{\"x\":1,\"y/z\":2}'", "/u", "/u", #"{"x":1,"y":{"z":2}}"#),
            ("remove /s", "/s", "/s", "null"),
            ("tx /c -- echo 10", "/c", "/c", "10"),
        ]
        for c in cases {
            let r = sb.program(["sh", "-c", "\"$RTDB\" \(c.command) \(redirect)"])
            expectCommittedNotPrinted(r, path: c.path, sourceLocation: sourceLocation)
            #expect(sb.get(c.check) == c.expected, "\(c.command)", sourceLocation: sourceLocation)
        }
        let p = sb.program(["sh", "-c", "\"$RTDB\" push /list '\"item\"' \(redirect)"])
        expectCommittedNotPrinted(p, path: "/list", sourceLocation: sourceLocation)
        let list = sb.rtdb("query", "/list")
        #expect(list.lines.count == 1 && list.stdout.contains("\"item\""), "\(list)", sourceLocation: sourceLocation)
    }

    @Test func writesToAFullStdoutCommitAndExit9() throws {
        try #require(FileManager.default.fileExists(atPath: "/dev/full"), "/dev/full is needed")
        everyWrite(Sandbox(), redirect: "> /dev/full")
    }

    @Test func writesToAClosedStdoutCommitAndExit9() {
        everyWrite(Sandbox(), redirect: ">&-")
    }

    @Test func failuresBeforeTheCommitKeepTheirOwnStatus() {
        let sb = Sandbox()
        sb.seed("/n", "1")
        // Not committed: the usual code and status, and no "committed" field.
        let bad = sb.program(["sh", "-c", "\"$RTDB\" set /x '{bad' > /dev/full"])
        #expect(bad.status == 3 && errorLine(bad)?["code"] as? String == "invalid_json" && errorLine(bad)?["committed"] == nil, "\(bad)")
        let aborted = sb.program(["sh", "-c", "\"$RTDB\" tx /n -- false > /dev/full"])
        #expect(aborted.status != 9 && aborted.status != 0 && errorLine(aborted)?["committed"] == nil, "\(aborted)")
        let read = sb.program(["sh", "-c", "\"$RTDB\" get /n > /dev/full"])
        #expect(read.status == 1 && errorLine(read)?["code"] as? String == "io_error" && errorLine(read)?["committed"] == nil, "\(read)")
        #expect(sb.get("/n") == "1")
    }

    @Test func quietWritesPrintNothingAndSucceed() {
        let sb = Sandbox()
        let r = sb.program(["sh", "-c", "\"$RTDB\" -q increment /c > /dev/full"])
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        #expect(sb.get("/c") == "1")
    }

    @Test func aReaderThatLeftIsStillAQuietSuccess() {
        let sb = Sandbox()
        // `| true`: stdout is a pipe whose reader may be gone (EPIPE); the write committed.
        let r = sb.program(["bash", "-c", "\"$RTDB\" increment /c | true; exit ${PIPESTATUS[0]}"])
        #expect(r.status == 0, "\(r)")
        #expect(sb.get("/c") == "1")
    }
}
