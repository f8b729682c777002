import RTDBCore

/// One event of a REST stream: `put` replaces the value at `path`
/// (relative to the listened location) with `data`; `patch` replaces each relative path named in
/// `entries` under `path`, all at once (`null` deletes).
public enum StreamEvent: Sendable {
    case put(Path, Node)
    case patch(Path, [(path: Path, value: Node)])

    /// The `data:` line of the event, as Firebase sends it.
    public var data: String { data(export: false) }

    /// The `data:` line; with `export`, values carry their priorities (`format=export`).
    public func data(export: Bool) -> String {
        let writer = JSONWriter(export: export)
        var out: [UInt8] = []
        out.append(contentsOf: Array(#"{"path":"#.utf8))
        switch self {
        case .put(let p, let v):
            JSONWriter.appendString(p.description, to: &out)
            out.append(contentsOf: Array(#","data":"#.utf8))
            writer.write(v, into: &out)
        case .patch(let p, let entries):
            JSONWriter.appendString(p.description, to: &out)
            out.append(contentsOf: Array(#","data":{"#.utf8))
            // Written by hand: keys are relative paths, nulls must stay, and index-like keys
            // must not turn the object into an array.
            for (i, e) in entries.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(e.path.unrooted, to: &out)
                out.append(UInt8(ascii: ":"))
                writer.write(e.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The whole Server-Sent Events frame (`event: put` / `patch`, then the `data:` line).
    public func sseFrame(export: Bool) -> [UInt8] {
        SSE.frame(event: name, data: data(export: export))
    }

    public var name: String {
        switch self {
        case .put: return "put"
        case .patch: return "patch"
        }
    }
}

/// The events of a stream on a query: the window's children that changed, as one `patch /`
/// (children that left the window are `null`).
public enum QueryStreamDiff {
    public static func events(old: [Node.Entry], new: [Node.Entry]) -> StreamEvent? {
        var changes: [(path: Path, value: Node)] = []
        // Keys compare byte for byte: String's hashing would merge canonically equal keys.
        var oldByKey: [[UInt8]: Node] = [:]
        for e in old { oldByKey[Array(e.key.utf8)] = e.node }
        var newKeys = Set<[UInt8]>()
        for e in new {
            let k = Array(e.key.utf8)
            newKeys.insert(k)
            if let before = oldByKey[k], before.same(as: e.node) { continue }
            changes.append((Path(validatedKeys: [e.key]), e.node))
        }
        for e in old where !newKeys.contains(Array(e.key.utf8)) {
            changes.append((Path(validatedKeys: [e.key]), .null))
        }
        if changes.isEmpty { return nil }
        if new.isEmpty { return .put(.root, .null) }
        return .patch(.root, changes)
    }
}
