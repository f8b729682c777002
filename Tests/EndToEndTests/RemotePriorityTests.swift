import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Priorities through `--url`: writes send them, reads that need them ask for them, watches
/// order by them and follow `PATH/.priority`, transactions keep them; the same transcript as
/// on the embedded file, and through the offline cache too.
@Suite struct RemotePriorityTests {
    static let script: [[String]] = [
        ["set", "/tasks", #"{"t1":{".value":"write",".priority":2},"t2":{".value":"a",".priority":1}}"#],
        ["get", "/tasks", "--export"],
        ["query", "/tasks", "--order-by-priority"],
        ["set", "/tasks/t1/.priority", "0"],
        ["push", "/tasks", #"{".value":"p",".priority":0.5}"#],
        ["update", "/tasks", #"{"t2/.priority":-1,"t3":{"x":1,".priority":"s"}}"#],
        ["set", "/tasks/t1", #""x""#],
        ["tx", "/tasks/t3", "--", "jq", "-c", ".x += 1"],
        ["get", "/tasks/t3/.priority"],
        ["tx", "/tasks/t2", "--", "jq", "-c", #"{".value": ., ".priority": 9}"#],
        ["query", "/tasks", "--order-by-priority"],
        ["query", "/tasks", "--order-by-priority", "--limit-to-last", "2"],
        ["query", "/tasks", "--order-by-priority", "--start-at", "0", "--end-at", "9"],
        ["get", "/tasks", "--export"],
    ]

    static let watches: [[String]] = [
        ["watch", "/tasks", "--order-by-priority", "--child-events"],
        ["watch", "/tasks/t1/.priority"],
        ["watch", "/tasks", "--order-by-priority", "--limit-to-first", "2", "--child-events"],
    ]

    struct Transcript: Equatable {
        var steps: [String]
        var watches: [String]
    }

    /// Runs the script with `target` prepended, the watches alongside.
    func session(_ s: Sandbox, _ target: [String]) throws -> Transcript {
        let watching = try RemotePriorityTests.watches.enumerated().map { i, w in
            try #require(s.background([Binary.rtdb] + target + w, name: "watch\(i)"))
        }
        defer { for w in watching { w.killGroup() } }
        // The priority watch prints its first value at once; the others have nothing to show yet.
        #expect(eventually(30) { watching[1].stdout.contains("value") }, "\(watching[1].stderr)")
        usleep(300_000)
        var lines: [String] = []
        for step in RemotePriorityTests.script {
            let r = s.rtdb(target + step)
            lines.append("\(step.joined(separator: " ")) => \(r.status) \(SameOutputTests.mask(r.stdout))")
            usleep(150_000)
        }
        usleep(700_000)
        return Transcript(steps: lines, watches: watching.map { SameOutputTests.mask($0.stdout) })
    }

    @Test func throughURLAsOnTheEmbeddedFile() throws {
        let embedded = try session(Sandbox(), [])
        let remote = Sandbox()
        let server = try #require(ServeProcess(remote))
        let overHTTP = try session(remote, ["--url", remoteURL(server)])
        #expect(embedded.steps.count == RemotePriorityTests.script.count)
        for (a, b) in zip(embedded.steps, overHTTP.steps) { #expect(a == b) }
        for (a, b) in zip(embedded.watches, overHTTP.watches) { #expect(a == b) }
        // What the file does is what Firebase does: priorities kept, priority order.
        #expect(overHTTP.steps[1].hasSuffix(#"{"t1":{".value":"write",".priority":2},"t2":{".value":"a",".priority":1}}"# + "\n"))
        #expect(overHTTP.steps[2].contains(#"{"key":"t2","value":"a"}"# + "\n" + #"{"key":"t1","value":"write"}"#))
        #expect(overHTTP.steps[8].hasSuffix(#"=> 0 "s""# + "\n"), "tx keeps the node's priority: \(overHTTP.steps[8])")
        #expect(overHTTP.steps[13].hasSuffix(#"{"<push-id>":{".value":"p",".priority":0.5},"t1":"x","t2":{".value":"a",".priority":9},"t3":{"x":2,".priority":"s"}}"# + "\n"),
                "\(overHTTP.steps[13])")
        #expect(overHTTP.watches[1] == ["null", "2", "0", "null"].map { #"{"event":"value","path":"/tasks/t1/.priority","value":\#($0)}"# + "\n" }.joined(),
                "\(overHTTP.watches[1])")
        #expect(overHTTP.watches[0].contains(#"{"event":"child_moved","path":"/tasks","key":"t1","prev":null,"value":"write"}"#),
                "\(overHTTP.watches[0])")
    }

    /// Transactions racing on a node with a priority (412 answers carry none) still keep it.
    @Test func racingTransactionsKeepThePriority() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let url = remoteURL(server)
        expectOK(s.rtdb("--url", url, "-q", "set", "/c", #"{".value":0,".priority":"keep"}"#), "")
        let script = "for i in 1 2 3 4 5; do \"$RTDB\" --url '\(url)' tx /c -q -- sh -c 'read n; echo $((n+1))' || exit 1; done"
        let children = (0..<4).compactMap { s.background(["sh", "-c", script], name: "tx\($0)") }
        #expect(children.count == 4)
        for c in children { #expect(c.wait(timeout: 60) == 0, "\(c.stderr)") }
        expectLines(s.rtdb("--url", url, "get", "/c", "--export"), [#"{".value":20,".priority":"keep"}"#])
    }

    /// `get` and `watch` of PATH/.priority through the cache read (and cache) the node and print
    /// its priority: the server's changes, then a queued one.
    @Test func aPriorityWatchThroughTheCache() throws {
        let s = Sandbox()
        let serverFile = s.dir + "/S.db"
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/t", #"{"a":{".value":1,".priority":3}}"#), "")
        let server = try #require(ServeProcess(s, ["--db", serverFile]))
        let r = ["--url", remoteURL(server), "--cache", s.dir + "/C.db"]
        // A read of a priority reads (and caches) its node: offline it is known too.
        let fresh = ["--url", remoteURL(server), "--cache", s.dir + "/F.db"]
        expectLines(s.rtdb(fresh + ["get", "/t/a/.priority"]), ["3"])
        expectLines(s.rtdb(fresh + ["--offline", "get", "/t/a/.priority"]), ["3"])
        let w = try #require(s.background([Binary.rtdb] + r + ["watch", "/t/a/.priority"], name: "priority"))
        defer { w.killGroup() }
        let line = { (v: String) in #"{"event":"value","path":"/t/a/.priority","value":\#(v)}"# + "\n" }
        #expect(eventually(30) { w.stdout == line("3") }, "\(w.stdout) \(w.stderr)")
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/t/a/.priority", "7"), "")
        #expect(eventually(30) { w.stdout == line("3") + line("7") }, "\(w.stdout) \(w.stderr)")
        #expect(s.rtdb(r + ["--offline", "set", "/t/a/.priority", #""q""#]).status == 0)
        #expect(eventually(30) { w.stdout == line("3") + line("7") + line(#""q""#) }, "\(w.stdout) \(w.stderr)")
    }

    /// Through the offline cache: a queued write keeps its priorities when it is sent, the
    /// cache holds them (`get --export`, priority order offline), and a watch of the cache
    /// orders by them.
    @Test func throughTheOfflineCache() throws {
        let s = Sandbox()
        let serverFile = s.dir + "/S.db"
        let srv = try #require(RestartableServer(s, file: serverFile))
        func r(_ args: [String]) -> RunResult { s.rtdb(["--url", srv.url, "--cache", s.dir + "/C.db"] + args, timeout: 60) }
        srv.kill9()
        let queued = r(["set", "/p", #"{"a":{".value":1,".priority":3},"b":{".value":2,".priority":1},"c":{"x":3,".priority":2}}"#])
        #expect(queued.status == 0 && queued.stdout.contains(#""queued":true"#), "\(queued)")
        #expect(srv.start())
        #expect(r(["sync"]).status == 0)
        expectLines(s.rtdb("--db", serverFile, "get", "/p", "--export"),
                    [#"{"a":{".value":1,".priority":3},"b":{".value":2,".priority":1},"c":{"x":3,".priority":2}}"#])
        // Read once from the server (stored with its priorities), then offline.
        expectLines(r(["query", "/p", "--order-by-priority"]),
                    [#"{"key":"b","value":2}"#, #"{"key":"c","value":{"x":3}}"#, #"{"key":"a","value":1}"#])
        srv.kill9()
        expectLines(r(["--offline", "get", "/p", "--export"]),
                    [#"{"a":{".value":1,".priority":3},"b":{".value":2,".priority":1},"c":{"x":3,".priority":2}}"#])
        expectLines(r(["--offline", "get", "/p"]), [#"{"a":1,"b":2,"c":{"x":3}}"#])
        expectLines(r(["--offline", "query", "/p", "--order-by-priority", "--limit-to-last", "2"]),
                    [#"{"key":"c","value":{"x":3}}"#, #"{"key":"a","value":1}"#])
        expectLines(r(["--offline", "watch", "/p", "--order-by-priority", "--child-events", "--count", "3"]), [
            #"{"event":"child_added","path":"/p","key":"b","prev":null,"value":2}"#,
            #"{"event":"child_added","path":"/p","key":"c","prev":"b","value":{"x":3}}"#,
            #"{"event":"child_added","path":"/p","key":"a","prev":"c","value":1}"#,
        ])
        // A queued priority write shows in the cache at once.
        #expect(r(["--offline", "set", "/p/a/.priority", "0"]).status == 0)
        expectLines(r(["--offline", "get", "/p/a/.priority"]), ["0"])
        expectLines(r(["--offline", "get", "/p", "--export"]),
                    [#"{"a":{".value":1,".priority":0},"b":{".value":2,".priority":1},"c":{"x":3,".priority":2}}"#])
    }
}
