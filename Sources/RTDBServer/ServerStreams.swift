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
        /// Every plain stream on the path joins this view; false for a query view and for one
        /// opened away from the loop, which serve one stream each.
        let shared: Bool

        init(file: String, db: EmbeddedDatabase, path: Path, query: Query?) throws {
            self.file = file
            self.db = db
            self.path = path
            self.query = query
            self.shared = query == nil
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

        /// A view of one stream from what was read for it away from the loop.
        init(file: String, db: EmbeddedDatabase, opened: StreamOpener.Snapshot) {
            self.file = file
            self.db = db
            self.path = opened.path
            self.query = opened.query
            self.shared = false
            seq = opened.seq
            window = opened.window
            location = LocationStream(location: opened.path, value: opened.value)
        }

        var initialEvent: StreamEvent {
            if query != nil { return .put(.root, Node.object(normalizing: window)) }
            return location.initialEvent
        }

        /// Applies one committed write that concerns the view's location; returns the event to
        /// send, if any. Query views are read again instead (`refreshQuery`). A write the feed
        /// knows by its paths alone costs a read of what lies near the location, no more.
        func apply(_ entry: FeedEntry) throws -> StreamEvent? {
            if entry.seq <= seq { return nil }
            seq = entry.seq
            guard let change = try db.change(of: entry, at: path) else { return nil }
            return location.apply(change)
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

    /// The views of one file, and how far its feed has been read. Opening or closing a stream
    /// costs a walk down its path, whatever the number of streams: a client that opens tens of
    /// thousands of listens must not make each one dearer than the last; and a write visits
    /// only the views at, above or below what it wrote (`ViewIndex`).
    final class FileViews {
        let index = ViewIndex()
        /// The feed position the file has been read to.
        var seq: Int64
        /// Events of an entry, or a stream's first value, being built away from the loop: the
        /// feed waits while any is.
        var building = 0
        init(seq: Int64) { self.seq = seq }
        var isEmpty: Bool { index.isEmpty }
        var all: [View] { index.all }

        /// The views `entry` concerns, each once.
        func views(concernedBy entry: FeedEntry) -> [View] {
            var found = ViewIndex.Found()
            switch entry.content {
            case .recorded(.set(let at, _)):
                index.collect(touching: at.keys.map { Array($0.utf8) }, into: &found)
            case .recorded(.update(let base, let entries)):
                for e in entries { index.collect(touching: base.appending(e.path).keys.map { Array($0.utf8) }, into: &found) }
            case .touched(let touched):
                touched.forEach { keys in
                    index.collect(touching: keys, into: &found)
                    return true
                }
            }
            return found.list
        }
    }

    private var byFile: [String: FileViews] = [:]
    private var nextSubscriber: UInt64 = 1
    /// Open subscribers, counted as they open and close.
    private(set) var count = 0
    /// Sends one event to subscribers, each in its own protocol (set by the server).
    var deliver: ([StreamSubscriber], PreparedEvent) -> Void = { _, _ in }
    /// Builds the events of huge writes away from the loop (set by the server; without one
    /// they are built in place).
    var builder: EventBuilder? = nil
    /// Reads the first value of large streams away from the loop (set by the server; without
    /// one every stream opens in place).
    var opener: StreamOpener? = nil

    init() {}

    var isEmpty: Bool { byFile.isEmpty }
    /// The views of `file`, if streams follow it.
    func views(of file: String) -> FileViews? { byFile[file] }
    /// The files that streams follow.
    var files: [String] { Array(byFile.keys) }
    /// True when a stream follows `file` (it must stay open).
    func follows(_ file: String) -> Bool { byFile[file] != nil }

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
        let views = byFile[file]
        let view: View
        if let query, !query.isUnfiltered {
            view = try View(file: file, db: db, path: path, query: query)
        } else if let existing = views?.index.plain(at: path) {
            view = existing
        } else {
            view = try View(file: file, db: db, path: path, query: nil)
        }
        let group = views ?? FileViews(seq: view.seq)
        if views == nil { byFile[file] = group }
        if view.subscribers.isEmpty { group.index.insert(view) }
        if view.subscribers.updateValue(sub, forKey: sub.id) == nil { count += 1 }
        sub.view = view
        return view.initialEvent
    }

    /// Whether a REST stream on `path` starts with more than `StreamOpener.threshold` bytes of
    /// JSON (a query's window is part of its location: the location's bound stands for it), so
    /// that it opens with `openAway`. Never with no opener.
    func opensLarge(db: EmbeddedDatabase, path: Path) throws -> Bool {
        guard opener != nil else { return false }
        return try db.jsonBytesExceed(path, StreamOpener.threshold)
    }

    /// Opens a stream whose first value is read and rendered away from the loop
    /// (`StreamOpener`): `opened` runs on the loop with the stream's opening bytes once it is
    /// in a view of its own and follows the feed, or with the error of the read. When
    /// `stillWanted` says no by then (its connection closed), nothing opens.
    func openAway(_ sub: StreamSubscriber, file: String, db: EmbeddedDatabase, path: Path, query: Query?, export: Bool,
                  stillWanted: @escaping () -> Bool, opened: @escaping (Result<[UInt8], RTDBError>) -> Void) throws {
        guard let opener else { preconditionFailure("openAway without an opener (opensLarge says no then)") }
        try pump(file: file, db: db)
        let group: FileViews
        if let existing = byFile[file] {
            group = existing
        } else {
            group = FileViews(seq: try db.latestSeq())
            byFile[file] = group
        }
        group.building += 1
        let request = StreamOpener.Request(file: file, timeoutSeconds: db.timeoutSeconds, path: path, query: query, export: export)
        opener.start(request) { [weak self, group] outcome in
            group.building -= 1
            guard let self else { return }
            switch outcome {
            case .read(let snapshot) where stillWanted():
                let view = View(file: file, db: db, opened: snapshot)
                let home = self.byFile[file] ?? FileViews(seq: snapshot.seq)
                self.byFile[file] = home
                home.index.insert(view)
                view.subscribers[sub.id] = sub
                self.count += 1
                sub.view = view
                opened(.success(snapshot.opening))
            case .read:
                break
            case .failed(let e):
                opened(.failure(e))
            }
            if let home = self.byFile[file], home.isEmpty, home.building == 0 { self.byFile[file] = nil }
            try? self.pump(file: file, db: db)
        }
    }

    func close(_ sub: StreamSubscriber) {
        guard let view = sub.view else { return }
        sub.view = nil
        if view.subscribers.removeValue(forKey: sub.id) != nil { count -= 1 }
        guard view.subscribers.isEmpty, let group = byFile[view.file] else { return }
        group.index.remove(view)
        if group.isEmpty { byFile[view.file] = nil }
    }

    private func broadcast(_ view: View, _ event: StreamEvent) {
        deliver(Array(view.subscribers.values), PreparedEvent(event))
    }

    /// Reads the file's new commits and sends their events, in commit order. With nothing new
    /// it costs one look-up in the feed, whatever the number of views. A write known by its
    /// paths alone that a whole-location view must read back, past `EventBuilder.threshold`
    /// bytes, is built away from the loop
    /// (`EventBuilder`, when the server gave one): the feed of that file stops there until the
    /// events are built, and goes on from the next entry.
    func pump(file: String, db: EmbeddedDatabase) throws {
        guard let group = byFile[file], group.building == 0 else { return }
        var position = group.seq
        defer { group.seq = position }
        while true {
            let (entries, gap) = try db.feed(after: position, max: 1_000)
            if entries.isEmpty && !gap { return }
            if gap {
                let list = group.all
                for v in list { if let e = try v.resynchronise() { broadcast(v, e) } }
                position = try db.latestSeq()
                for v in list { v.seq = max(v.seq, position) }
                return
            }
            var dirtyQueries = ViewIndex.Found()
            defer { for v in dirtyQueries.list { if let e = try? v.refreshQuery() { broadcast(v, e) } } }
            for entry in entries {
                let concerned = group.views(concernedBy: entry)
                if let builder, case .touched = entry.content,
                   case let plain = concerned.filter({ $0.query == nil && entry.seq > $0.seq }), !plain.isEmpty,
                   try plain.contains(where: { try db.readsMore(entry, at: $0.path, than: EventBuilder.threshold) }) {
                    for v in concerned where v.query != nil && entry.seq > v.seq { dirtyQueries.add([v]) }
                    position = entry.seq
                    build(entry, for: plain, in: group, file: file, db: db, with: builder)
                    return
                }
                for v in concerned {
                    if v.query != nil {
                        if entry.seq > v.seq { dirtyQueries.add([v]) }
                    } else if let e = try v.apply(entry) {
                        broadcast(v, e)
                    }
                }
                position = entry.seq
            }
            if entries.count < 1_000 { return }
        }
    }

    /// Hands `entry` to the builder for `views`; when it is done, gives each view its value and
    /// its subscribers their bytes, and pumps the file again.
    private func build(_ entry: FeedEntry, for views: [View], in group: FileViews, file: String, db: EmbeddedDatabase,
                       with builder: EventBuilder) {
        group.building += 1
        let request = EventBuilder.Request(file: file, timeoutSeconds: db.timeoutSeconds, entry: entry, views: views.map { v in
            EventBuilder.ViewState(path: v.path, location: v.location, kinds: v.subscribers.values.map(\.kind))
        })
        builder.start(request) { [weak self, weak group] outcomes in
            guard let self, let group else { return }
            group.building -= 1
            for (v, outcome) in zip(views, outcomes) where !v.subscribers.isEmpty && entry.seq > v.seq {
                v.seq = entry.seq
                switch outcome {
                case .built(let location, let prepared):
                    v.location = location
                    if let prepared { self.deliver(Array(v.subscribers.values), prepared) }
                case .failed:
                    if let e = try? v.resynchronise() { self.broadcast(v, e) }
                }
            }
            try? self.pump(file: file, db: db)
        }
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
