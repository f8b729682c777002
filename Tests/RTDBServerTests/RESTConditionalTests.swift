import Testing
import RTDBCore
import RTDBWire
@testable import RTDBServer

@Suite("REST: ETags and conditional requests")
struct RESTConditionalTests {
    @Test("GET with X-Firebase-ETag; null_etag for missing data")
    func etagHeader() {
        let h = Harness()
        #expect(h.send("GET", "/x.json", headers: [("X-Firebase-ETag", "true")]).header("ETag") == "null_etag")
        h.send("PUT", "/x.json", "\"z\"")
        let r = h.send("GET", "/x.json", headers: [("X-Firebase-ETag", "true")])
        #expect(r.header("ETag") == "spma6tfW0Nl5KpHLWlVJbGOveJM=")
        #expect(h.send("GET", "/x.json").header("ETag") == nil)
    }

    @Test("if-none-match: 304 without a body when unchanged, else 200 with value and ETag")
    func ifNoneMatch() {
        let h = Harness()
        h.send("PUT", "/x.json", "{\"b\":1}")
        let tag = "lUwqxaYTHjA4XN/UJjS/cI8JKaM="
        let same = h.send("GET", "/x.json", headers: [("if-none-match", tag)])
        #expect(same.status == 304)
        #expect(same.response.body.isEmpty)
        #expect(same.header("ETag") == tag)
        let changed = h.send("GET", "/x.json", headers: [("if-none-match", "old")])
        #expect(changed.status == 200)
        #expect(changed.text == "{\"b\":1}")
        #expect(changed.header("ETag") == tag)
        #expect(h.send("GET", "/missing.json", headers: [("if-none-match", "null_etag")]).status == 304)
    }

    @Test("PUT if-match: a match writes and answers the new ETag; create-only with null_etag")
    func ifMatchPut() {
        let h = Harness()
        let created = h.send("PUT", "/x.json", "1", headers: [("if-match", "null_etag")])
        #expect(created.status == 200)
        #expect(created.text == "1")
        #expect(created.header("ETag") == NodeHash.hash(.int(1)))
        let next = h.send("PUT", "/x.json", "2", headers: [("if-match", NodeHash.hash(.int(1)))])
        #expect(next.status == 200)
        #expect(next.header("ETag") == NodeHash.hash(.int(2)))
        #expect(h.stored("/x") == "2")
        let silent = h.send("PUT", "/x.json?print=silent", "3", headers: [("if-match", NodeHash.hash(.int(2)))])
        #expect(silent.status == 204)
        #expect(silent.header("ETag") == NodeHash.hash(.int(3)))
        let stale = h.send("PUT", "/x.json?print=pretty", "{\"q\":1}", headers: [("if-match", NodeHash.hash(.int(2)))])
        #expect(stale.status == 412)
        #expect(stale.text == "3")
        #expect(h.stored("/x") == "3")
    }

    @Test("DELETE if-match; POST and PATCH refuse if-match")
    func ifMatchOthers() {
        let h = Harness()
        h.send("PUT", "/x.json", "{\"a\":1}")
        let tag = NodeHash.hash(node("{\"a\":1}"))
        let staleDelete = h.send("DELETE", "/x.json", headers: [("if-match", "nope")])
        #expect(staleDelete.status == 412)
        #expect(staleDelete.text == "{\"a\":1}")
        let d = h.send("DELETE", "/x.json", headers: [("if-match", tag)])
        #expect(d.status == 200)
        #expect(d.header("ETag") == "null_etag")
        #expect(h.stored("/x") == "null")
        #expect(h.send("POST", "/x.json", "1", headers: [("if-match", "null_etag")]).status == 400)
        #expect(h.send("PATCH", "/x.json", "{\"a\":1}", headers: [("if-match", "null_etag")]).status == 400)
        #expect(h.stored("/x") == "null")
    }

    @Test("a transaction loop as firebase-admin runs it: GET with ETag, conditional PUTs, 412 retries")
    func transactionLoop() {
        let h = Harness()
        h.send("PUT", "/counter.json", "0")
        var r = h.send("GET", "/counter.json", headers: [("X-Firebase-ETag", "true")])
        var etag = r.header("ETag") ?? ""
        var value = r.value
        // Another writer moves the counter between the read and the write.
        h.send("PUT", "/counter.json", "10")
        var attempts = 0
        while attempts < 25 {
            attempts += 1
            guard case .int(let n) = value else { Issue.record("not a number"); return }
            r = h.send("PUT", "/counter.json", String(n + 1), headers: [("if-match", etag)])
            if r.status == 200 { break }
            #expect(r.status == 412)
            value = r.value
            etag = r.header("ETag") ?? ""
        }
        #expect(attempts == 2)
        #expect(h.stored("/counter") == "11")
    }

