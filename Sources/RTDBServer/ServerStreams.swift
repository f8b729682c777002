import RTDBCore
import RTDBEngine
import RTDBWire

/// The open streams of a server, grouped into views: every stream on the same whole location of
/// the same file shares one view (one copy of the value, one computation of each event, the same
/// bytes written to each). A query stream has a view of its own. Views follow their file's change
/// feed: each commit, from this server or any other process, becomes at most one event per view.
final class ServerStreams {
    final class View {
        let file: String
        let db: EmbeddedDatabase
        let path: Path
        let query: Query?
        /// The log position the view's value reflects: feed entries up to it are already in.
        var seq: Int64
        var location: LocationStream
        var window: [Node.Entry]
        var subscribers: [UInt64: StreamSubscriber] = [:]

        init(file: String, db: EmbeddedDatabase, path: Path, query: Query?) throws {
            self.file = file
            self.db = db
            self.path = path
            self.query = query
            if let query {
                let snap = try db.querySnapshot(path, query)
                seq = snap.seq
                window = snap.entries
                location = LocationStream(location: path, value: .null)
            } else {
                let snap = try db.snapshot(at: path)
                seq = snap.seq
                window = []
                location = LocationStream(location: path, value: snap.value)
            }
        }

        var initialEvent: StreamEvent {
            if query != nil { return .put(.root, Node.object(normalizing: window)) }
            return location.initialEvent
        }

        /// Applies one committed write; returns the event to send, if any. Query views only note
        /// that they must be read again (`touches`).
        func apply(_ entry: FeedEntry) -> StreamEvent? {
            if entry.seq <= seq { return nil }
            seq = entry.seq
            return location.apply(entry.change)
        }

        func touches(_ change: LoggedChange) -> Bool {
            switch change {
            case .set(let at, _): return at.contains(path) || path.contains(at)
            case .update(let base, let entries):
                if path.contains(base) { return true }
                return entries.contains { e in
                    let full = base.appending(e.path)
                    return full.contains(path) || path.contains(full)
                }
            }
        }

        /// Reads a query view again and returns its differences.
        func refreshQuery() throws -> StreamEvent? {
            guard let query else { return nil }
            let snap = try db.querySnapshot(path, query)
            seq = max(seq, snap.seq)
            let event = QueryStreamDiff.events(old: window, new: snap.entries)
            window = snap.entries
            return event
        }

        /// After a gap in the feed: read everything again and send the difference as one put.
        func resynchronise() throws -> StreamEvent? {
            if query != nil { return try refreshQuery() }
            let snap = try db.snapshot(at: path)
            seq = snap.seq
            let old = location.value
            location = LocationStream(location: path, value: snap.value)
            return old.same(as: snap.value) ? nil : .put(.root, snap.value)
        }
    }

    /// By file and path, as bytes: String keys would merge canonically equal paths.
    private var plainViews: [[UInt8]: View] = [:]
    private var queryViews: [ObjectIdentifier: View] = [:]
    /// The feed position each file has been read to.
    private var feedSeq: [String: Int64] = [:]
    private var nextSubscriber: UInt64 = 1
    /// Sends one event to subscribers, each in its own protocol (set by the server).
    var deliver: ([StreamSubscriber], StreamEvent) -> Void = { _, _ in }

    init() {}

    static func key(_ file: String, _ path: Path) -> [UInt8] {
        Array((file + "\n" + path.unrooted).utf8)
    }

    var isEmpty: Bool { plainViews.isEmpty && queryViews.isEmpty }
    var files: [String] { Array(Set(plainViews.values.map(\.file) + queryViews.values.map(\.file))) }
    var count: Int { plainViews.values.reduce(0) { $0 + $1.subscribers.count } + queryViews.values.reduce(0) { $0 + $1.subscribers.count } }

    private func views(of file: String) -> [View] {
        plainViews.values.filter { $0.file == file } + queryViews.values.filter { $0.file == file }
    }

