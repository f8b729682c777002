import Foundation
import Testing

/// on a terminal a failure reads `rtdb: error: <message>`, and a usage error adds the
/// command's usage line. The terminal is a pseudo-terminal made by util-linux `script`.
@Suite struct TerminalTests {
    /// Runs `rtdb ARGS >/dev/null` with stderr on a pseudo-terminal; returns the terminal text
    /// (lines without "\r\n") and rtdb's status.
    func onTerminal(_ sb: Sandbox, _ args: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> (lines: [String], status: String) {
        let script = try #require(Binary.onPath("script"), "util-linux script is needed for a terminal", sourceLocation: sourceLocation)
        let quoted = args.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let r = sb.program([script, "-qec", "\"$RTDB\" \(quoted) >/dev/null; echo \"status=$?\"", "/dev/null"],
                           env: ["SHELL": "/bin/sh"])
        var lines = r.stdout.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        let status = lines.last ?? ""
        return (Array(lines.dropLast()), status)
    }

    @Test func dataErrorIsASentence() throws {
        let sb = Sandbox()
        let t = try onTerminal(sb, ["set", "/a.b", "1"])
        #expect(t.status == "status=3")
        #expect(t.lines.count == 1, "\(t.lines)")
        #expect(t.lines.first?.hasPrefix("rtdb: error: ") == true, "\(t.lines)")
        #expect(t.lines.first?.contains("{\"error\"") == false)
        #expect(sb.get("/") == "null")
    }

    @Test func usageErrorAddsTheCommandsUsageLine() throws {
        let sb = Sandbox()
        let t = try onTerminal(sb, ["get"])
        #expect(t.status == "status=2")
        #expect(t.lines == ["rtdb: error: get: missing PATH", "usage: rtdb get PATH [--shallow | --export | --exists] [--raw]"])
    }

    @Test func unknownOptionOfAKnownCommandAddsThatCommandsUsageLine() throws {
        let sb = Sandbox()
        let t = try onTerminal(sb, ["get", "/x", "--nope"])
        #expect(t.status == "status=2")
        #expect(t.lines.count == 2, "\(t.lines)")
        #expect(t.lines.first?.hasPrefix("rtdb: error: ") == true, "\(t.lines)")
        #expect(t.lines.last == "usage: rtdb get PATH [--shallow | --export | --exists] [--raw]", "\(t.lines)")
    }

    @Test func unknownCommandAddsTheGeneralUsageLine() throws {
        let sb = Sandbox()
        let t = try onTerminal(sb, ["bogus"])
        #expect(t.status == "status=2")
        #expect(t.lines.count == 2, "\(t.lines)")
        #expect(t.lines.first?.hasPrefix("rtdb: error: ") == true, "\(t.lines)")
        #expect(t.lines.last == "usage: rtdb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]", "\(t.lines)")
    }
}
