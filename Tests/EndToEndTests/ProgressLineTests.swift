import Foundation
import Testing

/// A long import or export shows one progress line on a terminal's stderr, redrawn in place
/// and cleared at the end; nothing with -q, and nothing when stderr is not a terminal. The
/// terminal is a pseudo-terminal made by util-linux `script`.
@Suite struct ProgressLineTests {
    /// Runs `sh -c SCRIPT` with stderr (and stdout) on a pseudo-terminal; returns what the
    /// terminal showed, raw.
    func onTerminal(_ sb: Sandbox, _ script: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let tool = try #require(Binary.onPath("script"), "util-linux script is needed for a terminal", sourceLocation: sourceLocation)
        let r = sb.program([tool, "-qec", script + "; echo \"status=$?\"", "/dev/null"], env: ["SHELL": "/bin/sh"], timeout: 300)
        return r.stdout
    }

    /// The texts the line showed (each redraw starts with a carriage return and ends by erasing
    /// the rest of the line).
    func drawn(_ screen: String) -> [String] {
        screen.components(separatedBy: "\r").compactMap { part in
            guard let end = part.range(of: "\u{1B}[K") else { return nil }
            let text = String(part[..<end.lowerBound])
            return text.isEmpty ? nil : text
        }
    }

    @Test func aLongImportAndExportShowTheirProgress() throws {
        let sb = Sandbox()
        let file = sb.write("big.json", LargeImportTests.document())
        // The input arrives in two parts, a pause between: the import runs longer than a second.
        let pipe = "{ head -c 17000000 '\(file)'; sleep 1.5; tail -c +17000001 '\(file)'; } | \"$RTDB\" set /x - >/dev/null"
        let screen = try onTerminal(sb, pipe)
        #expect(screen.hasSuffix("status=0\r\n"), "\(screen)")
        let lines = drawn(screen)
        #expect(!lines.isEmpty, "\(screen)")
        // Read from a pipe: no total, so no share and no time left.
        #expect(lines.allSatisfy { $0.hasPrefix("import: ") && $0.hasSuffix("/s") && !$0.contains("%") }, "\(lines)")
        // Cleared at the end: the status is the next thing on the screen.
        #expect(screen.contains("\r\u{1B}[Kstatus=0"), "\(screen)")

        // From a file the total is known.
        let fromFile = drawn(try onTerminal(sb, "\"$RTDB\" set /y --file '\(file)' >/dev/null"))
        if let last = fromFile.last {
            #expect(last.hasPrefix("import: ") && last.contains(" / ") && last.contains("%"), "\(fromFile)")
        }

        // An export whose reader is slow.
        let export = try onTerminal(sb, "\"$RTDB\" get /x | { sleep 1.5; cat >/dev/null; }")
        let shown = drawn(export)
        #expect(!shown.isEmpty && shown.allSatisfy { $0.hasPrefix("export: ") }, "\(export)")

        // -q: nothing at all.
        let quiet = try onTerminal(sb, "\"$RTDB\" get /x -q | { sleep 1.5; cat >/dev/null; }; " + pipe.replacingOccurrences(of: "set /x -", with: "set /z - -q"))
        #expect(quiet == "status=0\r\n", "\(quiet)")
    }

    @Test func aChunkedWriteShowsItsProgress() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb, ["--max-write-bytes", "65536"]))
        let file = sb.write("doc.json", RemoteBigDataTests.document())
        // The input arrives in two parts, a pause between.
        let screen = try onTerminal(sb, "{ head -c 30000 '\(file)'; sleep 1.5; tail -c +30001 '\(file)'; } | "
                                    + "\"$RTDB\" --url '\(server.url)?ns=t' set /x - --chunked --chunk-size 2048 >/dev/null")
        #expect(screen.hasSuffix("status=0\r\n"), "\(screen)")
        let lines = drawn(screen)
        #expect(!lines.isEmpty && lines.allSatisfy { $0.hasPrefix("write: ") }, "\(screen)")
    }

    /// `n` JSON lines, made by awk.
    func lines(_ n: Int) -> String {
        "awk 'BEGIN { for (i = 0; i < \(n); i++) print \"{\\\"i\\\":\" i \"}\" }'"
    }

    @Test func ctrlCDuringAProgressLineClearsItAndSaysNothingWasWritten() throws {
        let sb = Sandbox()
        sb.seed("/items", #"{"old":true}"#)
        // Lines in three bursts, long pauses between: the line shows after the first pause, the
        // signal comes during the second, and the next update stops the push, which rolls back.
        let feed = "{ \(lines(2048)); sleep 1.5; \(lines(2048)); sleep 6; \(lines(2048)); }"
        let screen = try onTerminal(sb, "\(feed) | \"$RTDB\" push /items --lines > '\(sb.dir)/out' & pid=$!; sleep 4; kill -INT $pid; wait $pid")
        #expect(screen.hasSuffix("status=130\r\n"), "\(screen)")
        let shown = drawn(screen)
        #expect(!shown.isEmpty && shown.allSatisfy { $0.hasPrefix("push: ") }, "\(screen)")
        // Cleared, then what happened.
        #expect(screen.contains("\r\u{1B}[Krtdb: error: stopped by SIGINT; nothing was pushed\r\n"), "\(screen)")
        #expect(sb.get("/items") == #"{"old":true}"#)
        #expect((try? String(contentsOfFile: sb.dir + "/out", encoding: .utf8)) == "", "nothing printed: nothing stored")
    }

    @Test func aWalkedRemoteReadCountsBytesAndChildren() throws {
        let sb = Sandbox()
        let doc = sb.write("doc.json", RemoteBigDataTests.fiveMegabytes())
        #expect(sb.rtdb("set", "/", "--file", doc, "-q").status == 0)
        let server = try #require(ServeProcess(sb, ["--max-response-bytes", "100000"]))
        // A slow reader: the walk waits on the pipe, then goes on past the first second.
        let screen = try onTerminal(sb, "\"$RTDB\" --url '\(server.url)?ns=t' get / | { sleep 1.5; cat >/dev/null; }")
        #expect(screen.hasSuffix("status=0\r\n"), "\(screen)")
        let shown = drawn(screen)
        #expect(!shown.isEmpty && shown.allSatisfy { $0.hasPrefix("read: ") && $0.contains(" children, ") }, "\(screen)")
    }
}
