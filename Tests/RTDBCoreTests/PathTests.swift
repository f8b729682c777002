import Testing
@testable import RTDBCore

@Suite("Path")
struct PathTests {
    @Test("normalisation drops leading, trailing and doubled slashes", arguments: [
        ("/a//b/", "/a/b", ["a", "b"]),
        ("a/b", "/a/b", ["a", "b"]),
        ("/", "/", []),
        ("", "/", []),
        ("//", "/", []),
        ("///a", "/a", ["a"]),
        ("a", "/a", ["a"]),
        ("a///", "/a", ["a"]),
        ("/users/jack/name", "/users/jack/name", ["users", "jack", "name"]),
        ("/-Nx3abc/x", "/-Nx3abc/x", ["-Nx3abc", "x"]),
        ("/ a /b c", "/ a /b c", [" a ", "b c"]),
        ("/0/-0/07", "/0/-0/07", ["0", "-0", "07"]),
        ("/😀/日本", "/😀/日本", ["😀", "日本"]),
        ("/a\u{80}b", "/a\u{80}b", ["a\u{80}b"]),           // C1 characters are not forbidden
        ("/~!@%^&*()+=,;:'\"<>?\\|`{}", "/~!@%^&*()+=,;:'\"<>?\\|`{}", ["~!@%^&*()+=,;:'\"<>?\\|`{}"]),
    ])
    func normalise(text: String, printed: String, keys: [String]) throws {
        let p = try Path(text)
        #expect(p.description == printed)
        #expect(p.keys == keys)
        #expect(p.count == keys.count)
        #expect(p.isRoot == keys.isEmpty)
    }

    @Test("segments keep their bytes")
    func bytes() throws {
        let a = try Path("/\u{E9}"), b = try Path("/e\u{301}")
        #expect(Array(a.keys[0].utf8) == [0xC3, 0xA9])
        #expect(Array(b.keys[0].utf8) == [0x65, 0xCC, 0x81])
        #expect(!a.same(as: b))
        #expect(!a.contains(b))
    }

    @Test("forbidden characters are invalid_path", arguments: [".", "$", "#", "[", "]"])
    func forbidden(ch: String) {
        for text in ["/a\(ch)b", "\(ch)", "/x/\(ch)", "/\(ch)a/b", "/a/b\(ch)"] {
            #expect(errorCode { _ = try Path(text) } == .invalidPath, "\(text)")
        }
    }

    @Test("control characters are invalid_path", arguments: [
        "\u{0}", "\u{1}", "\u{8}", "\t", "\n", "\r", "\u{1B}", "\u{1F}", "\u{7F}",
    ])
    func controls(ch: String) {
        #expect(errorCode { _ = try Path("/a\(ch)b") } == .invalidPath)
        #expect(errorCode { _ = try Path("/x/\(ch)") } == .invalidPath)
    }

    @Test("the error message names the path")
    func message() {
        do {
            _ = try Path("/a/b.c")
            Issue.record("expected an error")
        } catch let e as RTDBError {
            #expect(e.code == .invalidPath)
            #expect(e.message.contains("/a/b.c"))
        } catch { Issue.record("\(error)") }
    }

    @Test("segment length: 768 bytes ok, 769 invalid")
    func segmentLength() throws {
        let ok = String(repeating: "a", count: 768)
        #expect(try Path("/x/\(ok)").keys[1] == ok)
        #expect(errorCode { _ = try Path("/x/\(ok)a") } == .invalidPath)
        let twoByte = String(repeating: "é", count: 384)   // 768 bytes
        #expect(errorCode { _ = try Path("/\(twoByte)") } == nil)
        #expect(errorCode { _ = try Path("/\(twoByte)a") } == .invalidPath)
    }

