import RTDBCore
import RTDBWire

/// Reads past the server's response limit (Firebase answers no read larger than 256 MB, with
/// "Data requested exceeds the maximum size that can be accessed with a single request"): a
/// node refused whole is walked instead, a shallow read for its keys, then its children in
/// key-ordered pages (`orderBy="$key"`, `startAt`/`endAt` the page's first and last key,
/// `limitToFirst` its size), a child refused even alone walked the same way. The text written
/// is what one read would have given (`JSONWriter` of the whole value), piece by piece, so
/// memory holds one page and the keys of the nodes being walked, never the whole value.
extension RemoteDatabase: StreamingReads {
    /// Pages aim at answers of about this many bytes (sized from the previous page).
    static let walkPageBytes = 4 << 20
    static let walkFirstPage = 100
    static let walkMaxPage = 10_000

    public func streamJSON(_ path: Path, export: Bool, pretty: Bool, progress: ProgressSink,
                           to write: ([UInt8]) throws -> Void) throws {
        // No ETag is asked for: a command that only prints the value has no use for it, and the
        // server would have to hash the whole value before it could answer.
        let params: [(name: String, value: String)] = export ? [("format", "export")] : []
        let r = try send("GET", path, params: params, idempotent: true)
        if !RemoteErrors.isResponseTooLarge(r) {
            let v = try value(r, "a read of \(path)")
            var out: [UInt8] = []
            JSONWriter(pretty: pretty, export: export).write(v, into: &out)
            try write(out)
            return
        }
        // The progress counts the bytes of the answers read and the children read in pages:
        // how many requests and children a walk takes is not known before it is done.
        progress.begin("read", total: nil, unit: .bytes)
        progress.count(0, "children")
        defer { progress.end() }
        try withoutActuallyEscaping(write) { write in
            var walk = RemoteWalk(db: self, export: export, pretty: pretty, progress: progress, write: write)
            walk.bytesRead = Int64(r.body.count)
            try walk.node(path, level: 0)
            try walk.flush()
        }
    }
}

/// One walk of a node too large to read at once (see `RemoteDatabase.streamJSON`).
struct RemoteWalk {
    let db: RemoteDatabase
    let export: Bool
    let pretty: Bool
    let progress: ProgressSink
    let write: ([UInt8]) throws -> Void
    var out: [UInt8] = []
    /// Requests made, for the benchmarks and the tests.
    var requests = 1
    /// The bytes of the answers read so far, and the children read in pages (the progress shown).
    var bytesRead: Int64 = 0
    var childrenRead: Int64 = 0

    init(db: RemoteDatabase, export: Bool, pretty: Bool, progress: ProgressSink, write: @escaping ([UInt8]) throws -> Void) {
        self.db = db
        self.export = export
        self.pretty = pretty
        self.progress = progress
        self.write = write
    }

    mutating func flush() throws {
        if out.isEmpty { return }
        try write(out)
        out.removeAll(keepingCapacity: true)
    }

    mutating func get(_ path: Path, _ params: [(name: String, value: String)]) throws -> HTTPClientResponse {
        requests += 1
        // Each page is one request, bounded by the client's timeout on its own: a walk of any
        // size never runs into it as long as every page is answered in time.
        let r = try db.send("GET", path, params: params, idempotent: true)
        bytesRead += Int64(r.body.count)
        try progress.update(done: bytesRead)
        return r
    }

