import Foundation
import Testing

@Suite struct IndexCommandTests {
    @Test func indexesAreAddedListedUsedAndRemoved() {
        let sb = Sandbox()
        sb.seed("/users", #"{"a":{"age":30},"b":{"age":25},"c":{"age":41},"d":{"name":"no age"}}"#)
        expectLines(sb.rtdb("index", "list"), [])
        expectLines(sb.rtdb("index", "add", "/users", "age"), [#"{"path":"/users","child":"age","added":true}"#])
        expectLines(sb.rtdb("index", "add", "/users/", "age"), [#"{"path":"/users","child":"age","added":false}"#])
        expectLines(sb.rtdb("index", "add", "/rooms/$room/messages", ".value"),
                    [#"{"path":"/rooms/$room/messages","child":".value","added":true}"#])
        expectLines(sb.rtdb("index", "list"), [#"{"path":"/users","child":"age"}"#, #"{"path":"/rooms/$room/messages","child":".value"}"#])
        // Writes after the index keep it exact.
        expectOK(sb.rtdb("-q", "set", "/users/b/age", "50"), "")
        expectOK(sb.rtdb("-q", "push", "/users", #"{"age":1}"#), "")
        expectOK(sb.rtdb("-q", "set", "/rooms/r1/messages", #"{"m1":"b","m2":"a","m3":"c"}"#), "")
        let q = sb.rtdb("query", "/users", "--order-by-child", "age", "--limit-to-last", "2")
        expectLines(q, [#"{"key":"c","value":{"age":41}}"#, #"{"key":"b","value":{"age":50}}"#])
        expectLines(sb.rtdb("query", "/users", "--order-by-child", "age", "--start-at", "25", "--end-at", "41"),
                    [#"{"key":"a","value":{"age":30}}"#, #"{"key":"c","value":{"age":41}}"#])
        expectLines(sb.rtdb("query", "/rooms/r1/messages", "--order-by-value", "--limit-to-first", "2"),
                    [#"{"key":"m2","value":"a"}"#, #"{"key":"m1","value":"b"}"#])
        expectLines(sb.rtdb("index", "remove", "/users", "age"), [#"{"path":"/users","child":"age","removed":true}"#])
        expectLines(sb.rtdb("index", "remove", "/users", "age"), [#"{"path":"/users","child":"age","removed":false}"#])
        expectLines(sb.rtdb("index", "list"), [#"{"path":"/rooms/$room/messages","child":".value"}"#])
        // Without the index the same query gives the same answer.
        expectLines(sb.rtdb("query", "/users", "--order-by-child", "age", "--limit-to-last", "2"),
                    [#"{"key":"c","value":{"age":41}}"#, #"{"key":"b","value":{"age":50}}"#])
    }

    @Test func badIndexArgumentsAreRefusedAndChangeNothing() {
        let sb = Sandbox()
        sb.seed("/a", "1")
        expectError(sb.rtdb("index"), status: 2, code: "usage")
        expectError(sb.rtdb("index", "frob"), status: 2, code: "usage")
        expectError(sb.rtdb("index", "add", "/users"), status: 2, code: "usage")
        expectError(sb.rtdb("index", "list", "/x"), status: 2, code: "usage")
        expectError(sb.rtdb("index", "add", "/a/$", "x"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("index", "add", "/a#b", "x"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("index", "add", "/a", ".priority"), status: 3, code: "invalid_path")
        expectLines(sb.rtdb("index", "list"), [])
    }
}
