import Foundation
import Testing
import RTDBNet
@testable import RTDBServer

/// Streams whose first value is large are opened away from the loop (`StreamOpener`), over a
/// real server: each hears its first value and then every later write once, in commit order,
/// whether writes race with the opening or not; a client gone before its stream opened costs
/// nothing and breaks nothing.
@Suite(.serialized) struct StreamOpenerTests {
    /// An object with a `pad` longer than `StreamOpener.threshold` and a counter `n`.
    static func value(_ n: Int) -> String {
        #"{"n":\#(n),"pad":""# + String(repeating: "p", count: StreamOpener.threshold + 10) + #""}"#
    }

    @Test func streamsOpenedWhileWritesRaceHearEachWriteOnceInOrder() throws {
        try withServerOnFreshFile { server, _ in
            let s = try connect(server)
            defer { s.close() }
            #expect(try exchange(s, "PUT", "/big.json", StreamOpenerTests.value(0)).0 == 200)
            // Several streams open on the large value while writes of n go on between them.
            var streams: [SSEClient] = []
            for i in 1...4 {
                streams.append(try SSEClient(server, i % 2 == 0 ? "/big.json" : #"/.json?orderBy="$key"&limitToFirst=1"#))
                #expect(try exchange(s, "PUT", "/big/n.json", String(i)).0 == 200)
            }
            #expect(try exchange(s, "PUT", "/big/n.json", "100").0 == 200)
            for (i, stream) in streams.enumerated() {
                let plain = (i + 1) % 2 == 0
                // The first value holds some n; the events after it raise n one write at a
                // time up to 100, none twice, none missed.
                let first = try #require(try stream.next())
                let prefix = plain ? #"put {"path":"/","data":{"n":"# : #"put {"path":"/","data":{"big":{"n":"#
                #expect(first.hasPrefix(prefix), "\(first.prefix(60))")
                var n = Int(first.dropFirst(prefix.count).prefix { $0 != "," }) ?? -1
                while n < 100 {
                    let event = try #require(try stream.next(), "stream \(i) stopped at n = \(n)")
                    let next: Int
                    if plain {
                        #expect(event.hasPrefix(#"put {"path":"/n","data":"#), "\(event.prefix(60))")
                        next = Int(event.dropFirst(#"put {"path":"/n","data":"#.count).dropLast()) ?? -1
                    } else {
                        // A query stream is read again on each write: a patch of the window.
                        #expect(event.hasPrefix(#"patch {"path":"/","data":{"big":{"n":"#), "\(event.prefix(60))")
                        next = Int(event.dropFirst(#"patch {"path":"/","data":{"big":{"n":"#.count).prefix { $0 != "," }) ?? -1
                    }
                    #expect(next > n && (next == n + 1 || next == 100), "stream \(i): \(n) then \(next)")
                    n = next
                }
            }
        }
    }

    @Test func aClientGoneBeforeItsStreamOpenedLeavesNothingBehind() throws {
        try withServerOnFreshFile { server, _ in
            let s = try connect(server)
            defer { s.close() }
            #expect(try exchange(s, "PUT", "/big.json", StreamOpenerTests.value(0)).0 == 200)
            for _ in 0..<20 {
                let gone = try SSEClient(server, "/big.json")
                gone.stream.close()
            }
            // The server goes on: writes are answered, a new stream opens and hears them.
            #expect(try exchange(s, "PUT", "/big/n.json", "1").0 == 200)
            let stream = try SSEClient(server, "/big.json")
            #expect(try stream.next()?.hasPrefix(#"put {"path":"/","data":{"n":1,"#) == true)
            #expect(try exchange(s, "PUT", "/big/n.json", "2").0 == 200)
            #expect(try stream.next() == #"put {"path":"/n","data":2}"#)
        }
    }
}
