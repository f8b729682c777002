import RTDBCore
import RTDBWire

/// Writes and deletes too large for one request, as sequences of bounded ones (the way
/// firebase-tools' `database:import` and `database:remove` work): neither is atomic.
extension RemoteDatabase: ChunkedWrites {
    /// The least chunk a write is split into (a chunk holds at least one value).
    public static let minChunkBytes = 1024

    public func writeChunked(_ path: Path, from source: ByteSource, chunkBytes: Int, force: Bool,
                             progress: ProgressSink) throws -> ChunkedWork {
        if path.isPriority { throw RTDBError(.invalidPath, "a chunked write cannot go to a priority (\(path))") }
        var work = ChunkedWork(requests: 1)
        let listing = try value(send("GET", path, params: [("shallow", "true")], idempotent: true), "a shallow read of \(path)")
        if !listing.isNull {
            guard force else {
                throw RTDBError(.notCommitted, "\(path) holds data, and a chunked write is not atomic, so it goes only to an "
                                + "empty location; nothing was written (give --force to remove what is there first, also in chunks)")
            }
            let removed = try removeChunked(path, progress: progress)
            work.requests += removed.requests
        }
        let sink = ChunkSink(db: self, path: path, chunkBytes: max(RemoteDatabase.minChunkBytes, chunkBytes))
        progress.begin("write", total: source.size, unit: .bytes)
        defer { progress.end() }
        let reader = JSONStreamReader(source: source, sink: sink, base: path, progress: progress)
        try reader.readValue()
        try sink.finish()
        work.requests += sink.work.requests
        work.bytes = sink.work.bytes
        return work
    }

    public func removeChunked(_ path: Path, progress: ProgressSink) throws -> ChunkedWork {
        var remover = ChunkedRemover(db: self, progress: progress)
        progress.begin("remove", total: nil, unit: .items("requests"))
        defer { progress.end() }
        try remover.remove(path)
        return ChunkedWork(requests: remover.requests)
    }

    /// Sends one PATCH of `entries` (relative paths) at `path`; false when the server refuses it
    /// for its size and `sizeRefusalIsAnswer`, else any refusal is an error.
    func patch(_ path: Path, _ body: [UInt8], params: [(name: String, value: String)] = [],
               sizeRefusalIsAnswer: Bool = false, what: String) throws -> Bool {
        let r = try send("PATCH", path, params: params + [("print", "silent")], body: body, idempotent: true)
        if r.status == 200 || r.status == 204 { return true }
        if sizeRefusalIsAnswer && RemoteErrors.isResponseTooLarge(r) { return false }
        throw RemoteErrors.error(r, target: target, what: what)
    }
}

/// Gathers the streamed document's values into multi-path updates of about `chunkBytes`.
///
/// A server may take less in one write than the chunk size (`rtdb serve --max-write-bytes`, a
/// `writeSizeLimit`): a chunk it refuses for its size (413, or 400 "exceeds the maximum size")
/// is sent again in halves, each the same way, and later chunks are at most half the refused
/// one. An entry refused alone goes as its children; a single leaf refused alone is an error
/// that names it, as nothing smaller can be sent. Every split makes the pieces strictly
/// smaller, so the work always ends.
final class ChunkSink: JSONStreamSink {
    /// One entry of a multi-path update: its keys below `path` and its value's JSON text.
    typealias Entry = (keys: [String], text: [UInt8])

    let db: RemoteDatabase
    let path: Path
    /// The most a chunk holds: lowered each time the server refuses one for its size.
    private(set) var chunkBytes: Int
    var work = ChunkedWork()
    /// The entries of the update being gathered, and the size of its body so far.
    private var pending: [Entry] = []
    private var pendingBytes = 1

    init(db: RemoteDatabase, path: Path, chunkBytes: Int) {
        self.db = db
        self.path = path
        self.chunkBytes = chunkBytes
    }

