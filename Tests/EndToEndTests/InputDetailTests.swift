import Foundation
import Testing

/// Reliability, small things: a byte-order mark before JSON text on stdin or in a file is
/// skipped, an error caused by an environment variable names the variable, and a byte that is
/// not ASCII shows in a message as `\xEF`.
@Suite struct InputDetailTests {
    static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]

    @Test func aByteOrderMarkOnStdinIsSkipped() {
        let sb = Sandbox()
        expectOK(sb.rtdb(["set", "/a", "-"], stdin: .bytes(InputDetailTests.bom + Array(#"{"x":1}"#.utf8))),
                 #"{"path":"/a","value":{"x":1}}"# + "\n")
        expectOK(sb.rtdb(["update", "/a", "-"], stdin: .bytes(InputDetailTests.bom + Array(#"{"y":2}"#.utf8))),
                 #"{"path":"/a","value":{"y":2}}"# + "\n")
        let lines = sb.rtdb(["push", "/l", "--lines", "-q"], stdin: .bytes(InputDetailTests.bom + Array("1\n2\n".utf8)))
        #expect(lines.status == 0 && lines.stderr.isEmpty, "\(lines)")
        #expect(sb.rtdb("query", "/l").lines.compactMap { object($0)?["value"] as? Int } == [1, 2])
        #expect(sb.get("/a") == #"{"x":1,"y":2}"#)
    }

    @Test func aByteOrderMarkInAFileIsSkipped() {
        let sb = Sandbox()
        let file = sb.write("bom.json", bytes: InputDetailTests.bom + Array(#"["é",2]"#.utf8))
        expectOK(sb.rtdb("set", "/a", "--file", file), #"{"path":"/a","value":["é",2]}"# + "\n")
        expectOK(sb.rtdb("push", "/p", "--file", file, "-q"), "")
        // Through stdin redirected from the file too (a regular file, read by size).
        expectOK(sb.program(["sh", "-c", "\"$RTDB\" set /b - < '\(file)'"]), #"{"path":"/b","value":["é",2]}"# + "\n")
    }

    @Test func aByteOrderMarkBeforeATxCommandsOutputIsSkipped() {
        let sb = Sandbox()
        expectOK(sb.rtdb("tx", "/n", "--", "printf", "\\357\\273\\2777"), #"{"path":"/n","committed":true,"value":7,"attempts":1}"# + "\n")
    }

    @Test func onlyTheStartMayHoldAByteOrderMark() {
        let sb = Sandbox()
        let r = sb.rtdb(["set", "/a", "-"], stdin: .bytes(Array("1".utf8) + InputDetailTests.bom))
        expectError(r, status: 3, code: "invalid_json")
        let twice = sb.rtdb(["set", "/a", "-"], stdin: .bytes(InputDetailTests.bom + InputDetailTests.bom + Array("1".utf8)))
        expectError(twice, status: 3, code: "invalid_json")
        #expect(twice.error?.message.contains(#"unexpected byte \xEF"#) == true, "\(twice)")
    }

    @Test func aByteThatIsNotASCIIShowsAsHexInMessages() {
        let sb = Sandbox()
        for (bytes, shown) in [([0xC3] as [UInt8], #"\xC3"#), ([0xEF, 0x31], #"\xEF"#), ([0x80], #"\x80"#)] {
            let r = sb.rtdb(["set", "/a", "-"], stdin: .bytes(bytes))
            expectError(r, status: 3, code: "invalid_json")
            #expect(r.error?.message.hasSuffix("unexpected byte \(shown)") == true, "\(r)")
            // Not as the Latin-1 letter the byte would be as a code point.
            #expect(r.error?.message.contains("Ã") == false && r.error?.message.contains("ï") == false, "\(r)")
        }
        // ASCII keeps its quoted character.
        #expect(sb.rtdb("set", "/a", "x").error?.message.contains(#"unexpected character "x""#) == true)
    }

    @Test func errorsCausedByEnvironmentVariablesNameTheVariable() {
        let sb = Sandbox()
        let env = sb.rtdb(["get", "/"], env: ["RTDB_TIMEOUT": "soon"])
        expectError(env, status: 2, code: "usage")
        #expect(env.error?.message.contains("RTDB_TIMEOUT") == true && env.error?.message.contains("--timeout") == false, "\(env)")
        let flag = sb.rtdb(["get", "/", "--timeout", "soon"], env: ["RTDB_TIMEOUT": "1"])
        expectError(flag, status: 2, code: "usage")
        #expect(flag.error?.message.contains("--timeout") == true && flag.error?.message.contains("RTDB_TIMEOUT") == false, "\(flag)")
        let url = sb.rtdb(["get", "/"], env: ["RTDB_URL": "ftp://example.com"])
        expectError(url, status: 2, code: "usage")
        #expect(url.error?.message.contains("RTDB_URL") == true && url.error?.message.contains("--url") == false, "\(url)")
        let option = sb.rtdb(["get", "/", "--url", "ftp://example.com"])
        expectError(option, status: 2, code: "usage")
        #expect(option.error?.message.contains("--url") == true, "\(option)")
    }

    /// Whichever way a command opens its target (through the offline cache or not, or both),
    /// a bad RTDB_URL is reported under that name, byte for byte the words --url gets.
    @Test func aBadURLFromTheEnvironmentIsNamedOnEveryWayInAsTheOptionIs() {
        let sb = Sandbox()
        let tail = #" "ftp://example.com": not an http or https URL; expected https://NAME.firebaseio.com, "#
            + "https://NAME.REGION.firebasedatabase.app or http://HOST:PORT[?ns=NAME]"
        for args in [["get", "/"], ["set", "/a", "1"], ["session", "--presence", "/p", "--client-side"]] {
            let env = sb.rtdb(args, env: ["RTDB_URL": "ftp://example.com"])
            expectError(env, status: 2, code: "usage")
            #expect(env.error?.message == "RTDB_URL" + tail, "\(args): \(env)")
            let option = sb.rtdb(args + ["--url", "ftp://example.com"], env: ["RTDB_URL": "http://127.0.0.1:1?ns=x"])
            expectError(option, status: 2, code: "usage")
            #expect(option.error?.message == "--url" + tail, "\(args): \(option)")
        }
    }
}