    /// A new subscriber of connection `connection` (not yet open).
    func subscriber(connection: UInt64, kind: StreamSubscriber.Kind) -> StreamSubscriber {
        defer { nextSubscriber += 1 }
        return StreamSubscriber(id: nextSubscriber, connID: connection, kind: kind)
    }

    /// Opens a stream: joins (or makes) its view; returns the stream's first event (the whole
    /// value), for the caller to send before any later event.
    func open(_ sub: StreamSubscriber, file: String, db: EmbeddedDatabase, path: Path, query: Query?) throws -> StreamEvent {
        // Bring existing views up to date first, so a shared view's value is current.
        try pump(file: file, db: db)
        let view: View
        if let query, !query.isUnfiltered {
            view = try View(file: file, db: db, path: path, query: query)
            queryViews[ObjectIdentifier(view)] = view
        } else {
            let key = ServerStreams.key(file, path)
            if let existing = plainViews[key] {
                view = existing
            } else {
                view = try View(file: file, db: db, path: path, query: nil)
                plainViews[key] = view
            }
        }
        if feedSeq[file] == nil { feedSeq[file] = view.seq }
        view.subscribers[sub.id] = sub
        sub.view = view
        return view.initialEvent
    }

    func close(_ sub: StreamSubscriber) {
        guard let view = sub.view else { return }
        sub.view = nil
        view.subscribers[sub.id] = nil
        if view.subscribers.isEmpty {
            if view.query != nil && !(view.query?.isUnfiltered ?? true) {
                queryViews[ObjectIdentifier(view)] = nil
            } else {
                plainViews[ServerStreams.key(view.file, view.path)] = nil
            }
            if views(of: view.file).isEmpty { feedSeq[view.file] = nil }
        }
    }

    private func broadcast(_ view: View, _ event: StreamEvent) {
        deliver(Array(view.subscribers.values), event)
    }

    /// Reads the file's new commits and sends their events, in commit order.
    func pump(file: String, db: EmbeddedDatabase) throws {
        guard var position = feedSeq[file] else { return }
        let list = views(of: file)
        if list.isEmpty { return }
        while true {
            let (entries, gap) = try db.feed(after: position, max: 1_000)
            if gap {
                for v in list { if let e = try v.resynchronise() { broadcast(v, e) } }
                position = try db.latestSeq()
                for v in list { v.seq = max(v.seq, position) }
                break
            }
            var dirtyQueries: [View] = []
            for entry in entries {
                for v in list {
                    if v.query != nil {
                        if entry.seq > v.seq, v.touches(entry.change), !dirtyQueries.contains(where: { $0 === v }) {
                            dirtyQueries.append(v)
                        }
                    } else if let e = v.apply(entry) {
                        broadcast(v, e)
                    }
                }
            }
            for v in dirtyQueries { if let e = try v.refreshQuery() { broadcast(v, e) } }
            if let last = entries.last { position = last.seq }
            if entries.count < 1_000 { break }
        }
        feedSeq[file] = position
    }

    /// Every subscriber, for keep-alives and shutdown.
    var subscribers: [StreamSubscriber] {
        plainViews.values.flatMap { $0.subscribers.values } + queryViews.values.flatMap { $0.subscribers.values }
    }
}

/// One stream or listen: an SSE connection, or one listen of a realtime session (which pushes
/// its events as `d`/`m` messages at `location`, tagged for a query listen). Made by
/// `ServerStreams.subscriber`.
final class StreamSubscriber {
    enum Kind {
        case sse(export: Bool)
        case realtime(location: Path, tag: Int64?)
    }

    let id: UInt64
    let connID: UInt64
    let kind: Kind
    weak var view: ServerStreams.View?

    init(id: UInt64, connID: UInt64, kind: Kind) {
        self.id = id
        self.connID = connID
        self.kind = kind
    }
}