    func value(_ node: Node, at keys: [String], fresh: Bool) throws {
        if !fresh { try removeEarlier(keys) }
        if keys.isEmpty {
            // The whole document was read in one piece: one request when it fits.
            var text: [UInt8] = []
            JSONWriter(export: true).write(node, into: &text)
            if text.count <= chunkBytes || !node.unprioritized.isObject {
                if try send("PUT", text, sizeRefusalIsAnswer: node.unprioritized.isObject) { return }
                // Refused for its size: in chunks of at most half of it.
                chunkBytes = max(1, min(chunkBytes, text.count / 2))
            }
        }
        try add(node, keys)
    }

    /// Adds `node` at `keys`: as one entry when it fits in a chunk, else its children one by one.
    private func add(_ node: Node, _ keys: [String]) throws {
        if node.isNull { return }
        var text: [UInt8] = []
        JSONWriter(export: true).write(node, into: &text)
        if text.count > chunkBytes, case .object(let children) = node.unprioritized {
            for child in children { try add(child.node, keys + [child.key]) }
            if !node.priority.isNull { try add(node.priority, keys + [".priority"]) }
            return
        }
        try entry(keys, text)
    }

    private func entry(_ keys: [String], _ text: [UInt8]) throws {
        let size = ChunkSink.entrySize((keys, text))
        if !pending.isEmpty && pendingBytes + size > chunkBytes { try flush() }
        pending.append((keys, text))
        pendingBytes += size
    }

    /// What an entry adds to a body: its quoted relative path, a colon, its text and a separator.
    static func entrySize(_ e: Entry) -> Int {
        var key: [UInt8] = []
        JSONWriter.appendString(relative(e.keys), to: &key)
        return key.count + 1 + e.text.count + 1
    }

    static func relative(_ keys: [String]) -> String { keys.isEmpty ? "/" : keys.joined(separator: "/") }

    /// `{"rel/path":value,…}`.
    static func body(_ entries: ArraySlice<Entry>) -> [UInt8] {
        var body: [UInt8] = []
        for e in entries {
            body.append(body.isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ","))
            JSONWriter.appendString(relative(e.keys), to: &body)
            body.append(UInt8(ascii: ":"))
            body += e.text
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// A later value for a node the input gave before: what was sent for it goes first.
    private func removeEarlier(_ keys: [String]) throws {
        try flush()
        var text: [UInt8] = []
        JSONWriter.appendString(ChunkSink.relative(keys), to: &text)
        _ = try send("PATCH", [UInt8(ascii: "{")] + text + Array(":null}".utf8))
    }

    func beginObject(at keys: [String], fresh: Bool) throws {
        if !fresh { try removeEarlier(keys) }
    }

    func endObject(at keys: [String], priority: Node?) throws {
        guard let priority, !priority.isNull else { return }
        var text: [UInt8] = []
        JSONWriter().write(priority, into: &text)
        try entry(keys + [".priority"], text)
    }

    func beginEntry(_ key: String) throws -> Path { path }
    func endEntry() throws {}

    func flush() throws {
        guard !pending.isEmpty else { return }
        let held = pending
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 1
        try sendEntries(held[...])
    }

    /// Sends `entries` as one multi-path update; refused for its size, as two halves, each the
    /// same way; a single entry refused goes as its children, or is the error.
    private func sendEntries(_ entries: ArraySlice<Entry>) throws {
        let body = ChunkSink.body(entries)
        if try send("PATCH", body, sizeRefusalIsAnswer: true) { return }
        chunkBytes = max(1, min(chunkBytes, body.count / 2))
        if entries.count > 1 {
            let middle = entries.startIndex + entries.count / 2
            try sendEntries(entries[..<middle])
            try sendEntries(entries[middle...])
            return
        }
        guard let refused = entries.first else { return }
        let node = try JSONReader.parse(refused.text)
        guard case .object(let children) = node.unprioritized else {
            let at = path.appending(Path(validatedKeys: refused.keys))
            throw RTDBError(.tooLarge, "\(db.target.display) refused the value at \(at) (\(refused.text.count) bytes of JSON) as "
                            + "larger than it takes in one write, and a single value cannot be split; the chunks before it were written")
        }
        var parts: [Entry] = children.map { child in
            var text: [UInt8] = []
            JSONWriter(export: true).write(child.node, into: &text)
            return (refused.keys + [child.key], text)
        }
        if !node.priority.isNull {
            var text: [UInt8] = []
            JSONWriter().write(node.priority, into: &text)
            parts.append((refused.keys + [".priority"], text))
        }
        try sendEntries(parts[...])
    }

    func finish() throws {
        try flush()
    }

    /// Sends one request; false when the server refused it for its size and
    /// `sizeRefusalIsAnswer` (the caller splits it); any other refusal is an error.
    private func send(_ method: String, _ bytes: [UInt8], sizeRefusalIsAnswer: Bool = false) throws -> Bool {
        work.requests += 1
        let r = try db.send(method, path, params: [("print", "silent")], body: bytes, idempotent: true)
        if r.status == 200 || r.status == 204 {
            work.bytes += Int64(bytes.count)
            return true
        }
        if sizeRefusalIsAnswer && RemoteErrors.isResponseTooLarge(r) { return false }
        throw RemoteErrors.error(r, target: db.target, what: "a chunk of the write to \(path)")
    }
}

/// Deletes a node in pieces: its children in batches of multi-path updates of nulls (each
/// limited to `writeSizeLimit=tiny`, so that the server refuses what it cannot do quickly
/// instead of blocking), a batch refused split in halves, a single child refused deleted the
/// same way first (so the deepest parts go first). The batch size adapts: it doubles while most
/// batches pass and halves when most are refused.
struct ChunkedRemover {
    let db: RemoteDatabase
    let progress: ProgressSink
    var requests = 0
    var batch = 25
    static let listSize = 1000
    static let maxBatch = 10_000

