import Testing
import RTDBCore
import RTDBWire
@testable import RTDBServer

/// Every one of Firebase's REST worked examples, in order, on one database.
@Suite("REST: the worked examples")
struct RESTExamplesTests {
    @Test("PUT, silent PUT, GET, GET of nothing")
    func putAndGet() {
        let h = Harness()
        let put = h.send("PUT", "/users/jack/name.json", "{\"first\":\"Jack\",\"last\":\"Sparrow\"}")
        #expect(put.status == 200)
        #expect(put.text == "{\"first\":\"Jack\",\"last\":\"Sparrow\"}")
        #expect(put.header("Content-Type") == "application/json; charset=utf-8")
        #expect(put.header("Access-Control-Allow-Origin") == "*")

        let silent = h.send("PUT", "/users/jack/name.json?print=silent", "{\"first\":\"Jack\",\"last\":\"Sparrow\"}")
        #expect(silent.status == 204)
        #expect(silent.response.body.isEmpty)

        let get = h.send("GET", "/users/jack/name.json")
        #expect(get.status == 200)
        #expect(get.text == "{\"first\":\"Jack\",\"last\":\"Sparrow\"}")

        let none = h.send("GET", "/users/nobody.json")
        #expect(none.status == 200)
        #expect(none.text == "null")
    }

    @Test("POST answers the new push ID as name")
    func post() {
        let h = Harness()
        let r = h.send("POST", "/message_list.json", "{\"user_id\":\"jack\",\"text\":\"Ahoy!\"}")
        #expect(r.status == 200)
        guard case .string(let name) = r.value.child("name") else {
            Issue.record("no name in \(r.text)"); return
        }
        #expect(name.utf8.count == 20)
        #expect(r.text == "{\"name\":\"\(name)\"}")
        #expect(h.stored("/message_list/\(name)") == "{\"text\":\"Ahoy!\",\"user_id\":\"jack\"}")
        // firebase-admin's push() default value is the empty string.
        let empty = h.send("POST", "/message_list.json", "\"\"")
        #expect(empty.status == 200)
    }

    @Test("PATCH with a trailing slash, multi-path PATCH that deletes, DELETE")
    func patchAndDelete() {
        let h = Harness()
        h.send("PUT", "/users.json", "{\"jack\":{\"name\":{\"first\":\"Jack\",\"last\":\"Sparrow\"}},\"ada\":{\"nick\":\"A\",\"age\":36}}")
        let p = h.send("PATCH", "/users/jack/name/.json", "{\"last\":\"Jones\"}")
        #expect(p.status == 200)
        #expect(p.text == "{\"last\":\"Jones\"}")
        #expect(h.stored("/users/jack/name") == "{\"first\":\"Jack\",\"last\":\"Jones\"}")

        let multi = h.send("PATCH", "/users.json", "{\"jack/name/last\":\"Jonas\",\"ada/nick\":null}")
        #expect(multi.status == 200)
        #expect(multi.text == "{\"ada/nick\":null,\"jack/name/last\":\"Jonas\"}")
        #expect(h.stored("/users") == "{\"ada\":{\"age\":36},\"jack\":{\"name\":{\"first\":\"Jack\",\"last\":\"Jonas\"}}}")

        let d = h.send("DELETE", "/users/jack/name/last.json")
        #expect(d.status == 200)
        #expect(d.text == "null")
        #expect(h.stored("/users/jack/name") == "{\"first\":\"Jack\"}")
    }

    @Test("shallow on an object and on a primitive")
    func shallow() {
        let h = Harness()
        h.send("PUT", "/users.json", "{\"jack\":{\"name\":{\"first\":\"Jack\"}},\"ada\":{\"x\":1}}")
        #expect(h.send("GET", "/users.json?shallow=true").text == "{\"ada\":true,\"jack\":true}")
        #expect(h.send("GET", "/users/jack/name/first.json?shallow=true").text == "\"Jack\"")
        #expect(h.send("GET", "/nothing.json?shallow=true").text == "null")
    }

    @Test("orderBy a child with startAt and limitToFirst (URL-encoded quotes)")
    func query() {
        let h = Harness()
        h.send("PUT", "/dinosaurs.json", """
            {"bruhathkayosaurus":{"height":25},"lambeosaurus":{"height":2.1},"linhenykus":{"height":0.6},
             "pterodactyl":{"height":0.6},"stegosaurus":{"height":4},"triceratops":{"height":3}}
            """)
        let r = h.send("GET", "/dinosaurs.json?orderBy=%22height%22&startAt=3&limitToFirst=2")
        #expect(r.status == 200)
        #expect(r.json == "{\"stegosaurus\":{\"height\":4},\"triceratops\":{\"height\":3}}")
        // No .indexOn is required: there are no rules to declare one in.
        #expect(h.send("GET", "/dinosaurs.json?orderBy=%22height%22").status == 200)
    }

    @Test("ETag on GET; stale if-match is 412 with the current ETag and value; null_etag")
    func etags() {
        let h = Harness()
        h.send("PUT", "/x.json", "{\"a\":1}")
        let g = h.send("GET", "/x.json", headers: [("X-Firebase-ETag", "true")])
        #expect(g.status == 200)
        #expect(g.header("ETag") == NodeHash.hash(node("{\"a\":1}")))
        let stale = h.send("PUT", "/x.json", "{\"a\":2}", headers: [("if-match", "stale-tag")])
        #expect(stale.status == 412)
        #expect(stale.header("ETag") == g.header("ETag"))
        #expect(stale.text == "{\"a\":1}")
        #expect(h.stored("/x") == "{\"a\":1}")

        h.send("PUT", "/new.json", "1")
        let exists = h.send("PUT", "/new.json", "2", headers: [("if-match", "null_etag")])
        #expect(exists.status == 412)
        #expect(exists.text == "1")
        #expect(exists.header("ETag") == NodeHash.hash(.int(1)))
    }

    @Test("a denied read is 401 Permission denied")
    func denied() {
        let h = Harness(secret: "s3cret")
        let r = h.send("GET", "/secret.json")
        #expect(r.status == 401)
        #expect(r.text == "{\"error\":\"Permission denied\"}")
    }

    @Test("an invalid path and invalid JSON are 400 with Firebase's wording")
    func invalid() {
        let h = Harness()
        let p = h.send("PUT", "/a/b.c.json", "1")
        #expect(p.status == 400)
        #expect(p.text.contains("Invalid path"))
        let j = h.send("PUT", "/x.json", "{bad json")
        #expect(j.status == 400)
        #expect(j.text == "{\"error\":\"Invalid data; couldn't parse JSON object, array, or value.\"}")
        #expect(h.stored("/") == "null")
    }

    @Test("JSONP and export")
    func callbackAndExport() {
        let h = Harness()
        h.send("PUT", "/x.json", "{\"a\":[1,2]}")
        let cb = h.send("GET", "/x.json?callback=cb")
        #expect(cb.status == 200)
        #expect(cb.text == "cb({\"a\":[1,2]});")
        #expect(cb.header("Content-Type") == "application/javascript; charset=utf-8")
        // The export form never turns objects into arrays, so it reads back as the same tree.
        #expect(h.send("GET", "/x.json?format=export").text == "{\"a\":{\"0\":1,\"1\":2}}")
    }
}
