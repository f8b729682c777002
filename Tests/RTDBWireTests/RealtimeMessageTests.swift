import Testing
import RTDBCore
@testable import RTDBWire

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
private func utf8(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self) }
private func decode(_ s: String) throws -> RealtimeMessage { try RealtimeMessage.decode(bytes(s)) }
private func p(_ s: String) -> Path { (try? Path(s)) ?? Path(validatedKeys: ["<<bad test path>>"]) }
private func json(_ s: String) -> Node { (try? JSONReader.parse(s)) ?? .string("<<bad test JSON>>") }
private func same(_ a: Node, _ b: String) -> Bool { JSONWriter.string(a, export: true) == b }

/// Every frame of the transcripts (the JS SDK against a
/// server it accepted), copied verbatim: `C>` frames a client sends, `S>` frames a server sends.
private let transcript: [String] = [
    // hello, reset, shutdown, ping, pong
    #"{"t":"c","d":{"t":"h","d":{"ts":1461173397480,"v":"5","h":"s-usc1c-nss-114.firebaseio.com","s":"6hcoCYSI0AfBv1FMVTT1mByUxiVAcGck"}}}"#,
    #"{"t":"c","d":{"t":"r","d":"s-usc1c-nss-114.firebaseio.com"}}"#,
    #"{"t":"c","d":{"t":"s","d":"Database lives in a different region. Please change your database URL to https://x.europe-west1.firebasedatabase.app"}}"#,
    #"{"t":"c","d":{"t":"p","d":{}}}"#,
    #"{"t":"c","d":{"t":"o","d":null}}"#,
    // the emulator's admin credential
    #"{"t":"d","d":{"r":1,"a":"gauth","b":{"cred":"owner","authvar":{"uid":"svc"}}}}"#,
    // connect
    #"{"t":"c","d":{"t":"h","d":{"ts":1795380704167,"v":"5","h":"127.0.0.1:9555","s":"session1"}}}"#,
    #"{"t":"d","d":{"r":1,"a":"s","b":{"c":{"sdk.node.12-18-0":1}}}}"#,
    #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#,
    // get
    #"{"t":"d","d":{"r":2,"a":"g","b":{"p":"/a","q":{}}}}"#,
    #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":{"b":1}}}}"#,
    // onValue
    #"{"t":"d","d":{"r":3,"a":"q","b":{"p":"/a","h":""}}}"#,
    #"{"t":"d","d":{"a":"d","b":{"p":"a","d":{"b":1}}}}"#,
    #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":{}}}}"#,
    // set under a listen
    #"{"t":"d","d":{"r":4,"a":"p","b":{"p":"/a/b","d":2}}}"#,
    #"{"t":"d","d":{"a":"d","b":{"p":"a/b","d":2}}}"#,
    #"{"t":"d","d":{"r":4,"b":{"s":"ok","d":""}}}"#,
    // a tagged query
    #"{"t":"d","d":{"r":5,"a":"q","b":{"p":"/q","q":{"l":2,"vf":"r","i":"x"},"t":1,"h":""}}}"#,
    #"{"t":"d","d":{"a":"d","b":{"p":"q","d":{"k2":{"x":2},"k3":{"x":3}},"t":1}}}"#,
    #"{"t":"d","d":{"r":5,"b":{"s":"ok","d":{}}}}"#,
    #"{"t":"d","d":{"r":6,"a":"p","b":{"p":"/q/k4","d":{"x":4}}}}"#,
    #"{"t":"d","d":{"a":"d","b":{"p":"q","d":{"k3":{"x":3},"k4":{"x":4}},"t":1}}}"#,
    #"{"t":"d","d":{"r":6,"b":{"s":"ok","d":""}}}"#,
    #"{"t":"d","d":{"a":"m","b":{"p":"q","d":{"k2":null,"k3":{"x":3},"k4":{"x":4}},"t":1}}}"#,
    // a transaction
    #"{"t":"d","d":{"r":7,"a":"q","b":{"p":"/counter","h":""}}}"#,
    #"{"t":"d","d":{"r":8,"a":"p","b":{"p":"/counter","d":1,"h":""}}}"#,
    #"{"t":"d","d":{"a":"d","b":{"p":"counter","d":5}}}"#,
    #"{"t":"d","d":{"r":7,"b":{"s":"ok","d":{}}}}"#,
    #"{"t":"d","d":{"r":8,"b":{"s":"datastale","d":"hash mismatch"}}}"#,
    #"{"t":"d","d":{"r":9,"a":"p","b":{"p":"/counter","d":6,"h":"w28swksk9+tXf5jEdS9R5oSFAv8="}}}"#,
    #"{"t":"d","d":{"a":"d","b":{"p":"counter","d":6}}}"#,
    #"{"t":"d","d":{"r":9,"b":{"s":"ok","d":""}}}"#,
    #"{"t":"d","d":{"r":10,"a":"n","b":{"p":"/counter"}}}"#,
    // onDisconnect
    #"{"t":"d","d":{"r":2,"a":"o","b":{"p":"/presence/u1","d":{"at":{".sv":"timestamp"},"state":"offline"}}}}"#,
    #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#,
    #"{"t":"d","d":{"a":"d","b":{"p":"presence/u1","d":{"at":1795381072095,"state":"offline"}}}}"#,
    // reconnect
    #"{"t":"c","d":{"t":"h","d":{"ts":1795380789865,"v":"5","h":"127.0.0.1:9559","s":"session2"}}}"#,
    #"{"t":"d","d":{"r":5,"a":"q","b":{"p":"/a","h":"lUwqxaYTHjA4XN/UJjS/cI8JKaM="}}}"#,
    #"{"t":"d","d":{"r":6,"a":"q","b":{"p":"/q","h":"ECp3q7JbtQjhn1L9BjpfrCAYaxU="}}}"#,
    #"{"t":"d","d":{"r":7,"a":"p","b":{"p":"/a/c","d":3}}}"#,
    // denial
    #"{"t":"d","d":{"r":2,"b":{"s":"permission_denied","d":"Permission denied"}}}"#,
]

