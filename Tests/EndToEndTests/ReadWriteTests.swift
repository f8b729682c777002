import Foundation
import Testing

/// get, get --shallow, set (every value source), update, remove: exact output shapes.
@Suite struct ReadWriteTests {
    @Test func getOfMissingPathPrintsNull() {
        let sb = Sandbox()
        expectOK(sb.rtdb("get", "/"), "null\n")
        expectOK(sb.rtdb("get", "/nothing/here"), "null\n")
        expectOK(sb.rtdb("get", "/nothing", "--shallow"), "null\n")
        #expect(!sb.exists(sb.db), "a read must not create the database file")
    }

    @Test func setPrintsPathAndStoredValueAndGetReadsItBack() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/greeting", "\"hello\""), "{\"path\":\"/greeting\",\"value\":\"hello\"}\n")
        expectOK(sb.rtdb("get", "/greeting"), "\"hello\"\n")
        expectOK(sb.rtdb("set", "/users/alice", "{\"name\":\"Alice\",\"age\":30}"),
                 "{\"path\":\"/users/alice\",\"value\":{\"age\":30,\"name\":\"Alice\"}}\n")
        expectOK(sb.rtdb("get", "/users/alice"), "{\"age\":30,\"name\":\"Alice\"}\n")
        expectOK(sb.rtdb("get", "users/alice/name"), "\"Alice\"\n")
        expectOK(sb.rtdb("get", "/"), "{\"greeting\":\"hello\",\"users\":{\"alice\":{\"age\":30,\"name\":\"Alice\"}}}\n")
        // Every JSON type as a VALUE.
        expectOK(sb.rtdb("set", "/t", "true"), "{\"path\":\"/t\",\"value\":true}\n")
        expectOK(sb.rtdb("set", "/f", "false"), "{\"path\":\"/f\",\"value\":false}\n")
        expectOK(sb.rtdb("set", "/n", "-12.5"), "{\"path\":\"/n\",\"value\":-12.5}\n")
        expectOK(sb.rtdb("get", "/t"), "true\n")
        expectOK(sb.rtdb("get", "/f"), "false\n")
        expectOK(sb.rtdb("get", "/n"), "-12.5\n")
    }

    @Test func pathsAreNormalisedInOutput() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "a//b/", "1"), "{\"path\":\"/a/b\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "//a/b//"), "1\n")
        // (The root holds data: replacing it needs --force. An empty path is not the root.)
        expectOK(sb.rtdb("set", "/", "{\"r\":1}", "--force"), "{\"path\":\"/\",\"value\":{\"r\":1}}\n")
        expectOK(sb.rtdb("get", "//"), "{\"r\":1}\n")
        expectOK(sb.rtdb("remove", "///", "--force"), "{\"path\":\"/\",\"value\":null}\n")
        expectOK(sb.rtdb("get", "/"), "null\n")
    }

    @Test func setReplacesTheWholeSubtreeAndNullDeletes() {
        let sb = Sandbox()
        sb.seed("/a", "{\"x\":1,\"y\":{\"z\":2}}")
        expectOK(sb.rtdb("set", "/a", "{\"w\":3}"), "{\"path\":\"/a\",\"value\":{\"w\":3}}\n")
        expectOK(sb.rtdb("get", "/a"), "{\"w\":3}\n")
        expectOK(sb.rtdb("set", "/a/w", "null"), "{\"path\":\"/a/w\",\"value\":null}\n")
        expectOK(sb.rtdb("get", "/"), "null\n")
        // Empty objects and arrays store nothing; null children vanish.
        expectOK(sb.rtdb("set", "/e", "{\"a\":{},\"b\":[],\"c\":null,\"d\":1}"), "{\"path\":\"/e\",\"value\":{\"d\":1}}\n")
        expectOK(sb.rtdb("set", "/e", "{}"), "{\"path\":\"/e\",\"value\":null}\n")
        expectOK(sb.rtdb("get", "/e"), "null\n")
    }

    @Test func shallowGet() {
        let sb = Sandbox()
        sb.seed("/", "{\"a\":{\"deep\":{\"x\":1}},\"b\":2,\"c\":\"s\"}")
        expectOK(sb.rtdb("get", "/", "--shallow"), "{\"a\":true,\"b\":true,\"c\":true}\n")
        expectOK(sb.rtdb("get", "/a", "--shallow"), "{\"deep\":true}\n")
        expectOK(sb.rtdb("get", "/b", "--shallow"), "2\n")
        expectOK(sb.rtdb("get", "/c", "--shallow"), "\"s\"\n")
        expectOK(sb.rtdb("get", "--shallow", "/a/deep"), "{\"x\":true}\n")
    }

    @Test func setStringOptionAndShortAlias() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/note", "--string", "two words"), "{\"path\":\"/note\",\"value\":\"two words\"}\n")
        expectOK(sb.rtdb("set", "/note2", "-s", "{\"not\":\"json\"} \"quoted\" \\ back"),
                 "{\"path\":\"/note2\",\"value\":\"{\\\"not\\\":\\\"json\\\"} \\\"quoted\\\" \\\\ back\"}\n")
        expectOK(sb.rtdb("set", "/num", "-s", "42"), "{\"path\":\"/num\",\"value\":\"42\"}\n")
        expectOK(sb.rtdb("get", "/num"), "\"42\"\n")
        expectOK(sb.rtdb("set", "/empty", "--string", ""), "{\"path\":\"/empty\",\"value\":\"\"}\n")
        expectOK(sb.rtdb("get", "/empty"), "\"\"\n")
    }

    @Test func setFromStdin() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/list", "-", stdin: .text("[1,2,3]\n")), "{\"path\":\"/list\",\"value\":[1,2,3]}\n")
        expectOK(sb.rtdb("set", "/obj", "-", stdin: .text("  {\n  \"b\": [true, null],\n  \"a\": \"x\"\n}\n\n")),
                 "{\"path\":\"/obj\",\"value\":{\"a\":\"x\",\"b\":[true]}}\n")
        expectOK(sb.rtdb("get", "/"), "{\"list\":[1,2,3],\"obj\":{\"a\":\"x\",\"b\":[true]}}\n")
    }

    @Test func setFromFile() {
        let sb = Sandbox()
        let file = sb.write("value.json", "{\"from\":\"file\",\"n\":[1,{\"k\":2}]}\n")
        expectOK(sb.rtdb("set", "/f", "--file", file), "{\"path\":\"/f\",\"value\":{\"from\":\"file\",\"n\":[1,{\"k\":2}]}}\n")
        expectOK(sb.rtdb("get", "/f/n/1/k"), "2\n")
    }

    @Test func setServerTimestamp() throws {
        let sb = Sandbox()
        let before = nowMillis()
        let r = sb.rtdb("set", "/seen", "--server-timestamp")
        let after = nowMillis()
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        let line = try #require(object(r.lines.first ?? ""), "\(r)")
        #expect(r.lines.count == 1)
        #expect(line["path"] as? String == "/seen")
        let ts = try #require((line["value"] as? NSNumber)?.int64Value, "\(r)")
        #expect(ts >= before - 1000 && ts <= after + 1000, "timestamp \(ts) not within [\(before), \(after)]")
        #expect(r.stdout == "{\"path\":\"/seen\",\"value\":\(ts)}\n")
        expectOK(sb.rtdb("get", "/seen"), "\(ts)\n")
    }

    @Test func serverValuesInsideAValueResolveAgainstTheOldData() throws {
        let sb = Sandbox()
        sb.seed("/c", "{\"n\":4,\"m\":1}")
        // PUT /c {"n": increment 1} when /c = {n:4, m:1} → {n:5}.
        expectOK(sb.rtdb("set", "/c", "{\"n\":{\".sv\":{\"increment\":1}}}"), "{\"path\":\"/c\",\"value\":{\"n\":5}}\n")
        let r = sb.rtdb("set", "/d", "{\"a\":{\".sv\":\"timestamp\"},\"b\":{\"c\":{\".sv\":\"timestamp\"}}}")
        let line = try #require(object(r.lines.first ?? ""), "\(r)")
        let value = try #require(line["value"] as? [String: Any])
        let a = (value["a"] as? NSNumber)?.int64Value
        let c = ((value["b"] as? [String: Any])?["c"] as? NSNumber)?.int64Value
        #expect(a != nil && a == c, "all timestamps of one write are equal: \(r)")
        #expect(sb.get("/d") == "{\"a\":\(a ?? -1),\"b\":{\"c\":\(a ?? -1)}}")
    }

    @Test func updateIsMultiPathAndLeavesSiblings() {
        let sb = Sandbox()
        sb.seed("/users", "{\"alice\":{\"name\":\"Alice\",\"age\":30,\"nick\":\"al\"},\"bob\":{\"name\":\"Bob\"}}")
        expectOK(sb.rtdb("update", "/", "{\"users/carol/name\":\"Carol\",\"users/alice/age\":31}"),
                 "{\"path\":\"/\",\"value\":{\"users/alice/age\":31,\"users/carol/name\":\"Carol\"}}\n")
        expectOK(sb.rtdb("get", "/users"),
                 "{\"alice\":{\"age\":31,\"name\":\"Alice\",\"nick\":\"al\"},\"bob\":{\"name\":\"Bob\"},\"carol\":{\"name\":\"Carol\"}}\n")
        // A named path is replaced, not merged; null deletes; printed update keeps the null.
        expectOK(sb.rtdb("update", "/users", "{\"alice\":{\"name\":\"A\"},\"bob/name\":null}"),
                 "{\"path\":\"/users\",\"value\":{\"alice\":{\"name\":\"A\"},\"bob/name\":null}}\n")
        expectOK(sb.rtdb("get", "/users"), "{\"alice\":{\"name\":\"A\"},\"carol\":{\"name\":\"Carol\"}}\n")
    }

    @Test func updateResolvesServerValuesInTheOutput() throws {
        let sb = Sandbox()
        sb.seed("/c", "{\"n\":4,\"keep\":true}")
        let before = nowMillis()
        let r = sb.rtdb("update", "/c", "{\"n\":{\".sv\":{\"increment\":2}},\"t\":{\".sv\":\"timestamp\"}}")
        #expect(r.status == 0 && r.stderr.isEmpty && r.lines.count == 1, "\(r)")
        let value = try #require(object(r.lines.first ?? "")?["value"] as? [String: Any], "\(r)")
        let t = try #require((value["t"] as? NSNumber)?.int64Value, "\(r)")
        #expect(t >= before - 1000 && t <= nowMillis() + 1000)
        #expect(r.stdout == "{\"path\":\"/c\",\"value\":{\"n\":6,\"t\":\(t)}}\n")
        #expect(sb.get("/c") == "{\"keep\":true,\"n\":6,\"t\":\(t)}")
    }

    @Test func updateFromStdinAndFile() {
        let sb = Sandbox()
        expectOK(sb.rtdb("update", "/u", "-", stdin: .text("{\"a\":1}")), "{\"path\":\"/u\",\"value\":{\"a\":1}}\n")
        let f = sb.write("upd.json", "{\"b/c\":2}")
        expectOK(sb.rtdb("update", "/u", "--file", f), "{\"path\":\"/u\",\"value\":{\"b/c\":2}}\n")
        #expect(sb.get("/u") == "{\"a\":1,\"b\":{\"c\":2}}")
    }

    @Test func removeDeletesEverythingBelow() {
        let sb = Sandbox()
        sb.seed("/", "{\"posts\":{\"p1\":{\"t\":1},\"p2\":{\"t\":2}},\"keep\":1}")
        expectOK(sb.rtdb("remove", "/posts/p1"), "{\"path\":\"/posts/p1\",\"value\":null}\n")
        expectOK(sb.rtdb("get", "/posts"), "{\"p2\":{\"t\":2}}\n")
        expectOK(sb.rtdb("remove", "/posts"), "{\"path\":\"/posts\",\"value\":null}\n")
        expectOK(sb.rtdb("get", "/"), "{\"keep\":1}\n")
        // Removing what is not there is fine and says so.
        expectOK(sb.rtdb("remove", "/never/was"), "{\"path\":\"/never/was\",\"value\":null}\n")
        expectOK(sb.rtdb("get", "/"), "{\"keep\":1}\n")
    }

    @Test func writesAreSeenByLaterProcessesAtEveryLevel() {
        let sb = Sandbox()
        sb.seed("/a/b/c", "1")
        sb.seed("/a/b/d", "{\"e\":[\"x\",\"y\"]}")
        #expect(sb.get("/a") == "{\"b\":{\"c\":1,\"d\":{\"e\":[\"x\",\"y\"]}}}")
        #expect(sb.get("/a/b/d/e/1") == "\"y\"")
        sb.seed("/a/b", "5")
        #expect(sb.get("/a/b/c") == "null")
        #expect(sb.get("/") == "{\"a\":{\"b\":5}}")
    }

    @Test func writingBelowAPrimitiveReplacesIt() {
        let sb = Sandbox()
        sb.seed("/a", "5")
        expectOK(sb.rtdb("get", "/a/b"), "null\n")
        expectOK(sb.rtdb("set", "/a/b", "1"), "{\"path\":\"/a/b\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "/a"), "{\"b\":1}\n")
        sb.seed("/a", "5")
        expectOK(sb.rtdb("update", "/a", "{\"c\":2}"), "{\"path\":\"/a\",\"value\":{\"c\":2}}\n")
        expectOK(sb.rtdb("get", "/a"), "{\"c\":2}\n")
        sb.seed("/a", "5")
        expectOK(sb.rtdb("increment", "/a/n"), "{\"path\":\"/a/n\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "/a"), "{\"n\":1}\n")
        // And a primitive at the root.
        expectOK(sb.rtdb("set", "/", "\"root\"", "--force"), "{\"path\":\"/\",\"value\":\"root\"}\n")
        expectOK(sb.rtdb("get", "/"), "\"root\"\n")
        expectOK(sb.rtdb("get", "/a"), "null\n")
        expectOK(sb.rtdb("set", "/x", "1"), "{\"path\":\"/x\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "/"), "{\"x\":1}\n")
    }

    @Test func typesSurviveTheRoundTrip() {
        let sb = Sandbox()
        sb.seed("/", "{\"b\":\"true\",\"c\":true,\"d\":1,\"e\":1.5,\"f\":\"1\",\"g\":false,\"h\":\"\",\"i\":0,\"j\":\"null\"}")
        expectOK(sb.rtdb("get", "/"), "{\"b\":\"true\",\"c\":true,\"d\":1,\"e\":1.5,\"f\":\"1\",\"g\":false,\"h\":\"\",\"i\":0,\"j\":\"null\"}\n")
        for (k, v) in [("b", "\"true\""), ("c", "true"), ("d", "1"), ("e", "1.5"), ("f", "\"1\""), ("g", "false"), ("h", "\"\""), ("i", "0"), ("j", "\"null\"")] {
            expectOK(sb.rtdb("get", "/" + k), v + "\n")
        }
    }

    @Test func stringWithNULRoundTrips() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/s", "\"a\\u0000b\""), "{\"path\":\"/s\",\"value\":\"a\\u0000b\"}\n")
        expectOK(sb.rtdb("get", "/s"), "\"a\\u0000b\"\n")
        expectOK(sb.rtdb("set", "/t", "-", stdin: .bytes(Array("\"x\\u0000\\u0000\"".utf8))), "{\"path\":\"/t\",\"value\":\"x\\u0000\\u0000\"}\n")
        expectOK(sb.rtdb("get", "/t"), "\"x\\u0000\\u0000\"\n")
    }
}
