import Testing
import RTDBCore
import RTDBWire
@testable import RTDBServer

@Suite("REST: query parameters and methods")
struct RESTParameterTests {
    @Test("print=pretty is Firebase's layout: \"key\" : value, arrays on one line")
    func pretty() {
        let h = Harness()
        h.send("PUT", "/p.json", "{\"a\":1,\"b\":{\"c\":[1,{\"d\":true}],\"e\":\"x\"}}")
        let r = h.send("GET", "/p.json?print=pretty")
        #expect(r.text == """
            {
              "a" : 1,
              "b" : {
                "c" : [ 1, {
                  "d" : true
                } ],
                "e" : "x"
              }
            }
            """)
        #expect(h.send("GET", "/p/a.json?print=pretty").text == "1")
        let put = h.send("PUT", "/q.json?print=pretty", "{\"k\":\"v\"}")
        #expect(put.text == "{\n  \"k\" : \"v\"\n}")
        let patch = h.send("PATCH", "/q.json?print=pretty", "{\"a/b\":1}")
        #expect(patch.text == "{\n  \"a/b\" : 1\n}")
    }

    @Test("the kept target of the last path answers what parsing the path answers, failures included")
    func keptTarget() throws {
        let h = Harness()
        let paths = ["/a/b.json", "/a/b.json", "/.json", "/a%2Fb.json", "/a/b.json", "/x.txt", "/x.txt", "/a/.priority.json",
                     "/.settings/rules.json", "/a/b%2.json", "/a/b%2.json", "/.inspect/databases.json", "/.info/connected.json",
                     "/a/b.json", "/a.b/c.json", "/a/b.json"]
        for p in paths {
            let expected = Result { try RESTTarget(rawPath: p) }
            let kept = Result { try h.handler.target(of: p) }
            switch (expected, kept) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(p)")
            case (.failure(let a as RESTError), .failure(let b as RESTError)):
                #expect(a.status == b.status && a.message == b.message, "\(p)")
            default: Issue.record("\(p): \(expected) against \(kept)")
            }
        }
        // Through requests: a read after a refused path, then the path again.
        h.send("PUT", "/a/b.json", "1")
        #expect(h.send("GET", "/a/b%2.json").status == 400)
        #expect(h.send("GET", "/a/b.json").text == "1")
        #expect(h.send("GET", "/a/b.json").text == "1")
    }

    @Test("print must be pretty or silent; silent works on every method")
    func printValues() {
        let h = Harness()
        #expect(h.send("GET", "/x.json?print=loud").status == 400)
        #expect(h.send("GET", "/x.json?print=silent").status == 204)
        #expect(h.send("POST", "/x.json?print=silent", "1").status == 204)
        #expect(h.send("PATCH", "/x.json?print=silent", "{\"a\":1}").status == 204)
        #expect(h.send("DELETE", "/x.json?print=silent").status == 204)
        #expect(h.stored("/x") == "null")
    }

    @Test("method override on POST: header and query parameter")
    func methodOverride() {
        let h = Harness()
        h.send("PUT", "/o.json", "{\"a\":1,\"b\":2}")
        let patch = h.send("POST", "/o.json", "{\"b\":3}", headers: [("X-HTTP-Method-Override", "PATCH")])
        #expect(patch.status == 200)
        #expect(h.stored("/o") == "{\"a\":1,\"b\":3}")
        let put = h.send("POST", "/o.json?x-http-method-override=PUT", "{\"c\":1}")
        #expect(put.status == 200)
        #expect(h.stored("/o") == "{\"c\":1}")
        #expect(h.send("POST", "/o.json?x-http-method-override=delete").status == 200)
        #expect(h.stored("/o") == "null")
        #expect(h.send("POST", "/o.json", "1", headers: [("X-HTTP-Method-Override", "TRACE")]).status == 400)
        #expect(h.send("GET", "/o.json", headers: [("X-HTTP-Method-Override", "DELETE")]).status == 400)
    }

    @Test("shallow paging with limitToFirst and startAfter, as firebase-tools lists keys")
    func shallowPaging() {
        let h = Harness()
        h.send("PUT", "/l.json", "{\"a\":{\"x\":1},\"b\":2,\"c\":{\"y\":{\"z\":3}},\"d\":4}")
        #expect(h.send("GET", "/l.json?shallow=true&limitToFirst=2").text == "{\"a\":true,\"b\":true}")
        #expect(h.send("GET", "/l.json?shallow=true&limitToFirst=2&startAfter=b").text == "{\"c\":true,\"d\":true}")
        #expect(h.send("GET", "/l.json?shallow=true&limitToFirst=2&startAfter=%22d%22").text == "null")
        #expect(h.send("GET", "/.json?shallow=true&limitToFirst=1").text == "{\"l\":true}")
        #expect(h.send("GET", "/l.json?shallow=false").json == h.stored("/l"))
        #expect(h.send("GET", "/l.json?shallow=yes").status == 400)
        #expect(h.send("GET", "/l.json?shallow=true&orderBy=%22%24value%22").status == 400)
    }

    @Test("orderBy $key, $value and child paths with every bound and the key argument")
    func queries() {
        let h = Harness()
        h.send("PUT", "/s.json", "{\"a\":{\"n\":3,\"v\":\"x\"},\"b\":{\"n\":1},\"c\":{\"n\":3},\"d\":{\"n\":2},\"e\":5}")
        func keys(_ q: String) -> String {
            let r = h.send("GET", "/s.json?" + q)
            #expect(r.status == 200, "\(q): \(r.text)")
            return r.value.children.map(\.key).joined(separator: ",")
        }
        #expect(keys("orderBy=%22$key%22&startAt=%22b%22&endAt=%22d%22") == "b,c,d")
        #expect(keys("orderBy=%22$key%22&startAfter=%22b%22&endBefore=%22d%22") == "c")
        #expect(keys("orderBy=%22$key%22&limitToLast=2") == "d,e")
        #expect(keys("orderBy=%22$value%22&equalTo=5") == "e")
        #expect(keys("orderBy=%22n%22&equalTo=3") == "a,c")
        #expect(keys("orderBy=%22n%22&startAt=3,%22b%22") == "c")
        #expect(keys("orderBy=%22n%22&startAfter=3,%22a%22") == "c")
        #expect(keys("orderBy=%22n%22&endAt=3,%22a%22") == "e,b,d,a".split(separator: ",").sorted().joined(separator: ","))
        #expect(keys("orderBy=%22n%22&endBefore=2") == "b,e")
        #expect(keys("orderBy=%22n%22&startAfter=3") == "")
        #expect(keys("orderBy=%22n%22&limitToFirst=2") == "b,e")
        #expect(keys("orderBy=%22n%22&limitToLast=2") == "a,c")
        #expect(keys("orderBy=%22n%22&limitToFirst=0") == "")
        #expect(keys("orderBy=%22v%22&equalTo=null") == "b,c,d,e")
        #expect(keys("orderBy=%22n%22") == "a,b,c,d,e")
        // A query on a primitive location: nothing in a window.
        #expect(h.send("GET", "/s/e.json?orderBy=%22$key%22&limitToFirst=1").text == "null")
        #expect(h.send("GET", "/s/e.json?orderBy=%22$key%22").text == "5")
    }

    @Test("query errors are 400 with the parameter named")
    func queryErrors() {
        let h = Harness()
        let cases: [(String, String)] = [
            ("limitToFirst=1", "orderBy must be defined"),
            ("orderBy=$key", "orderBy must be a JSON string"),
            ("orderBy=%22n%22&startAt=%7B", "startAt must be a JSON value"),
            ("orderBy=%22n%22&limitToFirst=1&limitToLast=1", "cannot be combined"),
            ("orderBy=%22n%22&limitToFirst=-2", "non-negative"),
            ("orderBy=%22a.b%22", "orderBy"),
        ]
        for (q, message) in cases {
            let r = h.send("GET", "/s.json?" + q)
            #expect(r.status == 400, "\(q)")
            #expect(r.text.contains(message), "\(q): \(r.text)")
        }
        #expect(h.send("PUT", "/s.json?orderBy=%22n%22", "1").status == 400)
    }

    @Test("download names an attachment; GET only; names are checked")
    func download() {
        let h = Harness()
        h.send("PUT", "/d.json", "1")
        let r = h.send("GET", "/d.json?download=backup.json")
        #expect(r.status == 200)
        #expect(r.header("Content-Disposition") == "attachment; filename=\"backup.json\"")
        #expect(r.text == "1")
        #expect(h.send("GET", "/d.json?download=a%22b").status == 400)
        #expect(h.send("GET", "/d.json?download=a/b").status == 400)
        #expect(h.send("PUT", "/d.json?download=x", "1").status == 400)
    }

    @Test("callback is GET only and must be a function name")
    func callback() {
        let h = Harness()
        #expect(h.send("GET", "/c.json?callback=my.handler_1").text == "my.handler_1(null);")
        #expect(h.send("GET", "/c.json?callback=alert(1)").status == 400)
        #expect(h.send("GET", "/c.json?callback=1x").status == 400)
        #expect(h.send("PUT", "/c.json?callback=cb", "1").status == 400)
    }

    @Test("timeout is validated: ms, s or min, at most 15 minutes", arguments: [
        ("500ms", 200), ("30s", 200), ("15min", 200), ("900000ms", 200), ("900s", 200),
        ("16min", 400), ("900001ms", 400), ("5", 400), ("abc", 400), ("ms", 400), ("5h", 400), ("-1s", 400),
    ])
    func timeout(value: String, status: Int) {
        let h = Harness()
        #expect(h.send("GET", "/t.json?timeout=\(value)").status == status)
    }

    @Test("writeSizeLimit is validated and only on writes")
    func writeSizeLimit() {
        let h = Harness()
        for level in ["tiny", "small", "medium", "large", "unlimited"] {
            #expect(h.send("PUT", "/w.json?writeSizeLimit=\(level)", "1").status == 200)
        }
        #expect(h.send("PUT", "/w.json?writeSizeLimit=huge", "1").status == 400)
        #expect(h.send("GET", "/w.json?writeSizeLimit=tiny").status == 400)
        // The emulator import form.
        #expect(h.send("PUT", "/.json?ns=imp&disableTriggers=true&writeSizeLimit=unlimited", "{\"a\":1}",
                       headers: [("Authorization", "Bearer owner")]).status == 200)
        #expect(h.stored("/a", ns: "imp") == "1")
    }

    @Test("server values in bodies are resolved, and the response carries the resolved value")
    func serverValues() {
        let h = Harness()
        h.send("PUT", "/c.json", "{\"n\":4,\"m\":1}")
        let put = h.send("PUT", "/c.json", "{\"n\":{\".sv\":{\"increment\":1}},\"t\":{\".sv\":\"timestamp\"}}")
        #expect(put.text == "{\"n\":5,\"t\":1700000000000}")
        let patch = h.send("PATCH", "/c.json", "{\"n\":{\".sv\":{\"increment\":-2}}}")
        #expect(patch.text == "{\"n\":3}")
        let post = h.send("POST", "/c/list.json", "{\".sv\":\"timestamp\"}")
        guard case .string(let key) = post.value.child("name") else { Issue.record("no name"); return }
        #expect(h.stored("/c/list/\(key)") == "1700000000000")
        let bad = h.send("PUT", "/c.json", "{\".sv\":\"nonsense\"}")
        #expect(bad.status == 400)
        #expect(bad.text.contains("not recognized"))
    }

    @Test("PATCH: overlap, non-object, null, empty object")
    func patchForms() {
        let h = Harness()
        h.send("PUT", "/u.json", "{\"a\":{\"b\":1},\"c\":2}")
        let overlap = h.send("PATCH", "/u.json", "{\"a\":1,\"a/b\":2}")
        #expect(overlap.status == 400)
        #expect(overlap.text.contains("overlap"))
        #expect(h.send("PATCH", "/u.json", "[1,2]").status == 400)
        #expect(h.send("PATCH", "/u.json", "5").status == 400)
        let empty = h.send("PATCH", "/u.json", "{}")
        #expect(empty.status == 200)
        #expect(empty.text == "{}")
        #expect(h.stored("/u") == "{\"a\":{\"b\":1},\"c\":2}")
        let null = h.send("PATCH", "/u/a.json", "null")
        #expect(null.status == 200)
        #expect(h.stored("/u") == "{\"c\":2}")
        #expect(h.send("PATCH", "/u.json", "{\"bad.key\":1}").status == 400)
        #expect(h.send("PATCH", "/u.json", "{\"x\":1", headers: []).text.contains("couldn't parse JSON"))
    }

    @Test("namespaces: ns, the host's first label, the default; inspect lists them")
    func namespaces() {
        let h = Harness()
        h.send("PUT", "/v.json?ns=alpha", "1")
        #expect(h.send("GET", "/v.json?ns=alpha").text == "1")
        #expect(h.send("GET", "/v.json?ns=beta").text == "null")
        _ = h.send("PUT", "/v.json", "2", headers: [])   // Host: localhost → the default namespace
        #expect(h.stored("/v", ns: "fake-server") == "2")
        // The host's first label names the namespace when the host is a name with two labels.
        var request = HTTPRequest(method: "PUT", target: "/v.json", headers: [("Host", "gamma.localhost:9000")], body: Array("3".utf8))
        guard case .response(let r) = h.handler.handle(request) else { Issue.record("no response"); return }
        #expect(r.status == 200)
        #expect(h.stored("/v", ns: "gamma") == "3")
        // ns wins over the host.
        request = HTTPRequest(method: "GET", target: "/v.json?ns=alpha", headers: [("Host", "gamma.localhost:9000")])
        guard case .response(let r2) = h.handler.handle(request) else { Issue.record("no response"); return }
        #expect(String(decoding: r2.body, as: UTF8.self) == "1")
        // IP addresses are not names.
        for host in ["127.0.0.1:9000", "[::1]:9000", "localhost"] {
            #expect(RESTHandler.hostLabel(host) == nil, "\(host)")
        }
        #expect(RESTHandler.hostLabel("my-db.firebaseio.com") == "my-db")
        // The first label of any name with a dot, whatever follows it; an empty first label none.
        for (host, label) in [("gamma.localhost:9000", "gamma"), ("a.:80", "a"), ("1..2", "1"), ("1.", "1"), ("10.0.0.x", "10"),
                              ("ns.example.com:x:y", "ns")] {
            #expect(RESTHandler.hostLabel(host) == label, "\(host)")
        }
        for host in [".a", ":80", "", "1.2", "10.0.0.1"] {
            #expect(RESTHandler.hostLabel(host) == nil, "\(host)")
        }
        #expect(h.send("GET", "/v.json?ns=..%2Fetc").status == 400)
        #expect(h.send("GET", "/v.json?ns=").status == 400)

        let inspect = h.send("GET", "/.inspect/databases.json")
        #expect(inspect.status == 200)
        #expect(inspect.text == "[{\"name\":\"alpha\"},{\"name\":\"fake-server\"},{\"name\":\"gamma\"}]")
        #expect(h.send("PUT", "/.inspect/databases.json", "1").status == 405)
    }

    @Test("rules: admin only, the open default on GET, GET and PUT only")
    func rules() {
        let h = Harness()
        let owner = [("Authorization", "Bearer owner")]
        #expect(h.send("GET", "/.settings/rules.json?ns=x").status == 401)
        let r = h.send("GET", "/.settings/rules.json?ns=x", headers: owner)
        #expect(r.status == 200)
        #expect(r.text == "{\"rules\":{\".read\":true,\".write\":true}}")
        #expect(h.send("DELETE", "/.settings/rules.json", headers: owner).status == 405)
    }

    @Test(".info is readable and never writable; .priority is null and not writable yet")
    func specialPaths() {
        let h = Harness()
        #expect(h.send("GET", "/.info/connected.json").text == "null")
        for method in ["PUT", "POST", "PATCH", "DELETE"] {
            let r = h.send(method, "/.info/connected.json", "{\"a\":true}")
            #expect(r.status == 400, "\(method)")
            #expect(r.text.contains(".info"), "\(method)")
        }
        h.send("PUT", "/x.json", "1")
        #expect(h.send("GET", "/x/.priority.json").text == "null")
        #expect(h.send("PUT", "/x/.priority.json", "5").status == 200)
        #expect(h.send("GET", "/x/.priority.json").text == "5")
        #expect(h.send("GET", "/x.json?format=export").text == #"{".value":1,".priority":5}"#)
        #expect(h.stored("/x") == "1")
        // A priority is data: a boolean is refused, and deleting it leaves the value alone.
        #expect(h.send("PUT", "/x/.priority.json", "true").status == 400)
        #expect(h.send("DELETE", "/x/.priority.json").status == 200)
        #expect(h.send("GET", "/x.json?format=export").text == "1")
        #expect(h.send("POST", "/x/.priority.json", "1").status == 405)
    }

    @Test("orderBy $priority orders by Firebase's priority rule, and export shows priorities")
    func priorityOrder() {
        let h = Harness()
        h.send("PUT", "/p.json", #"{"a":{".value":1,".priority":"z"},"b":{".value":2,".priority":5},"c":3,"d":{"x":1,".priority":1}}"#)
        // No priority < numbers < strings; the result is an unordered object, so check the window.
        #expect(h.send("GET", "/p.json?orderBy=%22$priority%22&limitToFirst=2").text == #"{"c":3,"d":{"x":1}}"#)
        #expect(h.send("GET", "/p.json?orderBy=%22$priority%22&startAt=2").text == #"{"a":1,"b":2}"#)
        #expect(h.send("GET", "/p.json?orderBy=%22$priority%22&limitToLast=1&format=export").text
                == #"{"a":{".value":1,".priority":"z"}}"#)
        #expect(h.send("GET", "/p/d.json?format=export").text == #"{"x":1,".priority":1}"#)
        #expect(h.send("GET", "/p/d.json").text == #"{"x":1}"#)
    }

    @Test("HEAD is a GET without a body; OPTIONS answers a CORS preflight")
    func headAndOptions() {
        let h = Harness()
        h.send("PUT", "/x.json", "{\"a\":1}")
        let head = h.send("HEAD", "/x.json")
        #expect(head.status == 200)
        #expect(head.response.body.isEmpty)
        #expect(head.header("Content-Length") == "7")
        let options = h.send("OPTIONS", "/x.json", headers: [("Access-Control-Request-Headers", "authorization")])
        #expect(options.status == 204)
        #expect(options.header("Access-Control-Allow-Headers") == "authorization")
        #expect(options.header("Access-Control-Allow-Methods")?.contains("PATCH") == true)
    }

    @Test("auth_variable_override, ac and disableTriggers are accepted")
    func accepted() {
        let h = Harness()
        #expect(h.send("GET", "/x.json?auth_variable_override=%7B%22uid%22%3A%22u1%22%7D&ac=token&disableTriggers=true").status == 200)
        #expect(h.send("GET", "/x.json?auth_variable_override=%7Bbad").status == 400)
        #expect(h.send("GET", "/x.json?disableTriggers=maybe").status == 400)
    }
}

@Suite("REST: ETags and priorities")
struct RESTETagPriorityTests {
    @Test("an ETag read from a node with priorities lets if-match write it")
    func etagWithPriorities() {
        let h = Harness()
        h.send("PUT", "/x.json", #"{"a":{".value":1,".priority":2},".priority":"p"}"#)
        let tag = h.send("GET", "/x.json", headers: [("X-Firebase-ETag", "true")]).header("ETag") ?? ""
        #expect(!tag.isEmpty && tag != "null_etag")
        let ok = h.send("PUT", "/x.json", #"{"a":5}"#, headers: [("if-match", tag)])
        #expect(ok.status == 200, "\(ok.text)")
        #expect(h.send("GET", "/x.json?format=export").text == #"{"a":5}"#)
        // The old tag is stale now: 412 with the current value and its tag.
        let stale = h.send("PUT", "/x.json", "6", headers: [("if-match", tag)])
        #expect(stale.status == 412)
        #expect(stale.text == #"{"a":5}"#)
    }
}
