import Foundation
import Testing

/// Priorities through the binary: stored by set/update/push, left out of normal output, shown by
/// `get --export`, ordered by `--order-by-priority`, and a version-1 file upgraded on write.
@Suite struct PriorityTests {
    static let doc = #"{"a":{".value":1,".priority":5},"b":{"x":true,".priority":"z"},"c":{"0":{".value":"s",".priority":1.5},"1":2},"d":4,".priority":0}"#

    @Test func normalReadsLeavePrioritiesOutAndExportShowsThem() {
        let sb = Sandbox()
        expectLines(sb.rtdb("set", "/s", Self.doc), [#"{"path":"/s","value":{"a":1,"b":{"x":true},"c":["s",2],"d":4}}"#])
        expectLines(sb.rtdb("get", "/s"), [#"{"a":1,"b":{"x":true},"c":["s",2],"d":4}"#])
        expectLines(sb.rtdb("get", "/s", "--export"),
                    [#"{"a":{".value":1,".priority":5},"b":{"x":true,".priority":"z"},"c":{"0":{".value":"s",".priority":1.5},"1":2},"d":4,".priority":0}"#])
        expectLines(sb.rtdb("get", "/s/a", "--export"), [#"{".value":1,".priority":5}"#])
        expectLines(sb.rtdb("get", "/s/b/.priority"), [#""z""#])
        expectLines(sb.rtdb("get", "/s/d/.priority"), ["null"])
        expectLines(sb.rtdb("query", "/s", "--order-by-key", "--limit-to-first", "1"), [#"{"key":"a","value":1}"#])
    }

    @Test func rawOutputPrintsAPrioritisedStringAsText() throws {
        let sb = Sandbox()
        sb.seed("/t", #"{"a":{".value":"first",".priority":1},"b":{".value":"line\ntwo",".priority":"p"},"c":{".value":3,".priority":2}}"#)
        expectLines(sb.rtdb("get", "/t/a", "-r"), ["first"])
        expectLines(sb.rtdb("query", "/t", "--order-by-priority", "-r"), ["first", "3", "line", "two"])
        let w = sb.rtdb("watch", "/t/a", "-r", "--count", "1")
        expectLines(w, ["first"])
        let children = sb.rtdb("watch", "/t", "--child-events", "--order-by-priority", "-r", "--count", "3")
        expectLines(children, ["first", "3", "line", "two"])
    }

    @Test func exportWrittenBackWithSetRoundTripsExactly() {
        let sb = Sandbox()
        sb.seed("/", #"{"s":\#(Self.doc),"list":[1,{".value":2,".priority":-1}],"plain":{"k":"v"}}"#)
        let export = sb.rtdb("get", "/", "--export")
        #expect(export.status == 0)
        let file = sb.write("export.json", export.stdout)
        let other = sb.dir + "/other.db"
        expectOK(sb.rtdb("--db", other, "-q", "set", "/", "--file", file), "")
        expectOK(sb.rtdb("--db", other, "get", "/", "--export"), export.stdout)
        expectOK(sb.rtdb("--db", other, "get", "/"), sb.rtdb("get", "/").stdout)
        // Pretty export reads back the same too.
        let pretty = sb.rtdb("get", "/", "--export", "--pretty")
        expectOK(sb.rtdb("--db", other, "-q", "set", "/", "-", "--force", stdin: .text(pretty.stdout)), "")
        expectOK(sb.rtdb("--db", other, "get", "/", "--export"), export.stdout)
    }

    @Test func queryOrdersByPriorityWithBoundsAndLimits() {
        let sb = Sandbox()
        sb.seed("/p", #"{"a":{".value":1,".priority":"b"},"b":{".value":2,".priority":3},"c":4,"d":{"x":1,".priority":-1},"e":{".value":5,".priority":"a"},"f":{".value":6,".priority":3}}"#)
        expectLines(sb.rtdb("query", "/p", "--order-by-priority"), [
            #"{"key":"c","value":4}"#, #"{"key":"d","value":{"x":1}}"#, #"{"key":"b","value":2}"#,
            #"{"key":"f","value":6}"#, #"{"key":"e","value":5}"#, #"{"key":"a","value":1}"#,
        ])
        expectLines(sb.rtdb("query", "/p", "--order-by-priority", "--start-at", "3", "--start-key", "c", "--end-before", "b"), [
            #"{"key":"f","value":6}"#, #"{"key":"e","value":5}"#,
        ])
        expectLines(sb.rtdb("query", "/p", "--order-by-priority", "--equal-to", "null"), [
            #"{"key":"c","value":4}"#,
        ])
        expectLines(sb.rtdb("query", "/p", "--order-by-priority", "--equal-to", "3"), [
            #"{"key":"b","value":2}"#, #"{"key":"f","value":6}"#,
        ])
        expectLines(sb.rtdb("query", "/p", "--order-by-priority", "--limit-to-last", "2"), [
            #"{"key":"e","value":5}"#, #"{"key":"a","value":1}"#,
        ])
        expectError(sb.rtdb("query", "/p", "--order-by-priority", "--start-at", "true"), status: 3, code: "invalid_query")
        expectError(sb.rtdb("query", "/p", "--order-by-priority", "--order-by-value"), status: 2, code: "usage")
        expectError(sb.rtdb("query", "/p", "--order-by-child", ".priority"), status: 3, code: "invalid_query")
    }

    @Test func priorityPseudoChildAndUpdateKeys() {
        let sb = Sandbox()
        sb.seed("/u", #"{"a":1,"b":{"c":2}}"#)
        expectLines(sb.rtdb("set", "/u/a/.priority", "7"), [#"{"path":"/u/a/.priority","value":7}"#])
        expectLines(sb.rtdb("set", "/u/none/.priority", "7"), [#"{"path":"/u/none/.priority","value":null}"#])
        expectLines(sb.rtdb("update", "/u", #"{"b/.priority":"x",".priority":1}"#),
                    [#"{"path":"/u","value":{".priority":1,"b/.priority":"x"}}"#])
        expectLines(sb.rtdb("get", "/u", "--export"), [#"{"a":{".value":1,".priority":7},"b":{"c":2,".priority":"x"},".priority":1}"#])
        expectLines(sb.rtdb("remove", "/u/a/.priority"), [#"{"path":"/u/a/.priority","value":null}"#])
        expectLines(sb.rtdb("increment", "/u/.priority", "2"), [#"{"path":"/u/.priority","value":3}"#])
        expectLines(sb.rtdb("get", "/u", "--export"), [#"{"a":1,"b":{"c":2,".priority":"x"},".priority":3}"#])
        // Overwriting clears a priority; tx keeps it unless its output gives one.
        expectLines(sb.rtdb("tx", "/u/b", "--", "jq", "-c", ".c += 1"),
                    [#"{"path":"/u/b","committed":true,"value":{"c":3},"attempts":1}"#])
        expectLines(sb.rtdb("get", "/u/b/.priority"), [#""x""#])
        sb.seed("/u/b", #"{"c":4}"#)
        expectLines(sb.rtdb("get", "/u/b/.priority"), ["null"])
    }

    @Test func badPrioritiesAreRefusedAndChangeNothing() {
        let sb = Sandbox()
        sb.seed("/k", #"{"a":{".value":1,".priority":2}}"#)
        expectError(sb.rtdb("set", "/k/a/.priority", "true"), status: 3, code: "invalid_data")
        expectError(sb.rtdb("set", "/k/a/.priority", #"{"x":1}"#), status: 3, code: "invalid_data")
        expectError(sb.rtdb("set", "/k/b", #"{"x":1,".priority":false}"#), status: 3, code: "invalid_data")
        expectError(sb.rtdb("update", "/k", #"{"a/.priority":true}"#), status: 3, code: "invalid_data")
        expectError(sb.rtdb("update", "/k", #"{"a":1,"a/.priority":3}"#), status: 3, code: "invalid_data")
        expectError(sb.rtdb("set", "/k/a/.priority/x", "1"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("push", "/k/a/.priority", "1"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("get", "/k", "--export", "--shallow"), status: 2, code: "usage")
        expectLines(sb.rtdb("get", "/", "--export"), [#"{"k":{"a":{".value":1,".priority":2}}}"#])
    }

    @Test func aFileMadeByRelease010IsReadThenUpgradedOnWrite() throws {
        let sb = Sandbox()
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
        try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("schema-v1.db").path, toPath: sb.db)
        let before = try String(contentsOf: fixtures.appendingPathComponent("schema-v1.json"), encoding: .utf8)
        expectOK(sb.rtdb("get", "/"), before)
        expectOK(sb.rtdb("get", "/", "--export"), before.replacingOccurrences(of: #"["a","b"]"#, with: #"{"0":"a","1":"b"}"#))
        expectLines(sb.rtdb("query", "/users", "--order-by-priority", "--limit-to-first", "1"), [#"{"key":"alice","value":{"age":30,"name":"Alice"}}"#])
        expectOK(sb.rtdb("-q", "set", "/users/alice/.priority", "9"), "")
        expectOK(sb.rtdb("get", "/"), before)
        expectLines(sb.rtdb("query", "/users", "--order-by-priority", "--limit-to-last", "1"), [#"{"key":"alice","value":{"age":30,"name":"Alice"}}"#])
        let version = sb.program(["sqlite3", sb.db, "PRAGMA user_version"])
        #expect(version.stdout == "5\n", "\(version)")
    }
}
