import Testing
import RTDBCore
@testable import RTDBEngine

/// A streamed import stores what `set`/`update` of the parsed value store, and fails as they
/// fail: every case runs both ways on two files holding the same data, with windows small
/// enough that the objects are walked key by key, and the files must end up identical.
@Suite struct StreamImportTests {
    static let before = #"{"n":5,"target":{"old":1,"keep":{".value":2,".priority":7}},"leafy":3,"list":{"a":{"score":3},"b":{"score":1}}}"#
    /// Every scalar, key and server value of the cases fits in the smallest (as any fits in the
    /// default window); the objects do not.
    static let windows = [48, 256, JSONStreamReader.defaultWindow]

    /// Both files after one write: the export of the whole tree, or the error.
    struct Outcome: Equatable, CustomStringConvertible {
        var stored: String
        var error: String?
        var description: String { error.map { "error \($0)" } ?? stored }
    }

    func prepared() throws -> TempDatabase {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(StreamImportTests.before))
        return t
    }

    func outcome(_ t: TempDatabase, _ body: () throws -> Void) throws -> Outcome {
        var error: String? = nil
        do { try body() } catch let e as RTDBError { error = "\(e.code.rawValue): \(e.message)" }
        return Outcome(stored: JSONWriter.string(try t.db.export(.root), export: true), error: error)
    }

    /// `set` of the parsed text, checked as the CLI checks it.
    func inMemorySet(_ text: String, at p: Path) throws -> Outcome {
        let t = try prepared()
        return try outcome(t) {
            let v = try JSONReader.parse(text)
            try WriteCheck.value(v, at: p)
            _ = try t.db.set(p, v)
        }
    }

    func inMemoryUpdate(_ text: String, at p: Path) throws -> Outcome {
        let t = try prepared()
        return try outcome(t) {
            guard let raw = try JSONReader.parseEntries(text) else {
                throw RTDBError(.invalidData, "update needs a JSON object of relative paths")
            }
            _ = try t.db.update(p, try WriteCheck.update(raw, at: p))
        }
    }

    /// A source the importer cannot read in place: the text goes through the reader's window.
    final class CopiedSource: ByteSource {
        let inner: BytesSource
        init(_ text: String) { inner = BytesSource(Array(text.utf8)) }
        var size: Int64? { inner.size }
        func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws -> Int { try inner.read(into: buffer, count: count) }
    }

    /// Through the window (`inPlace` false) or read in place as a request body is.
    func streamed(_ text: String, at p: Path, _ kind: ImportKind, window: Int, inPlace: Bool) throws -> Outcome {
        let t = try prepared()
        return try outcome(t) {
            let source: ByteSource = inPlace ? BytesSource(Array(text.utf8)) : CopiedSource(text)
            _ = try t.db.importJSON(p, from: source, as: kind, window: window)
        }
    }

    func check(_ text: String, at p: String = "/target", _ kind: ImportKind = .set, windows: [Int] = StreamImportTests.windows,
               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let at = path(p)
        let expected = kind == .set ? try inMemorySet(text, at: at) : try inMemoryUpdate(text, at: at)
        for w in windows {
            for inPlace in [false, true] {
                let got = try streamed(text, at: at, kind, window: w, inPlace: inPlace)
                #expect(got == expected, "window \(w)\(inPlace ? " in place" : ""): \(text)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func valuesInNormalForm() throws {
        try check(#"{"b":1,"a":{"x":[1,2,null,3],"y":true,"z":"text"},"c":null,"d":{},"e":[],"f":-1.5e-7}"#)
        try check(#"{"a":[[1,[2,{"q":[null,null]}]],{"b":[]}],"s":"a string of forty bytes, more or less"}"#)
        try check(#"{"é":1,"\uE000x":2,"日本":3,"\\\"q":4,"10":1,"9":2,"007":3,"-1":4,"a\u00e9":5}"#)
        try check(#""just a string""#)
        try check("42")
        try check("null")
        try check("[]")
        try check(#"  [1,2]  "#, at: "/")
        try check(#"{"x":{"y":{"z":1}}}"#, at: "/leafy/deeper")
        try check(#"{"n":{"deep":1},"other":2}"#, at: "/")
    }

    @Test func repeatedKeysKeepTheLastValue() throws {
        try check(#"{"a":{"x":1,"y":2},"b":1,"a":{"z":3}}"#)
        try check(#"{"a":1,"a":null}"#)
        try check(#"{"k":{"p":{"q":1}},"k":{"p":{"r":2}},"k":{"p":{"s":[1,2,3,4,5,6]}}}"#)
        try check(#"{"z":1,"a":2,"m":{"x":1,"x":{"w":2}},"b":3,"a":4}"#)
        try check(#"{"p":{"a":1,".priority":3},"p":{"b":2}}"#)
    }

    @Test func priorities() throws {
        try check(#"{".priority":1,"a":{".value":5,".priority":"x"},"b":{"c":1,"d":{"e":2},".priority":2.5}}"#)
        try check(#"{".value":{"a":1,"bb":{"c":[1,2,3]},".priority":9},".priority":3}"#)
        try check(#"{".priority":1}"#)
        try check(#"{"a":{".priority":5,"b":null},"c":{".value":null,".priority":1}}"#)
        try check(#"{"a":{"b":1,"c":2,".priority":null},".priority":"top","keep":{".value":2}}"#)
        try check(#"{"a":{"b":1,".priority":true}}"#)
        try check(#"{"a":{"b":1,"c":2,"d":3,".priority":{"x":1}}}"#)
        try check(#"{"a":{"b":1,".value":2}}"#)
        try check(#"{"a":{".value":2,"b":1}}"#)
        try check(#"{"a":{".value":1,".value":{"q":2,"r":3}}}"#)
    }

    @Test func serverValues() throws {
        try check(#"{"t":{".sv":"timestamp"},"n":{".sv":{"increment":2}},"m":{".sv":{"increment":1.5}}}"#, at: "/")
        try check(#"{"old":{".sv":{"increment":10}},"x":{"y":{".sv":"timestamp"}}}"#)
        try check(#"{"a":{"b":1,"c":[1,2],".priority":{".sv":"timestamp"}}}"#)
        try check(#"{"a":{".sv":"timestamp","b":1}}"#)
        try check(#"{"a":{"b":{"c":1},".sv":"timestamp"}}"#)
        try check(#"{"a":{".sv":"nope"}}"#)
        try check(#"{"a":{".sv":{"increment":"x"}}}"#)
    }

    @Test func limitsAndBadData() throws {
        try check(#"{"a":{"b.c":1}}"#)
        try check(#"{"a":{"bb":{"$x":1}},"c":2}"#)
        try check(#"{"a":{"":1}}"#)
        try check(#"{"a":{"b":1,"c\u0001":2}}"#)
        let deep = String(repeating: #"{"k":"#, count: 33) + "1" + String(repeating: "}", count: 33)
        try check(deep)
        let deepWide = String(repeating: #"{"a":1,"k":"#, count: 33) + "1" + String(repeating: "}", count: 33)
        try check(deepWide)
        try check(#"{"a":123456789012345678901234567890,"b":-0.0,"c":1e300}"#)
        try check(#"{"a":1,"c":1e400}"#)
        try check(#"{"a":"\ud800"}"#)
        let key = String(repeating: "k", count: 769)
        try check("{\"\(key)\":1,\"b\":{\"c\":1}}", windows: [2048, JSONStreamReader.defaultWindow])
        // A server value spread wider than the window is still one.
        try check(#"{"a":{  ".sv"  :  "timestamp"               },"b":{"c":{".sv":   {"increment":   3   }}}}"#, windows: [24, 256])
    }

    @Test func invalidJSONAnywhereWinsAndLeavesNothing() throws {
        try check(#"{"a":1,"b":[1,2,}"#)
        try check(#"{"a.":1,"b":{"c":2,"d":3},"e": }"#)
        try check(#"{"a":{"$b":1,"c":[1,2,3,4,5,6,7,8,9]}} x"#)
        try check(#"{"a":{"b":1,"c":2}"#)
        try check(#"{"a":{"b":1,"c":2}}}"#)
        try check(#"{"a":{"b":1 "c":2}}"#)
        try check(#"{"a":tru}"#)
        try check(#"{"a":[1,2,3,4,5,6,7,8,9,10,11,12,13,14"#)
        try check("")
        try check("   ")
        try check(#"{"a":"unterminated string that is long"#)
        try check(#"{"a":01}"#)
    }

    @Test func updates() throws {
        try check(#"{"a/b":1,"c":{"d":2,"e":[1,2]},"n":{".sv":{"increment":1}},"target/old":null}"#, at: "/", .update)
        try check(#"{"a":1,"a/b":2}"#, at: "/", .update)
        try check(#"{"a":1,"a":2}"#, at: "/", .update)
        try check(#"{"target/keep/.priority":5,"target/new":{"y":1},"x/.priority":3}"#, at: "/", .update)
        try check(#"{"target":null,"leafy/x":{"y":[1,2,3]}}"#, at: "/", .update)
        try check(#"[1,2]"#, at: "/", .update)
        try check("5", at: "/", .update)
        try check(#"{"a//b":1}"#, at: "/", .update)
        try check(#"{"":1}"#, at: "/", .update)
        try check(#"{"a.b":1}"#, at: "/", .update)
        try check(#"{}"#, at: "/target", .update)
        try check(#"{"keep":{"z":1},"old":{".sv":{"increment":2}}}"#, at: "/target", .update)
        try check(#"{"a":{"b":1},"c":[1,}"#, at: "/", .update)
    }

    @Test func indexesFollowAStreamedImport() throws {
        let ix = try IndexDefinition(location: "/list", child: "score")
        let query = Query(order: .child(path("score")), limit: .first(2))
        for doc in [#"{"c":{"score":0},"d":{"score":9},"a":{"score":5}}"#] {
            let a = try prepared(), b = try prepared()
            _ = try a.db.addIndex(ix)
            _ = try b.db.addIndex(ix)
            _ = try a.db.set(path("/list"), json(doc))
            _ = try b.db.importJSON(path("/list"), from: BytesSource(Array(doc.utf8)), as: .set, window: 16)
            #expect(entries(try b.db.query(path("/list"), query)) == entries(try a.db.query(path("/list"), query)))
            _ = try a.db.set(path("/"), json(#"{"list":{"x":{"score":4}}}"#))
            _ = try b.db.importJSON(.root, from: BytesSource(Array(#"{"list":{"x":{"score":4}}}"#.utf8)), as: .set, window: 16)
            #expect(entries(try b.db.query(path("/list"), query)) == entries(try a.db.query(path("/list"), query)))
        }
    }

    @Test func theChangeFeedRecordsTheWriteWithoutItsData() throws {
        let t = try prepared()
        let before = try t.db.latestSeq()
        _ = try t.db.importJSON(path("/target"), from: BytesSource(Array(#"{"a":1}"#.utf8)), as: .set, window: 16)
        let feed = try t.db.feed(after: before)
        #expect(feed.entries.count == 1)
        #expect(feed.entries.first?.exact == false)
        if let first = feed.entries.first, case .set(let p, let v)? = try t.db.change(of: first) {
            #expect(p.description == "/target")
            #expect(JSONWriter.string(v) == #"{"a":1}"#)
        } else {
            Issue.record("expected a set")
        }
    }

    func entries(_ entries: [Node.Entry]) -> String {
        entries.map { "\($0.key)=\(JSONWriter.string($0.node))" }.joined(separator: ",")
    }
}
