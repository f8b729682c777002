import RTDBCore
import RTDBEngine

/// One event of a REST stream (firebase-semantics §9): `put` replaces the value at `path`
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

    public var name: String {
        switch self {
        case .put: return "put"
        case .patch: return "patch"
        }
    }
}

/// Turns committed writes into the events of a stream on a whole location (no query), keeping
/// the location's current value so that a write that changes nothing there raises nothing.
/// A set stays one `put` and a multi-path update one `patch`, whoever made it:
/// * a write at or below the location: `put`/`patch` at the write's path, relative;
/// * a set above the location: `put /` of the location's new value;
/// * an update above it: the updated paths that fall inside become one `patch /`, or a `put /`
///   when one of them covers the whole location.
public struct LocationStream: Sendable {
    public let location: Path
    public private(set) var value: Node

    public init(location: Path, value: Node) {
        self.location = location
        self.value = value
    }

    /// The first event of every stream: the whole value.
    public var initialEvent: StreamEvent { .put(.root, value) }

    public mutating func apply(_ change: LoggedChange) -> StreamEvent? {
        switch change {
        case .set(let at, let v):
            if let rel = location.relative(at) {
                let new = value.setting(rel, to: v)
                if new.same(as: value) { return nil }
                value = new
                return .put(rel, v)
            }
            if let down = at.relative(location) {
                let new = v.child(at: down)
                if new.same(as: value) { return nil }
                value = new
                return .put(.root, new)
            }
            return nil
        case .update(let base, let entries):
            if let rel = location.relative(base) {
                var new = value
                for e in entries { new = new.setting(rel.appending(e.path), to: e.value) }
                if new.same(as: value) { return nil }
                value = new
                return .patch(rel, entries)
            }
            guard let down = base.relative(location) else { return nil }
            var inside: [(path: Path, value: Node)] = []
            for e in entries {
                if let sub = e.path.relative(down) {
                    // This entry covers the whole location.
                    let new = e.value.child(at: sub)
                    if new.same(as: value) { return nil }
                    value = new
                    return .put(.root, new)
                }
                if let rel = down.relative(e.path) { inside.append((rel, e.value)) }
            }
            if inside.isEmpty { return nil }
            var new = value
            for e in inside { new = new.setting(e.path, to: e.value) }
            if new.same(as: value) { return nil }
            value = new
            return .patch(.root, inside)
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
