import Foundation
import Testing

/// The URL `rtdb serve` prints is the URL `--url` takes: without `?ns=` a command uses the
/// namespace the server picks for it, and `-v` says which and why.
@Suite struct ServeURLTests {
    @Test func theListeningURLWorksAsPrinted() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        #expect(!server.url.contains("?"))
        expectLines(sb.rtdb("--url", server.url, "set", "/a", "1"), [#"{"path":"/a","value":1}"#])
        expectOK(sb.rtdb("--url", server.url, "get", "/a"), "1\n")
        // Every namespace is the served file: the write is in it.
        expectOK(sb.rtdb("get", "/a"), "1\n")
        let v = sb.rtdb("-v", "--url", server.url, "get", "/a")
        #expect(v.status == 0 && v.stdout == "1\n", "\(v)")
        let said = v.stderr.split(separator: "\n").compactMap { object(String($0))?["verbose"] as? String }
        #expect(said == ["remote database \(server.url)?ns=fake-server (--url): namespace fake-server (the URL names none: "
                         + "the server's default for this host, as rtdb serve and the emulator pick it); no credential"], "\(v)")
    }

    /// With --data-dir each namespace is a file: a URL without ns reaches the one the server
    /// uses for requests without ns, whichever way they come (REST here, curl without ns).
    @Test func withADataFolderTheDefaultNamespaceIsTheServers() throws {
        let sb = Sandbox()
        let dir = sb.dir + "/dbs"
        let server = try #require(ServeProcess(sb, ["--data-dir", dir]))
        expectLines(sb.rtdb("--url", server.url, "set", "/who", #""default""#), [#"{"path":"/who","value":"default"}"#])
        #expect(sb.exists(dir + "/fake-server.db"))
        #expect(curl(sb, [server.url + "/who.json"]).body == #""default""#)
        expectOK(sb.rtdb("--url", server.url + "?ns=other", "get", "/who"), "null\n")
        let v = sb.rtdb("-v", "--url", server.url + "?ns=other", "get", "/who")
        #expect(v.stderr.contains("namespace other (from ?ns= in the URL)"), "\(v)")
    }

    @Test func verboseNamesTheDatabaseFile() {
        let sb = Sandbox()
        let v = sb.rtdb("-v", "get", "/")
        #expect(v.status == 0 && v.stdout == "null\n")
        #expect(v.stderr == #"{"verbose":"database file \#(sb.db) (RTDB_DB); it does not exist yet"}"# + "\n", "\(v)")
        let other = sb.dir + "/x.db"
        #expect(sb.rtdb("--db", other, "set", "/a", "1", "-q").status == 0)
        let w = sb.rtdb("--db", other, "--verbose", "get", "/a")
        #expect(w.stdout == "1\n" && w.stderr == #"{"verbose":"database file \#(other) (--db)"}"# + "\n", "\(w)")
        // Without -v nothing is said.
        expectOK(sb.rtdb("--db", other, "get", "/a"), "1\n")
    }

    /// An https URL without a port or ns, not a Firebase host, is still refused (a mistyped
    /// production URL more likely than an emulator).
    @Test func anHTTPSURLWithoutPortOrNamespaceIsRefused() {
        let sb = Sandbox()
        expectError(sb.rtdb("--url", "https://my-db.firebaseio.co", "get", "/"), status: 2, code: "usage")
    }
}
