import RTDBCore
import RTDBWire
@testable import RTDBServer
import Testing

/// A client whose URL names no namespace picks the one the server picks for a request to the
/// same host without `ns` (`DefaultNamespace`, which `RemoteTarget` uses): the server's own
/// decision must agree with it.
@Suite struct DefaultNamespaceTests {
    @Test(arguments: ["127.0.0.1:9000", "localhost:9000", "localhost", "mydb.localhost:9000", "my-db.example.com",
                      "[::1]:9000", "10.0.0.1", "a.b", ".x:1", "bad$name.localhost:1", "x_1.lan", "1.2.3.4:5",
                      String(repeating: "n", count: 64) + ".local:9000"])
    func theServerAndTheClientPickTheSameNamespace(_ host: String) throws {
        let handler = Harness().handler
        let request = HTTPRequest(method: "GET", target: "/.json", headers: [(name: "Host", value: host)], body: [])
        #expect(try handler.namespace(request) == DefaultNamespace.forHost(host), "\(host)")
    }
}