    /// Writes the node at `path`, `level` deep, walking it page by page.
    mutating func node(_ path: Path, level: Int) throws {
        guard let children = try childKeys(path) else {
            // Not an object after all (it changed meanwhile): small enough to read.
            let v = try db.value(try get(path, export ? [("format", "export")] : []), "a read of \(path)")
            JSONWriter(pretty: pretty, export: export).write(v, into: &out)
            return
        }
        let keys = children.map(\.key)
        var priority: Node = .null
        if export {
            priority = try db.value(try get(path.priority, []), "a read of \(path.priority)")
        }
        let arrayLength = export ? nil : JSONWriter.arrayLength(children)
        out.append(arrayLength != nil ? UInt8(ascii: "[") : UInt8(ascii: "{"))
        var written = 0      // children written (array: the next index)
        var i = 0
        var pageSize = RemoteDatabase.walkFirstPage
        // Children far larger than a page are walked one by one rather than read whole: one
        // answer of hundreds of megabytes could outlast the timeout, which bounds each request.
        // Set once two of them together were refused, or one weighed more than four pages.
        var walkEach = false
        while i < keys.count {
            if walkEach {
                separator(key: keys[i], written: &written, array: arrayLength != nil, level: level)
                try self.node(path.appending(keys[i]), level: level + 1)
                i += 1
                try flushIfLarge()
                continue
            }
            let n = min(pageSize, keys.count - i)
            let page = Array(keys[i..<(i + n)])
            let query = Query(order: .key, start: Query.Bound(.string(page[0])), end: Query.Bound(.string(page[n - 1])), limit: .first(n))
            var params = RESTQuery.parameters(query)
            if export { params.append(("format", "export")) }
            let r = try get(path, params)
            if RemoteErrors.isResponseTooLarge(r) {
                if n > 1 {
                    pageSize = max(1, n / 2)
                    if n == 2 { walkEach = true }
                    continue
                }
                // One child too large alone: walk it.
                separator(key: page[0], written: &written, array: arrayLength != nil, level: level)
                try self.node(path.appending(page[0]), level: level + 1)
                i += 1
                try flushIfLarge()
                continue
            }
            let answer = try db.value(r, "a page of \(path)")
            for key in page {
                let child = answer.child(key)
                if child.isNull { continue }   // removed since the shallow read
                separator(key: key, written: &written, array: arrayLength != nil, level: level)
                JSONWriter(pretty: pretty, export: export).write(child, into: &out, level: level + 1)
                childrenRead += 1
            }
            progress.count(childrenRead, "children")
            try progress.update(done: bytesRead)
            i += n
            // The next page aims at the target size, from what this one weighed per child.
            let perChild = max(1, r.body.count / n)
            if perChild > 4 * RemoteDatabase.walkPageBytes { walkEach = true }
            pageSize = min(RemoteDatabase.walkMaxPage, max(1, RemoteDatabase.walkPageBytes / perChild))
            try flushIfLarge()
        }
        if !priority.isNull {
            out.append(UInt8(ascii: ","))
            newline(level + 1)
            JSONWriter.append("\".priority\":" as StaticString, to: &out)
            if pretty { out.append(0x20) }
            JSONWriter(pretty: pretty).write(priority, into: &out, level: level + 1)
        }
        if written > 0 { newline(level) }
        out.append(arrayLength != nil ? UInt8(ascii: "]") : UInt8(ascii: "}"))
    }

    /// The children of `path` (each `true`), in key order, or nil when it is not an object: one
    /// shallow read, or when even that is refused, shallow pages (`limitToFirst`, `startAfter`).
    mutating func childKeys(_ path: Path) throws -> [Node.Entry]? {
        let r = try get(path, [("shallow", "true")])
        if !RemoteErrors.isResponseTooLarge(r) {
            guard case .object(let children) = try db.value(r, "a shallow read of \(path)") else { return nil }
            return children
        }
        var all: [Node.Entry] = []
        var pageSize = RemoteDatabase.walkMaxPage
        while true {
            var params: [(name: String, value: String)] = [("shallow", "true"), ("limitToFirst", String(pageSize))]
            if let last = all.last { params.append(("startAfter", JSONWriter.string(.string(last.key)))) }
            let page = try get(path, params)
            if RemoteErrors.isResponseTooLarge(page) {
                if pageSize == 1 { throw RemoteErrors.error(page, target: db.target, what: "a shallow read of \(path)") }
                pageSize = max(1, pageSize / 2)
                continue
            }
            guard case .object(let children) = try db.value(page, "a shallow read of \(path)") else {
                return all.isEmpty ? nil : all
            }
            all += children
            if children.count < pageSize { return all }
        }
    }

    mutating func flushIfLarge() throws {
        if out.count >= 1 << 16 { try flush() }
    }

    /// What comes before a child: the comma, the line break, the key (in an array: nulls for
    /// the indices skipped).
    mutating func separator(key: String, written: inout Int, array: Bool, level: Int) {
        if array {
            let index = Int(key) ?? written
            while written < index {
                if written > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                JSONWriter.append("null" as StaticString, to: &out)
                written += 1
            }
            if written > 0 { out.append(UInt8(ascii: ",")) }
            newline(level + 1)
            written = index + 1
            return
        }
        if written > 0 { out.append(UInt8(ascii: ",")) }
        written += 1
        newline(level + 1)
        JSONWriter.appendString(key, to: &out)
        out.append(UInt8(ascii: ":"))
        if pretty { out.append(0x20) }
    }

    mutating func newline(_ level: Int) {
        guard pretty else { return }
        out.append(0x0A)
        for _ in 0..<(level * 2) { out.append(0x20) }
    }
}
