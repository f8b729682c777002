import Testing
import RTDBCore

private func p(_ s: String) -> Path { (try? Path(s)) ?? .root }
private func v(_ json: String) -> Node { (try? JSONReader.parse(json)) ?? .string("<<invalid test JSON>>") }

/// The stored writes as `path=json` lines, in path order.
private func dump(_ d: DisconnectWrites) -> [String] {
    d.update.map { "/" + $0.path.keys.joined(separator: "/") + "=" + JSONWriter.string($0.value, export: true) }
}

/// One operation of a session: set, update (relative paths), cancel.
enum DisconnectOp: Sendable {
    case set(String, String)
    case update(String, [(String, String)])
    case cancel(String)
}

private func run(_ ops: [DisconnectOp]) -> [String] {
    var d = DisconnectWrites()
    for op in ops {
        switch op {
        case .set(let path, let json): d.set(p(path), v(json))
        case .update(let base, let list): d.update(p(base), list.map { (path: p($0.0), value: v($0.1)) })
        case .cancel(let path): d.cancel(p(path))
        }
    }
    return dump(d)
}

@Suite("onDisconnect writes kept per session")
struct DisconnectWritesTests {
    @Test("sets: a new path, the same path again, a descendant of a stored one, an ancestor of stored ones", arguments: [
        ([DisconnectOp.set("/a", "1")], ["/a=1"]),
        ([.set("/a", "1"), .set("/a", "2")], ["/a=2"]),
        ([.set("/a", #"{"x":1}"#), .set("/a/y", "2")], [#"/a={"x":1,"y":2}"#]),
        ([.set("/a", #"{"x":1,"y":2}"#), .set("/a/y", "null")], [#"/a={"x":1}"#]),
        ([.set("/a/b", "1"), .set("/a/c", "2"), .set("/a", "3")], ["/a=3"]),
        ([.set("/a/b", "1"), .set("/z", "2"), .set("/a/b/c", "4")], [#"/a/b={"c":4}"#, "/z=2"]),
        ([.set("/a", "null"), .set("/a/k", "1")], [#"/a={"k":1}"#]),
        ([.set("/a", #"{"x":{".sv":"timestamp"}}"#)], [#"/a={"x":{".sv":"timestamp"}}"#]),
        ([.set("/", #"{"r":1}"#), .set("/s", "2")], [#"/={"r":1,"s":2}"#]),
    ])
    func sets(ops: [DisconnectOp], expected: [String]) {
        #expect(run(ops) == expected)
    }

    @Test("an update stores each of its paths as its own set", arguments: [
        ([DisconnectOp.update("/u", [("x", "1"), ("y/z", "2")])], ["/u/x=1", "/u/y/z=2"]),
        ([.update("/u", [("x", "1"), ("y", "null")]), .set("/u", "0")], ["/u=0"]),
        ([.set("/u", #"{"x":1,"y":2}"#), .update("/u", [("y", "3"), ("w", "4")])], [#"/u={"w":4,"x":1,"y":3}"#]),
        ([.update("/", [("connections/c1", "true"), ("lastOnline", #"{".sv":"timestamp"}"#)])],
         ["/connections/c1=true", #"/lastOnline={".sv":"timestamp"}"#]),
    ])
    func updates(ops: [DisconnectOp], expected: [String]) {
        #expect(run(ops) == expected)
    }

    @Test("cancel: the path and below; a stored ancestor is split so its siblings still run", arguments: [
        ([DisconnectOp.set("/a", "1"), .cancel("/a")], [String]()),
        ([.set("/a/b", "1"), .set("/a/c", "2"), .set("/d", "3"), .cancel("/a")], ["/d=3"]),
        ([.set("/a", "1"), .cancel("/b")], ["/a=1"]),
        ([.set("/a", "1"), .set("/b", "2"), .cancel("/")], []),
        // Splitting a stored ancestor: /a holds x and y; cancelling /a/y leaves x alone.
        ([.set("/a", #"{"x":1,"y":2}"#), .cancel("/a/y")], ["/a/x=1"]),
        // Several levels deep: the split repeats down to the cancelled path.
        ([.set("/a", #"{"x":1,"y":{"z":2,"w":3}}"#), .cancel("/a/y/z")], ["/a/x=1", "/a/y/w=3"]),
        // Cancelling below a stored object's absent child changes nothing it would write.
        ([.set("/a", #"{"x":1}"#), .cancel("/a/q")], ["/a/x=1"]),
        // A stored primitive cannot be split: it stays.
        ([.set("/a", "\"offline\""), .cancel("/a/b")], [#"/a="offline""#]),
        // A stored delete has no children to keep: it is dropped.
        ([.set("/a", "null"), .cancel("/a/b")], []),
        // Cancel, then register again.
        ([.set("/a", "1"), .cancel("/a"), .set("/a", "2")], ["/a=2"]),
    ])
    func cancels(ops: [DisconnectOp], expected: [String]) {
        #expect(run(ops) == expected)
    }

    @Test("a stored object with a priority is split too (its priority goes, as in the SDKs)")
    func prioritizedSplit() {
        #expect(run([.set("/a", #"{"x":1,"y":2,".priority":5}"#), .cancel("/a/y")]) == ["/a/x=1"])
        #expect(run([.set("/a", #"{".value":"s",".priority":5}"#), .cancel("/a/y")]) == [#"/a={".value":"s",".priority":5}"#])
    }

    @Test("the writes come out in path order, as one update")
    func order() {
        var d = DisconnectWrites()
        #expect(d.isEmpty)
        d.set(p("/z"), v("1"))
        d.set(p("/a/b"), v("2"))
        d.set(p("/m"), v("3"))
        d.set(p("/a"), v(#"{"c":4}"#))
        #expect(!d.isEmpty)
        #expect(dump(d) == [#"/a={"c":4}"#, "/m=3", "/z=1"])
        #expect(d.entries.count == 3)
    }
}
