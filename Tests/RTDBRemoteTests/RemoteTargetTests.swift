import RTDBCore
@testable import RTDBRemote
import Testing

@Suite struct RemoteTargetTests {
    @Test func productionURLs() throws {
        let a = try RemoteTarget.parse("https://my-db.firebaseio.com")
        #expect(a == RemoteTarget(secure: true, host: "my-db.firebaseio.com", port: 443, namespace: "my-db", emulator: false))
        let b = try RemoteTarget.parse("https://My-DB.europe-west1.firebasedatabase.app/")
        #expect(b.namespace == "my-db")
        #expect(b.host == "my-db.europe-west1.firebasedatabase.app")
        #expect(!b.emulator)
    }

    @Test func emulatorURLs() throws {
        let a = try RemoteTarget.parse("http://127.0.0.1:9000?ns=demo")
        #expect(a == RemoteTarget(secure: false, host: "127.0.0.1", port: 9000, namespace: "demo", emulator: true))
        let b = try RemoteTarget.parse("https://[::1]:8443/?ns=x_1")
        #expect(b == RemoteTarget(secure: true, host: "[::1]", port: 8443, namespace: "x_1", emulator: true))
        #expect(try RemoteTarget.parse("http://localhost?ns=a").port == 80)
    }

    /// Without `?ns=`, an emulator-style URL (plain http, or one naming its port, as `rtdb
    /// serve` prints it) takes the namespace the server would pick, and says where it came from.
    @Test func emulatorURLsWithoutANamespace() throws {
        let a = try RemoteTarget.parse("http://127.0.0.1:9000")
        #expect(a == RemoteTarget(secure: false, host: "127.0.0.1", port: 9000, namespace: "fake-server", emulator: true))
        #expect(a.namespaceSource == .serverDefault)
        #expect(a.display == "http://127.0.0.1:9000?ns=fake-server")
        #expect(a.requestTarget(.root, []) == "/.json?ns=fake-server")
        #expect(try RemoteTarget.parse("https://[::1]:9443/").namespace == "fake-server")
        #expect(try RemoteTarget.parse("http://mydb.localhost:9000").namespace == "mydb")
        #expect(try RemoteTarget.parse("http://localhost").namespace == "fake-server")
        #expect(try RemoteTarget.parse("http://127.0.0.1:9000?ns=demo").namespaceSource == .parameter)
        #expect(try RemoteTarget.parse("https://my-db.firebaseio.com").namespaceSource == .productionHost)
    }

    @Test func theEmulatorHostVariableRedirectsProductionOnly() throws {
        let a = try RemoteTarget.parse("https://my-db.firebaseio.com", emulatorHost: "localhost:9000")
        #expect(a == RemoteTarget(secure: false, host: "localhost", port: 9000, namespace: "my-db", emulator: true))
        let b = try RemoteTarget.parse("http://127.0.0.1:9001?ns=x", emulatorHost: "localhost:9000")
        #expect(b.port == 9001)
        for bad in ["http://localhost:9000", "localhost", "localhost:"] {
            #expect(throws: RTDBError.self) { try RemoteTarget.parse("https://my-db.firebaseio.com", emulatorHost: bad) }
        }
    }

    @Test(arguments: [
        "ftp://x.firebaseio.com", "my-db.firebaseio.com", "http://my-db.firebaseio.com",
        "https://example.com", "https://my-db.firebaseio.co", "http://127.0.0.1:9000?ns=", "http://127.0.0.1:9000?ns=a&x=1",
        "https://my-db.firebaseio.com/users", "https://my-db.firebaseio.com#x", "https://u:p@my-db.firebaseio.com",
        "http://127.0.0.1:0?ns=a", "http://127.0.0.1:99999?ns=a", "http://127.0.0.1:x?ns=a", "http://?ns=a",
        "https://a.b.firebaseio.com", "http://h t?ns=a", "http://127.0.0.1:9000?ns=a/b",
    ])
    func otherURLsAreUsageErrors(_ url: String) {
        #expect {
            try RemoteTarget.parse(url)
        } throws: { e in
            (e as? RTDBError)?.code == .usage
        }
    }

    @Test func errorsNeverShowCredentialsInTheURL() {
        for (url, secrets) in [("https://alice:hunter2@my-db.firebaseio.com", ["alice", "hunter2"]),
                               ("http://127.0.0.1:9000?ns=a&auth=SECRET-TOKEN", ["SECRET-TOKEN"]),
                               ("http://127.0.0.1:9000/x?access_token=ya29.abc&AUTH=s3", ["ya29.abc", "s3"]),
                               ("http://me@127.0.0.1:0?ns=a", ["me@"])] {
            do {
                _ = try RemoteTarget.parse(url)
                Issue.record("\(url) parsed")
            } catch let e as RTDBError {
                for s in secrets { #expect(!e.message.contains(s), "\(e.message)") }
                #expect(e.message.contains("***"), "\(e.message)")
            } catch {
                Issue.record("\(error)")
            }
        }
        #expect(RemoteTarget.redacted("https://u:p@h/?ns=a&auth=x&b=c") == "https://***@h/?ns=a&auth=***&b=c")
        #expect(RemoteTarget.redacted("http://h:1?ns=a") == "http://h:1?ns=a")
        // The same mask whatever the length of what it hides.
        #expect(RemoteTarget.redacted("http://h?auth=a") == RemoteTarget.redacted("http://h?auth=aaaaaaaaaaaaaaaa"))
    }

    @Test func requestTargetsEncodeKeysAndAddTheNamespace() throws {
        let t = try RemoteTarget.parse("http://h:1?ns=demo")
        #expect(t.requestTarget(.root, []) == "/.json?ns=demo")
        let p = try Path("/a b/é/-N1")
        #expect(t.requestTarget(p, [("orderBy", "\"$key\"")]) == "/a%20b/%C3%A9/-N1.json?orderBy=%22%24key%22&ns=demo")
        let prod = try RemoteTarget.parse("https://x.firebaseio.com")
        #expect(prod.requestTarget(p, []) == "/a%20b/%C3%A9/-N1.json")
    }
}
