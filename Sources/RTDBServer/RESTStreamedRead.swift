import RTDBCore

/// Reads rendered straight from the stored rows (`StreamingReads`) instead of built whole and
/// then rendered: the answer costs no more memory than its text, and one past
/// `--max-response-bytes` is refused as soon as it outgrows the limit, as Firebase refuses it,
/// instead of after the whole value was built (a walking client asks for such pages often).
extension RESTHandler {
    /// The JSON of a plain read, or of a key-ordered window of children; nil for the reads
    /// this does not cover (other orders), which are built whole.
    func streamedRead(_ c: Context, _ db: StreamingReads, query: Query?, export: Bool) throws -> [UInt8]? {
        var body = LimitedBody(limit: sizeLimits.maxResponseBytes)
        guard let query else {
            try db.streamJSON(c.path, export: export, pretty: false, progress: Progress.none) { try body.append($0) }
            return body.bytes
        }
        // The window's keys, found by seeking to each, then each child from its rows.
        guard let keys = try db.capability(KeyWindowReads.self)?.windowKeys(c.path, query) else { return nil }
        if keys.isEmpty { return Array("null".utf8) }
        try checkWindowBound(c, db, keys)
        let window = keys.map { Node.Entry($0, .bool(true)) }
        let array = export ? nil : JSONWriter.arrayLength(window)
        try body.append([array == nil ? UInt8(ascii: "{") : UInt8(ascii: "[")])
        var next = 0
        for (n, entry) in window.enumerated() {
            var head: [UInt8] = []
            if let _ = array {
                let index = Int(entry.key) ?? next
                while next < index {
                    if next > 0 { head.append(UInt8(ascii: ",")) }
                    head += Array("null".utf8)
                    next += 1
                }
                if next > 0 { head.append(UInt8(ascii: ",")) }
                next = index + 1
            } else {
                if n > 0 { head.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(entry.key, to: &head)
                head.append(UInt8(ascii: ":"))
            }
            try body.append(head)
            try db.streamJSON(c.path.appending(entry.key), export: export, pretty: false, progress: Progress.none) { try body.append($0) }
        }
        try body.append([array == nil ? UInt8(ascii: "}") : UInt8(ascii: "]")])
        return body.bytes
    }
}

/// A response body that refuses to grow past the response limit.
struct LimitedBody {
    let limit: Int
    var bytes: [UInt8] = []

    mutating func append(_ chunk: [UInt8]) throws {
        if bytes.count + chunk.count > limit { throw RESTError(400, ServeLimits.responseTooLarge) }
        bytes += chunk
    }
}
