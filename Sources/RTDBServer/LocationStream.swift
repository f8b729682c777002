import RTDBCore
import RTDBEngine
import RTDBWire

/// Turns committed writes into the events of a stream on a whole location (no query), keeping
/// the location's current value so that a write that changes nothing there raises nothing.
/// A set stays one `put` and a multi-path update one `patch`, whoever made it (a push is
/// recorded as the set of its new child, `LoggedChange.push`, so it is a `put` there too):
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