@Suite("Realtime messages: one codec for both ends")
struct RealtimeMessageTests {
    @Test("every transcript frame decodes and encodes back to the same bytes", arguments: transcript)
    func transcriptRoundTrip(_ frame: String) throws {
        #expect(utf8(try decode(frame).encode()) == frame)
    }

    @Test("as values: stats, get, listen, put, and the server's answers")
    func transcriptMeanings() throws {
        guard case .request(let stats) = try decode(transcript[7]), case .stats(let counters) = stats.action else {
            Issue.record("stats"); return
        }
        #expect(stats.r == 1 && counters.description == #"{"c":{"sdk.node.12-18-0":1}}"#)
        guard case .request(let get) = try decode(transcript[9]), case .get(let g) = get.action else { Issue.record("get"); return }
        #expect(g.path.same(as: p("/a")) && g.query == nil && g.queryObject == .emptyObject)
        guard case .response(let answer) = try decode(transcript[10]) else { Issue.record("response"); return }
        #expect(answer.r == 2 && answer.status == .ok && answer.data.description == #"{"b":1}"#)
        guard case .request(let put) = try decode(transcript[14]), case .put(let path, let value, let hash) = put.action else {
            Issue.record("put"); return
        }
        #expect(put.r == 4 && path.same(as: p("/a/b")) && same(value, "2") && hash == nil)
        guard case .push(.put(let at, let v, let tag)) = try decode(transcript[15]) else { Issue.record("push"); return }
        #expect(at.same(as: p("a/b")) && same(v, "2") && tag == nil)
    }

    @Test("as values: a tagged query listen, its window push, a compare-and-set")
    func taggedQueryAndTransaction() throws {
        guard case .request(let r) = try decode(transcript[17]), case .listen(let l) = r.action else { Issue.record("listen"); return }
        #expect(l.tag == 1 && l.hash == "")
        #expect(l.queryObject?.description == #"{"l":2,"vf":"r","i":"x"}"#)
        let q = try #require(l.query)
        #expect(q.limit == .last(2))
        guard case .child(let index) = q.order else { Issue.record("order"); return }
        #expect(index.same(as: p("x")))
        guard case .push(.merge(let at, let children, let tag)) = try decode(transcript[23]) else { Issue.record("m"); return }
        #expect(at.same(as: p("q")) && tag == 1)
        #expect(children.map { $0.path.unrooted } == ["k2", "k3", "k4"])
        #expect(children[0].value.isNull)
        guard case .request(let cas) = try decode(transcript[29]), case .put(_, let six, let hash) = cas.action else {
            Issue.record("cas"); return
        }
        #expect(same(six, "6") && hash == "w28swksk9+tXf5jEdS9R5oSFAv8=")
        guard case .response(let stale) = try decode(transcript[28]) else { Issue.record("stale"); return }
        #expect(stale.status == .dataStale && stale.data.string == "hash mismatch")
    }