    @Test(".info is allowed only as the first segment")
    func info() throws {
        let p = try Path("/.info/connected")
        #expect(p.keys == [".info", "connected"])
        #expect(p.isInfo)
        #expect(try Path(".info").isInfo)
        #expect(try Path("/.info/").description == "/.info")
        #expect(try Path("/.info/serverTimeOffset").isInfo)
        #expect(try !Path("/info").isInfo)
        #expect(try !Path("/a").isInfo)
        #expect(!Path.root.isInfo)
        for bad in ["/a/.info", "/.info/.info", "/.infox", "/.Info", "/x.info", "/.info/a.b", "/.info/a/.info"] {
            #expect(errorCode { _ = try Path(bad) } == .invalidPath, "\(bad)")
        }
    }

    @Test("depth: 32 segments ok, 33 refused")
    func depth() throws {
        let ok = (1...32).map { "k\($0)" }.joined(separator: "/")
        #expect(try Path(ok).count == 32)
        let deep = ok + "/k33"
        // The contract only says "at most 32 levels"; either data-rule code is acceptable here.
        let code = errorCode { _ = try Path(deep) }
        #expect(code == .invalidPath || code == .tooDeep)
    }

    @Test("root")
    func root() {
        #expect(Path.root.isRoot)
        #expect(Path.root.description == "/")
        #expect(Path.root.parent == nil)
        #expect(Path.root.last == nil)
        #expect(Path.root.count == 0)
    }

    @Test("parent, last, appending")
    func navigation() throws {
        let p = try Path("/a/b/c")
        #expect(p.last == "c")
        #expect(p.parent?.description == "/a/b")
        #expect(p.parent?.parent?.parent?.description == "/")
        #expect(p.parent?.parent?.parent?.isRoot == true)
        #expect(p.appending("d").description == "/a/b/c/d")
        #expect(p.appending(try Path("x/y")).description == "/a/b/c/x/y")
        #expect(Path.root.appending("a").description == "/a")
        #expect(p.appending(Path.root).description == "/a/b/c")
    }

    @Test("contains is segment-wise", arguments: [
        ("/a", "/a/b", true), ("/a", "/a", true), ("/", "/a/b", true), ("/", "/", true),
        ("/a", "/ab", false), ("/a/b", "/a", false), ("/a/b", "/a/c", false), ("/a", "/b/a", false),
        ("/a/b", "/a/b/c/d", true),
    ])
    func contains(a: String, b: String, expected: Bool) throws {
        #expect(try Path(a).contains(try Path(b)) == expected)
    }

    @Test("relative")
    func relative() throws {
        #expect(try Path("/a").relative(try Path("/a/b/c"))?.description == "/b/c")
        #expect(try Path("/a").relative(try Path("/a"))?.isRoot == true)
        #expect(try Path("/").relative(try Path("/x"))?.description == "/x")
        #expect(try Path("/a").relative(try Path("/b/c")) == nil)
        #expect(try Path("/a/b").relative(try Path("/a")) == nil)
    }

    @Test("same(as:)")
    func same() throws {
        #expect(try Path("/a//b").same(as: try Path("a/b/")))
        #expect(try !Path("/a/b").same(as: try Path("/a")))
        #expect(try !Path("/a").same(as: try Path("/a/b")))
        #expect(Path.root.same(as: try Path("//")))
    }

    @Test("path order is segment-wise key order, a prefix first", arguments: [
        ("/", "/a"), ("/a", "/a/b"), ("/a/b", "/b"), ("/9", "/10"), ("/a/9", "/a/10"),
        ("/a/z", "/b/a"), ("/0", "/-0"), ("/a/b", "/a/b/0"), ("/\u{1F600}", "/\u{FF61}"),
        ("/a", "/a-"),    // "a" < "a-" as keys, not '/' vs '-' as characters
    ])
    func order(a: String, b: String) throws {
        #expect(PathOrder.compare(try Path(a), try Path(b)) < 0)
        #expect(PathOrder.compare(try Path(b), try Path(a)) > 0)
        #expect(PathOrder.compare(try Path(a), try Path(a)) == 0)
    }
}
