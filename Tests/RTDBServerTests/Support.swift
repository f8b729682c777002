import Foundation
import Testing
import RTDBCore
import RTDBEngine
import RTDBWire
@testable import RTDBServer

/// One database file per namespace in a temporary folder, created on first write.
final class FolderProvider: NamespaceProvider {
    let dir: String
    private var open: [String: EmbeddedDatabase] = [:]

    init() {
        dir = NSTemporaryDirectory() + "rtdb-rest-" + UUID().uuidString
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func database(_ namespace: String) throws -> Database {
        if let db = open[namespace] { return db }
        let db = EmbeddedDatabase(file: dir + "/" + namespace + ".db", timeoutSeconds: 5,
                                  clock: { 1_700_000_000_000 })
        open[namespace] = db
        return db
    }

    func namespaces() throws -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return files.filter { $0.hasSuffix(".db") }.map { String($0.dropLast(3)) }.sorted()
    }
}

/// A response as the tests read it.
struct Reply {
    var response: HTTPResponse
    var status: Int { response.status }
    var text: String { String(decoding: response.body, as: UTF8.self) }
    func header(_ name: String) -> String? { response.header(name) }
    /// The body parsed back into a value (for bodies whose key order is not significant).
    var value: Node { (try? JSONReader.parse(response.body)) ?? .string("<<not JSON: \(text)>>") }
    var json: String { JSONWriter.string(value) }
}

/// Drives a `RESTHandler` over a fresh folder of databases.
final class Harness {
    let provider = FolderProvider()
    let handler: RESTHandler

    init(secret: String? = nil) {
        handler = RESTHandler(provider: provider, secret: secret)
    }

    func outcome(_ method: String, _ target: String, _ body: String? = nil,
                 headers: [(String, String)] = []) -> RESTOutcome {
        var h = [(name: "Host", value: "localhost:9000")]
        for (n, v) in headers { h.append((n, v)) }
        let request = HTTPRequest(method: method, target: target, headers: h, body: Array((body ?? "").utf8))
        return handler.handle(request)
    }

    @discardableResult
    func send(_ method: String, _ target: String, _ body: String? = nil,
              headers: [(String, String)] = [], sourceLocation: SourceLocation = #_sourceLocation) -> Reply {
        switch outcome(method, target, body, headers: headers) {
        case .response(let r): return Reply(response: r)
        case .stream(let s):
            Issue.record("unexpected stream for \(s.path)", sourceLocation: sourceLocation)
            return Reply(response: HTTPResponse(status: -1))
        }
    }

    func stream(_ target: String, headers: [(String, String)] = [],
                sourceLocation: SourceLocation = #_sourceLocation) -> StreamRequest? {
        switch outcome("GET", target, nil, headers: [("Accept", "text/event-stream")] + headers) {
        case .stream(let s): return s
        case .response(let r):
            Issue.record("expected a stream, got \(r.status) \(String(decoding: r.body, as: UTF8.self))",
                         sourceLocation: sourceLocation)
            return nil
        }
    }

    /// The stored value at `path` in `namespace`, read straight from the database.
    func stored(_ path: String, ns: String = "fake-server") -> String {
        guard let p = try? Path(path), let db = try? provider.database(ns), let v = try? db.get(p) else { return "<<error>>" }
        return JSONWriter.string(v)
    }
}

func node(_ json: String) -> Node {
    (try? JSONReader.parse(json)) ?? .string("<<invalid test JSON>>")
}