    @Test("ETags do not combine with shallow or queries")
    func etagWithQueries() {
        let h = Harness()
        #expect(h.send("GET", "/x.json?shallow=true", headers: [("X-Firebase-ETag", "true")]).status == 400)
        #expect(h.send("GET", "/x.json?orderBy=%22$key%22", headers: [("if-none-match", "a")]).status == 400)
    }
}

@Suite("REST: credentials")
struct RESTAuthTests {
    @Test("without a secret everything is allowed, Bearer owner and any auth included")
    func open() {
        let h = Harness()
        #expect(h.send("PUT", "/a.json", "1").status == 200)
        #expect(h.send("GET", "/a.json", headers: [("Authorization", "Bearer owner")]).status == 200)
        #expect(h.send("GET", "/a.json?auth=eyJhbGciOiJub25lIn0.e30.").status == 200)
    }

    @Test("with a secret: auth, access_token or a Bearer header carrying it; nothing else")
    func secret() {
        let h = Harness(secret: "T0ken+/=")
        let encoded = "T0ken%2B%2F%3D"
        #expect(h.send("PUT", "/a.json?auth=\(encoded)", "1").status == 200)
        #expect(h.send("GET", "/a.json?access_token=\(encoded)").text == "1")
        #expect(h.send("GET", "/a.json", headers: [("Authorization", "Bearer T0ken+/=")]).status == 200)
        #expect(h.send("GET", "/a.json", headers: [("authorization", "bearer T0ken+/=")]).status == 200)
        for (target, headers) in [
            ("/a.json", [(String, String)]()),
            ("/a.json", [("Authorization", "Bearer owner")]),
            ("/a.json?auth=T0ken", []),
            ("/a.json?auth=T0ken%2B%2F%3Dx", []),
            ("/a.json?access_token=", []),
            ("/a.json", [("Authorization", "Basic T0ken+/=")]),
            ("/a.json", [("Authorization", "Bearer")]),
        ] {
            let r = h.send("GET", target, headers: headers)
            #expect(r.status == 401, "\(target) \(headers)")
            #expect(r.text == "{\"error\":\"Permission denied\"}")
        }
        // Writes are refused before anything happens, bad input or not.
        #expect(h.send("PUT", "/b.json?auth=wrong", "{bad").status == 401)
        #expect(h.send("PUT", "/b.json", "2").status == 401)
        #expect(h.stored("/b") == "null")
        #expect(h.stream("/a.json?auth=\(encoded)") != nil)
        if case .stream = h.outcome("GET", "/a.json", headers: [("Accept", "text/event-stream")]) {
            Issue.record("an unauthorised stream was accepted")
        }
    }

    @Test("tokens never appear in responses")
    func noEcho() {
        let secret = "super-secret-value"
        let h = Harness(secret: secret)
        let presented = "presented-token-XYZ"
        let replies = [
            h.send("GET", "/a.json?auth=\(presented)"),
            h.send("GET", "/a.b.json?auth=\(secret)"),
            h.send("GET", "/a.json?auth=\(secret)&orderBy=bad"),
            h.send("PUT", "/a.json?access_token=\(secret)", "{bad"),
            h.send("GET", "/a.json?auth=\(secret)&unknown=\(secret)"),
        ]
        for r in replies {
            #expect(!r.text.contains(secret))
            #expect(!r.text.contains(presented))
            #expect(!r.response.headers.contains { $0.value.contains(secret) || $0.value.contains(presented) })
        }
    }

    @Test("constant-time comparison is exact")
    func compare() {
        #expect(RESTAuth.constantTimeEqual("abc", "abc"))
        #expect(!RESTAuth.constantTimeEqual("abd", "abc"))
        #expect(!RESTAuth.constantTimeEqual("ab", "abc"))
        #expect(!RESTAuth.constantTimeEqual("abcd", "abc"))
        #expect(!RESTAuth.constantTimeEqual("", "abc"))
        #expect(!RESTAuth.constantTimeEqual("abc\0", "abc"))
    }
}