    @Test("controls as values: the hello's members, reset, shutdown, ping and pong")
    func controls() throws {
        guard case .control(.hello(let h)) = try decode(transcript[6]) else { Issue.record("hello"); return }
        #expect(h == RealtimeHello(timestamp: 1_795_380_704_167, host: "127.0.0.1:9555", session: "session1"))
        guard case .control(.reset(let host)) = try decode(transcript[1]) else { Issue.record("reset"); return }
        #expect(host == "s-usc1c-nss-114.firebaseio.com")
        guard case .control(.shutdown(let why)) = try decode(transcript[2]) else { Issue.record("shutdown"); return }
        #expect(why?.hasPrefix("Database lives in a different region") == true)
        guard case .control(.ping) = try decode(transcript[3]), case .control(.pong) = try decode(transcript[4]) else {
            Issue.record("ping/pong"); return
        }
        #expect(utf8(RealtimeMessage.control(.pong).encode()) == transcript[4])
        // A pong with an object (older servers) is still a pong; unknown types are kept, not refused.
        guard case .control(.pong) = try decode(#"{"t":"c","d":{"t":"o","d":{}}}"#) else { Issue.record("pong {}"); return }
        guard case .control(.other("n")) = try decode(#"{"t":"c","d":{"t":"n","d":{}}}"#) else { Issue.record("n"); return }
    }

    @Test("values built by each end encode to the transcript's bytes")
    func encodeFromValues() throws {
        let hello = RealtimeMessage.control(.hello(RealtimeHello(timestamp: 1_795_380_789_865, host: "127.0.0.1:9559", session: "session2")))
        #expect(utf8(hello.encode()) == transcript[36])
        #expect(utf8(RealtimeMessage.response(.ok(1)).encode()) == transcript[8])
        #expect(utf8(RealtimeMessage.response(.ok(3, .emptyObject)).encode()) == transcript[13])
        #expect(utf8(RealtimeMessage.response(.ok(2, JSONText(value: json(#"{"b":1}"#)))).encode()) == transcript[10])
        #expect(utf8(RealtimeMessage.response(.failure(2, .permissionDenied, "Permission denied")).encode()) == transcript[40])
        #expect(utf8(RealtimeMessage.push(.put(path: p("q"), value: json(#"{"k2":{"x":2},"k3":{"x":3}}"#), tag: 1)).encode()) == transcript[18])
        let merge = RealtimePush.merge(path: p("q"), children: [(p("k2"), .null), (p("k3"), json(#"{"x":3}"#)), (p("k4"), json(#"{"x":4}"#))], tag: 1)
        #expect(utf8(RealtimeMessage.push(merge).encode()) == transcript[23])
        // What the client sends.
        #expect(utf8(RealtimeMessage.request(RealtimeRequest(r: 2, .get(RealtimeListen(path: p("/a"), queryObject: .emptyObject)))).encode()) == transcript[9])
        #expect(utf8(RealtimeMessage.request(RealtimeRequest(r: 3, .listen(RealtimeListen(path: p("/a"), hash: "")))).encode()) == transcript[11])
        let tagged = RealtimeListen(path: p("/q"), queryObject: try JSONText(validating: #"{"l":2,"vf":"r","i":"x"}"#), tag: 1, hash: "")
        #expect(utf8(RealtimeMessage.request(RealtimeRequest(r: 5, .listen(tagged))).encode()) == transcript[17])
        #expect(utf8(RealtimeMessage.request(RealtimeRequest(r: 4, .put(path: p("/a/b"), value: .int(2), hash: nil))).encode()) == transcript[14])
        #expect(utf8(RealtimeMessage.request(RealtimeRequest(r: 10, .unlisten(RealtimeListen(path: p("/counter"))))).encode()) == transcript[32])
        let presence = RealtimeRequest(r: 2, .onDisconnectPut(path: p("/presence/u1"), value: json(#"{"at":{".sv":"timestamp"},"state":"offline"}"#)))
        #expect(utf8(RealtimeMessage.request(presence).encode()) == transcript[33])
        // The root: "/" in requests, "" in pushes.
        #expect(utf8(RealtimeMessage.request(RealtimeRequest(r: 1, .onDisconnectCancel(path: .root))).encode())
                == #"{"t":"d","d":{"r":1,"a":"oc","b":{"p":"/","d":null}}}"#)
        #expect(utf8(RealtimeMessage.push(.put(path: .root, value: .null, tag: nil)).encode()) == #"{"t":"d","d":{"a":"d","b":{"p":"","d":null}}}"#)
    }

    @Test("the other requests and pushes round-trip as values")
    func otherShapes() throws {
        let frames = [
            #"{"t":"d","d":{"r":11,"a":"m","b":{"p":"/a","d":{"b/c":1,"d":null}}}}"#,
            #"{"t":"d","d":{"r":12,"a":"om","b":{"p":"/a","d":{"x":"y"}}}}"#,
            #"{"t":"d","d":{"r":13,"a":"oc","b":{"p":"/a","d":null}}}"#,
            #"{"t":"d","d":{"r":14,"a":"auth","b":{"cred":"eyJ.x.y"}}}"#,
            #"{"t":"d","d":{"r":15,"a":"gauth","b":{"cred":"owner","noauth":true}}}"#,
            #"{"t":"d","d":{"r":16,"a":"unauth","b":{}}}"#,
            #"{"t":"d","d":{"r":17,"a":"appcheck","b":{"token":"t"}}}"#,
            #"{"t":"d","d":{"r":18,"a":"unappeck","b":{}}}"#,
            #"{"t":"d","d":{"r":19,"a":"n","b":{"p":"/q","q":{"l":2,"vf":"r","i":"x"},"t":1}}}"#,
            #"{"t":"d","d":{"r":20,"a":"zz","b":{"any":[1,2]}}}"#,
            #"{"t":"d","d":{"a":"c","b":{"p":"secret","q":[{"l":2,"vf":"r","i":"x"}]}}}"#,
            #"{"t":"d","d":{"a":"c","b":{"p":"secret"}}}"#,
            #"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"Auth token is expired"}}}"#,
            #"{"t":"d","d":{"a":"sd","b":{"msg":"rule x"}}}"#,
            #"{"t":"d","d":{"a":"rm","b":{"p":"a","d":[]}}}"#,
        ]
        for f in frames { #expect(utf8(try decode(f).encode()) == f) }
        guard case .request(let raw) = try decode(frames[9]), case .raw(let action, let body) = raw.action else { Issue.record("raw"); return }
        #expect(action == "zz" && body.description == #"{"any":[1,2]}"#)
        guard case .request(let g) = try decode(frames[4]), case .gauth("owner", .unauthenticated) = g.action else { Issue.record("noauth"); return }
        // The legacy names l and u are listen and unlisten.
        guard case .request(let l) = try decode(#"{"t":"d","d":{"r":1,"a":"l","b":{"p":"/a"}}}"#), case .listen = l.action else { Issue.record("l"); return }
        #expect(l.action.name == "q")
        #expect(RealtimeRequest.isWrite(action: "p") && RealtimeRequest.isWrite(action: "m") && !RealtimeRequest.isWrite(action: "o"))
    }

    @Test("a stream event becomes the push of a listen at its location")
    func pushesFromEvents() throws {
        let put = RealtimePush(.put(p("b"), .int(1)), at: p("/a"), tag: nil)
        #expect(utf8(RealtimeMessage.push(put).encode()) == #"{"t":"d","d":{"a":"d","b":{"p":"a/b","d":1}}}"#)
        // A one-path patch is a set at that path; more paths are a merge, tagged for a query.
        let one = RealtimePush(.patch(.root, [(p("u1/state"), .string("off"))]), at: p("/presence"), tag: nil)
        #expect(utf8(RealtimeMessage.push(one).encode()) == #"{"t":"d","d":{"a":"d","b":{"p":"presence/u1/state","d":"off"}}}"#)
        let two = RealtimePush(.patch(.root, [(p("a"), .int(1)), (p("b"), .null)]), at: p("/q"), tag: 3)
        #expect(utf8(RealtimeMessage.push(two).encode()) == #"{"t":"d","d":{"a":"m","b":{"p":"q","d":{"a":1,"b":null},"t":3}}}"#)
    }

    @Test("the auth answer carries the claims, or null")
    func authAnswer() throws {
        let claims = try JSONText(validating: #"{"uid":"u1"}"#)
        #expect(utf8(RealtimeMessage.response(.authenticated(4, claims: claims)).encode())
                == #"{"t":"d","d":{"r":4,"b":{"s":"ok","d":{"auth":{"uid":"u1"},"expires":null}}}}"#)
        #expect(utf8(RealtimeMessage.response(.authenticated(5, claims: nil)).encode())
                == #"{"t":"d","d":{"r":5,"b":{"s":"ok","d":{"auth":null,"expires":null}}}}"#)
    }

    @Test("a long message goes as a count and pieces, and comes back whole")
    func splitAndJoin() throws {
        let big = String(repeating: "x", count: 20_000)
        let message = RealtimeMessage.request(RealtimeRequest(r: 13, .put(path: p("/big"), value: .string(big), hash: nil))).encode()
        let frames = RealtimeFraming.frames(message)
        #expect(frames.count == 3 && utf8(frames[0]) == "2" && frames[1].count == 16_384)
        #expect(utf8(frames[1]).hasPrefix(#"{"t":"d","d":{"r":13,"a":"p","b":{"p":"/big","d":"xxx"#))
        var assembler = RealtimeFraming.Assembler()
        var whole: [UInt8]? = nil
        for f in frames { if case .message(let m) = try assembler.receive(f) { whole = m } }
        guard case .request(let r) = try RealtimeMessage.decode(try #require(whole)), case .put(_, let v, _) = r.action else {
            Issue.record("not the put"); return
        }
        #expect(same(v, "\"" + big + "\""))
        #expect(RealtimeFraming.keepAlive == bytes("0"))
    }
}

@Suite("Realtime messages: hostile input gives a precise error")
struct RealtimeHostileMessageTests {
    typealias E = RealtimeDecodingError

    static let envelopeCases: [(String, E)] = [
        ("[]", E(.envelope, .wrongType("the message", expected: "an object"))),
        (#"{"d":{}}"#, E(.envelope, .missing("t"))),
        (#"{"t":5,"d":{}}"#, E(.envelope, .wrongType("t", expected: "a string"))),
        (#"{"t":"x","d":{}}"#, E(.envelope, .unknownType("x"))),
        (#"{"t":"d"}"#, E(.envelope, .missing("d"))),
        (#"{"t":"d","d":5}"#, E(.envelope, .wrongType("d", expected: "an object"))),
        (#"{"t":"d","d":{}}"#, E(.envelope, .missing("d.a"))),
        (#"{"t":"d","d":{"r":"1","a":"p"}}"#, E(.envelope, .wrongType("d.r", expected: "an integer"))),
        (#"{"t":"d","d":{"r":1.5,"a":"p"}}"#, E(.envelope, .wrongType("d.r", expected: "an integer"))),
        (#"{"t":"d","d":{"r":1,"a":5}}"#, E(.envelope, .wrongType("d.a", expected: "a string"))),
        (#"{"t":"c","d":5}"#, E(.envelope, .wrongType("d", expected: "an object"))),
        (#"{"t":"c","d":{"d":{}}}"#, E(.envelope, .missing("d.t"))),
        (#"{"t":"c","d":{"t":"h","d":{"s":"x"}}}"#, E(.control("h"), .missing("d.d.ts"))),
        (#"{"t":"c","d":{"t":"h","d":{"ts":1,"s":7}}}"#, E(.control("h"), .wrongType("d.d.s", expected: "a string"))),
        (#"{"t":"c","d":{"t":"r","d":5}}"#, E(.control("r"), .wrongType("d.d", expected: "a string"))),
        (#"{"t":"d","d":{"r":1,"b":{"d":""}}}"#, E(.response, .missing("d.b.s"))),
        (#"{"t":"d","d":{"r":1}}"#, E(.response, .missing("d.b"))),
        (#"{"t":"d","d":{"a":"d","b":{"p":"a","d":1,"t":"x"}}}"#, E(.push("d"), .wrongType("d.b.t", expected: "an integer"))),
        (#"{"t":"d","d":{"a":"d","b":{"d":1}}}"#, E(.push("d"), .missing("d.b.p"))),
        (#"{"t":"d","d":{"a":"m","b":{"p":"a","d":[1]}}}"#, E(.push("m"), .wrongType("d.b.d", expected: "an object"))),
        (#"{"t":"d","d":{"a":"c","b":{"p":"a","q":{}}}}"#, E(.push("c"), .wrongType("d.b.q", expected: "an array of one query object"))),
    ]

    @Test("envelopes, controls, responses and pushes", arguments: envelopeCases)
    func structure(_ c: (String, E)) {
        #expect(throws: c.1) { try decode(c.0) }
    }

    @Test("not JSON: where and why", arguments: [
        bytes(#"{"t":"d","d":{"r":2,"a":"p","b":{"p":"/a","d":{"x":}}}}"#),
        bytes("not json"),
        [],
        // Invalid UTF-8 inside a string.
        bytes(#"{"t":"d","d":{"r":1,"a":"g","b":{"p":"/"#) + [0xFF] + bytes(#""}}}"#),
        bytes(String(repeating: "[", count: 700) + String(repeating: "]", count: 700)),
    ])
    func notJSON(_ input: [UInt8]) {
        do {
            _ = try RealtimeMessage.decode(input)
            Issue.record("decoded: \(utf8(input).prefix(40))")
        } catch {
            guard case .notJSON = error.reason else { Issue.record("\(error)"); return }
            #expect(error.context == .envelope)
        }
    }

    static let bodyCases: [(String, Int64, String, RTDBError.Code, String?)] = [
        (#"{"t":"d","d":{"r":1,"a":"p","b":{"d":1}}}"#, 1, "p", .invalidPath, "a path (p) is needed"),
        (#"{"t":"d","d":{"r":1,"a":"p"}}"#, 1, "p", .invalidPath, "a path (p) is needed"),
        (#"{"t":"d","d":{"r":2,"a":"q","b":{"p":5}}}"#, 2, "q", .invalidPath, "a path (p) is needed"),
        (#"{"t":"d","d":{"r":3,"a":"m","b":{"p":"/a","d":5}}}"#, 3, "m", .invalidData, "a merge needs an object"),
        (#"{"t":"d","d":{"r":4,"a":"q","b":{"p":"/a","q":{"l":-1}}}}"#, 4, "q", .invalidQuery, "invalid limit"),
        (#"{"t":"d","d":{"r":5,"a":"g","b":{"p":"/a","q":{"i":7}}}}"#, 5, "g", .invalidQuery, "index must be a string"),
        (#"{"t":"d","d":{"r":6,"a":"p","b":{"p":"/a","d":1,"h":5}}}"#, 6, "p", .invalidData, "h must be a string"),
        (#"{"t":"d","d":{"r":7,"a":"gauth","b":{"cred":"owner","authvar":5}}}"#, 7, "gauth", .invalidData, "authvar must be an object"),
        (#"{"t":"d","d":{"r":8,"a":"auth","b":{}}}"#, 8, "auth", .invalidData, "a credential (cred) is needed"),
        (#"{"t":"d","d":{"r":9,"a":"p","b":{"p":"/a.b","d":1}}}"#, 9, "p", .invalidPath, nil),
        (#"{"t":"d","d":{"r":10,"a":"o","b":{"p":"/a","d":{".value":1,"x":2}}}}"#, 10, "o", .invalidData, nil),
        (#"{"t":"d","d":{"r":11,"a":"om","b":{"p":"/a","d":{"x":{".value":1,"y":2}}}}}"#, 11, "om", .invalidData, nil),
    ]

    @Test("a request's body: the error keeps the request's number, to answer it", arguments: bodyCases)
    func bodies(_ c: (String, Int64, String, RTDBError.Code, String?)) {
        do {
            _ = try decode(c.0)
            Issue.record("decoded: \(c.0)")
        } catch let e as RealtimeDecodingError {
            guard let refused = e.refusedRequest else { Issue.record("\(e)"); return }
            #expect(refused.r == c.1 && refused.action == c.2)
            #expect(refused.error.code == c.3, "\(refused.error)")
            if let m = c.4 { #expect(refused.error.message == m) }
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("a push's data that is not valid data is refused with its place")
    func pushData() {
        #expect(throws: (any Error).self) { try decode(#"{"t":"d","d":{"a":"d","b":{"p":"a.b","d":1}}}"#) }
        do {
            _ = try RealtimeMessage.decode(bytes(#"{"t":"d","d":{"a":"m","b":{"p":"a","d":{"x":{".value":1,"y":2}}}}}"#))
            Issue.record("decoded")
        } catch {
            guard case .invalidData(let place, _) = error.reason else { Issue.record("\(error)"); return }
            #expect(place == "d.b.d.x" && error.context == .push("m"))
        }
    }
}
