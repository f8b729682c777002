import Foundation
import RTDBCore
import RTDBRemote
import RTDBWire
@testable import RTDBOffline

/// A remote database in memory, for the offline cache to talk to without a server: it applies
/// PUT, PATCH and DELETE to its tree (server values resolved), answers GET with ETags
/// (`if-none-match` gives 304), records every request, and can be scripted to refuse requests
/// (`answer`), to be unreachable, or to fail once it has taken a given number of requests.
final class ScriptedRemote: OfflineRemote {
    struct Request {
        var method: String
        var path: Path
        var params: [(name: String, value: String)]
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        var bodyText: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
        /// The request in short: `PUT /a`.
        var line: String { method + " " + path.description }
    }

    let target = RemoteTarget(secure: false, host: "127.0.0.1", port: 9000, namespace: "t", emulator: true)
    var credential: Credential = .none
    /// The server's data.
    var data: Node = .null
    var reachable = true
    /// The server's clock (server timestamps).
    var now: Int64 = 1_800_000_000_000
    private(set) var sent: [Request] = []
    /// Answers a request before the server applies it; nil lets the server apply it.
    var answer: (Request) -> HTTPClientResponse? = { _ in nil }

    var display: String { target.display }

    func connect() throws {
        guard reachable else { throw RTDBError(.unavailable, "cannot connect to \(display): connection refused") }
    }

    func request(_ method: String, _ path: Path, params: [(name: String, value: String)], headers: [(name: String, value: String)],
                 body: [UInt8]?, idempotent: Bool) throws -> HTTPClientResponse {
        try connect()
        let r = Request(method: method, path: path, params: params, headers: headers, body: body ?? [])
        sent.append(r)
        if let scripted = answer(r) { return scripted }
        switch method {
        case "GET":
            let value = data.child(at: path)
            let etag = "\"" + String(JSONWriter.string(value).hashValue, radix: 16) + "\""
            if let tag = r.header("if-none-match"), tag == etag { return ScriptedRemote.reply(304, "") }
            return ScriptedRemote.reply(200, JSONWriter.string(value), headers: r.header("X-Firebase-ETag") == nil ? [] : [("ETag", etag)])
        case "PUT", "DELETE":
            let value = method == "DELETE" ? Node.null : try JSONReader.parse(r.body)
            let resolved = ServerValues.resolve(value, at: path, now: now) { data.child(at: $0) }
            data = data.setting(path, to: resolved)
            return ScriptedRemote.reply(200, JSONWriter.string(resolved))
        case "PATCH":
            let entries = try r.body.withUnsafeBufferPointer { try JSONReader.parseEntries($0) } ?? []
            var answered: [Node.Entry] = []
            for e in entries {
                let at = path.appending(try Path(e.key))
                let resolved = ServerValues.resolve(e.node, at: at, now: now) { data.child(at: $0) }
                answered.append(Node.Entry(e.key, resolved))
            }
            for e in answered { data = data.setting(path.appending(try Path(e.key)), to: e.node) }
            return ScriptedRemote.reply(200, JSONWriter.string(.object(answered)))
        default:
            return ScriptedRemote.reply(405, #"{"error":"method not allowed"}"#)
        }
    }

    static func reply(_ status: Int, _ body: String, headers: [(name: String, value: String)] = []) -> HTTPClientResponse {
        HTTPClientResponse(head: HTTPResponseHead(status: status, headers: headers), body: Array(body.utf8))
    }

    func failure(for answer: HTTPClientResponse, what: String) -> RemoteFailure {
        RemoteErrors.failure(answer, target: target, what: what)
    }

    func answersREST() -> Bool { reachable }

    func connectionInfo() throws -> Node {
        reachable ? Node.object([Node.Entry("connected", .bool(true)), Node.Entry("serverTimeOffset", .int(0))])
            : Node.object([Node.Entry("connected", .bool(false))])
    }

    func observeConnection(idle: () throws -> Bool, onChange: (Node) throws -> Bool) throws {
        _ = try onChange(try connectionInfo())
    }

    func stream(_ path: Path, query: Query?, reconnectMillis: (first: Int, cap: Int), live: @escaping (Bool) -> Void,
                idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        try connect()
        live(true)
        defer { live(false) }
        let value = data.child(at: path)
        guard try onChange(query.map { Node.object(normalizing: $0.window(of: value)) } ?? value, nil) else { return }
        while try idle() {}
    }

    func anotherConnection() -> OfflineRemote { self }

    var database: Database { NoDatabase() }

    /// The requests sent, in short.
    var lines: [String] { sent.map(\.line) }
}

/// Stands where a database is needed and never called.
final class NoDatabase: Database {
    func refuse() -> RTDBError { RTDBError(.unsupported, "not scripted") }
    func get(_ path: Path) throws -> Node { throw refuse() }
    func export(_ path: Path) throws -> Node { throw refuse() }
    func shallow(_ path: Path) throws -> Node { throw refuse() }
    func query(_ path: Path, _ query: Query) throws -> [Node.Entry] { throw refuse() }
    func set(_ path: Path, _ value: Node) throws -> Node { throw refuse() }
    func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] { throw refuse() }
    func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] { throw refuse() }
    func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult { throw refuse() }
    func increment(_ path: Path, by delta: Node) throws -> Node { throw refuse() }
    func observe(_ path: Path, idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws { throw refuse() }
}

/// A cache file and a scripted remote, joined as an offline database.
final class OfflineFixture {
    let temp: TempCache
    let remote = ScriptedRemote()
    let store: CacheStore

    init() {
        temp = TempCache()
        store = temp.store()
    }

    /// The offline database in `mode`, refreshing its credential with `refresh` when given.
    func db(_ mode: CacheMode = .auto, refresh: (() throws -> Credential)? = nil) -> OfflineDatabase {
        OfflineDatabase(cache: store, remote: remote, mode: mode, lockWaitSeconds: 2, refreshCredential: refresh)
    }

    /// Queues writes without sending them (as `--offline` does).
    func queue(_ writes: Write...) throws {
        let offline = db(.offline)
        for w in writes { _ = try offline.commit(w) }
    }
}