    init(db: RemoteDatabase, progress: ProgressSink) {
        self.db = db
        self.progress = progress
    }

    mutating func remove(_ path: Path) throws {
        while true {
            requests += 1
            try progress.update(done: Int64(requests))
            let listing = try db.value(db.send("GET", path, params: [("shallow", "true"), ("limitToFirst", String(ChunkedRemover.listSize))],
                                               idempotent: true), "a shallow read of \(path)")
            guard case .object(let children) = listing, !children.isEmpty else { break }
            let keys = children.map(\.key)
            var passed = 0, groups = 0
            var i = 0
            while i < keys.count {
                let group = Array(keys[i..<min(keys.count, i + batch)])
                groups += 1
                if try removeGroup(path, group) { passed += 1 }
                i += group.count
            }
            batch = passed * 2 > groups ? min(ChunkedRemover.maxBatch, batch * 2) : max(1, batch / 2)
        }
        // Now empty (or a leaf): the node itself.
        requests += 1
        try progress.update(done: Int64(requests))
        let r = try db.send("DELETE", path, params: [("print", "silent")], idempotent: true)
        guard r.status == 200 || r.status == 204 else { throw RemoteErrors.error(r, target: db.target, what: "a delete of \(path)") }
    }

    /// Deletes the children `keys` of `path`; true when one request did it.
    mutating func removeGroup(_ path: Path, _ keys: [String]) throws -> Bool {
        requests += 1
        try progress.update(done: Int64(requests))
        let body = RemoteDatabase.objectJSON(keys.map { Node.Entry($0, .null) })
        if try db.patch(path, body, params: [("writeSizeLimit", "tiny")], sizeRefusalIsAnswer: true, what: "a delete under \(path)") {
            return true
        }
        if keys.count > 1 {
            let half = keys.count / 2
            _ = try removeGroup(path, Array(keys[..<half]))
            _ = try removeGroup(path, Array(keys[half...]))
        } else {
            try remove(path.appending(keys[0]))
        }
        return false
    }
}
