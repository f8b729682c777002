import RTDBCore
import RTDBNet

/// Follows one location of an embedded database across processes.
///
/// It sleeps until the file's write-ahead log is written (`CommitSignal`: inotify on Linux,
/// kqueue on macOS and the BSDs, a periodic stat of the file and its log elsewhere),
/// then compares SQLite's `data_version` (a cheap shared-memory check that changes when any
/// other connection commits) with the last one seen; on a change it reads the write log since
/// its last position and re-reads only the children the new writes touched, or the whole
/// location when a write covered it. Invariant: no commit is missed, however notifications
/// coalesce, because a wake-up never says what changed: the log does.
///
/// A writer appends its frames to the log before it publishes the commit, so a notification
/// can arrive before `data_version` changes. After each notification the observer therefore
/// looks again at short, growing intervals (`followUp`) for a while (`followUpWindow`) even when
/// it already found a change (a second commit's frames may be in the same notification). A
/// safety poll (`safetyInterval`) covers file systems that deliver no notifications; on that
/// beat, and at once when `EmbeddedDatabase.hangupFD` reports a hang-up, it also calls `idle` and checks that the path still names the file it has open: when the
/// file was removed or replaced (a new inode), it follows the path to the new file, or to
/// nothing, and reports the value found there as a change. A notification about the file's own
/// name (created, renamed, removed) runs that check at once.
///
/// With a `window` (a limited query in value or child order) over a location an index serves,
/// the value it follows is only the window's children, read from the index: at the start and
/// after every write under the location it reads those few children instead of the whole
/// location. Applying the query to that value gives the same window as applying it to the
/// whole value, so the events are the same (`EventGenerator` always applies the query).
struct Observer {
    let database: EmbeddedDatabase
    let path: Path
    var window: Query? = nil

    /// The slow beat: idle callback, replaced-file check, and a look at `data_version` in case
    /// the file system delivered no notification. The beat is what an idle watcher costs: its
    /// work is a few thousand instructions, but the wake-up itself took about 0.1 ms of CPU on
    /// the reference machine (a virtual machine), so 100 idle watchers on a one-second beat used
    /// about 1% of a core; every two seconds, half that. (A hang-up of stdout and a notification
    /// about the file's name are acted on at once, not on the beat.)
    static let safetyInterval: UInt64 = 2_000_000_000
    /// How long after the last notification the observer keeps looking for the commit.
    static let followUpWindow: UInt64 = 100_000_000
    /// The first and the longest pause between looks after a notification.
    static let followUpFirst: UInt64 = 50_000
    static let followUpLongest: UInt64 = 1_000_000
    /// How often an observer looks for dead sessions to reap (Sessions.swift) while the file
    /// has a session folder; without one, the safety beat looks for the folder (one failed
    /// `opendir`).
    static let reapInterval: UInt64 = 250_000_000

    func run(idle: () throws -> Bool, _ onChange: (Node, [String]?) throws -> Bool) throws {
        var value: Node = .null
        var seq: Int64 = 0
        var version: Int64? = nil
        var windowed = false
        let signal = CommitSignal(file: database.file)
        if let snap = try database.snapshot(path, window: window) {
            seq = snap.seq
            value = snap.value
            windowed = snap.windowed
            version = try database.dataVersion()
        }
        if try !onChange(value, nil) { return }
        var nextSafety = monotonicNanos() + Observer.safetyInterval
        var sessionsSeen = database.hasSessionsFolder
        var nextReap = monotonicNanos() + (sessionsSeen ? Observer.reapInterval : Observer.safetyInterval)
        var followUntil: UInt64 = 0
        var pause = Observer.followUpFirst
        while true {
            let now = monotonicNanos()
            let beat = min(nextSafety, nextReap)
            var wait = beat > now ? beat - now : 0
            if now < followUntil {
                wait = min(wait, pause)
                pause = min(pause * 2, Observer.followUpLongest)
            }
            let wake = signal.wait(nanos: wait, hangup: database.hangupFD)
            let after = monotonicNanos()
            if wake.written {
                followUntil = after + Observer.followUpWindow
                pause = Observer.followUpFirst
                // A session registers with a write: its folder is looked for then (one `access`),
                // not only on the slow beat, so its death is reaped on the quick one.
                if !sessionsSeen && database.hasSessionsFolder {
                    sessionsSeen = true
                    nextReap = min(nextReap, after + Observer.reapInterval)
                }
            }
            if wake.hangup, try !idle() { return }
            if after >= nextReap {
                // A dead session's writes run here; this connection's own commit does not
                // change `data_version`, so the log is read again below.
                if ((try? database.reapDeadSessions()) ?? 0) > 0 { version = nil }
                sessionsSeen = database.hasSessionsFolder
                nextReap = after + (sessionsSeen ? Observer.reapInterval : Observer.safetyInterval)
            }
            if after >= nextSafety || wake.fileEvent {
                if after >= nextSafety {
                    nextSafety = after + Observer.safetyInterval
                    if try !idle() { return }
                    signal.refresh(resolve: false)
                }
                if database.fileChanged() {
                    // Removed or replaced: follow whatever the path names now (nothing reads
                    // as null), from its own log position.
                    database.closeConnection()
                    signal.refresh()
                    let snap = try database.snapshot(path, window: window)
                    seq = snap?.seq ?? 0
                    windowed = snap?.windowed ?? false
                    version = snap == nil ? nil : try database.dataVersion()
                    let fresh = snap?.value ?? .null
                    if fresh.same(as: value) { continue }
                    value = fresh
                    if try !onChange(value, nil) { return }
                    continue
                }
            }
            guard let v = try database.dataVersion() else { continue }   // no file yet
            if v == version { continue }
            version = v
            guard let change = try database.changes(at: path, after: seq, current: value,
                                                    window: window, windowed: windowed) else { continue }
            seq = change.seq
            if let keys = change.keys, keys.isEmpty { continue }   // nothing under this location
            value = change.value
            windowed = change.windowed
            if try !onChange(value, change.keys) { return }
        }
    }
}

/// Observation support: a snapshot with its log position, and the changes since a position.
extension EmbeddedDatabase {

    /// Reads the log after `seq` and the data it touched at `path`, in one snapshot.
    /// Returns nil when nothing changed at or below `path`. With a `window` an index serves,
    /// a change under the location reads the window again (`windowed`: the value holds only
    /// its children; `current` is such a value when the argument `windowed` is true).
    func changes(at path: Path, after seq: Int64, current: Node, window: Query? = nil,
                 windowed: Bool = false) throws -> (seq: Int64, value: Node, keys: [String]?, windowed: Bool)? {
        try reading(nil) { c in
            let s = try c.statement("SELECT seq, paths FROM log WHERE seq > ?1 ORDER BY seq")
            s.bind(1, int: seq)
            var last = seq
            var whole = false
            var keys: [String] = []
            var first = true
            // A `.priority` path follows its node: any change in or above the node may change it.
            let node = path.node
            while try s.step() {
                let n = s.int(0)
                // Entries were trimmed since `seq`, or the watcher started before there was a log.
                if first && (seq == 0 || n != seq + 1) { whole = true }
                first = false
                last = n
                if whole { continue }
                for line in s.string(1).split(separator: "\n", omittingEmptySubsequences: false) {
                    let changed = Path(validatedKeys: line.isEmpty ? [] : line.split(separator: "/").map(String.init))
                    if changed.contains(node) || (path.isPriority && node.contains(changed)) { whole = true; break }
                    if path.contains(changed) { keys.append(changed.keys[path.count]) }
                }
            }
            s.reset()
            if last == seq { return nil }
            if keys.isEmpty && !whole { return (last, current, [], windowed) }
            if let window, let w = try indexedQuery(c, path, window, export: true) {
                // The window's children alone; which children entered or left it is not in
                // `keys`, so no hint.
                return (last, Node.object(normalizing: w), nil, true)
            }
            // A windowed value cannot take single children (the index went away): read it all.
            if whole || windowed { return (last, try readExport(c, path), nil, false) }
            var value = current
            var seen: [String] = []
            for k in keys where !seen.contains(where: { KeyOrder.same($0, k) }) {
                seen.append(k)
                value = value.setting(child: k, to: try readExport(c, path.appending(k)))
            }
            return (last, value, seen, false)
        }
    }

    /// The current value at `path` and the log position it reflects, in one snapshot: only the
    /// children of `window` (`windowed`) when an index serves it, else the whole value.
    func snapshot(_ path: Path, window: Query? = nil) throws -> (seq: Int64, value: Node, windowed: Bool)? {
        try reading(nil) { c in
            let seq = try c.integer("SELECT COALESCE(MAX(seq), 0) FROM log") ?? 0
            if let window, let w = try indexedQuery(c, path, window, export: true) {
                return (seq, Node.object(normalizing: w), true)
            }
            return (seq, try readExport(c, path), false)
        }
    }

    /// A counter that changes when another connection commits (nil: no file yet).
    func dataVersion() throws -> Int64? {
        try retryingWhileBusy {
            guard let c = try readConnection() else { return nil }
            return try c.integer("PRAGMA data_version")
        }
    }
}

/// The Database protocol's watches of the embedded file run an `Observer`.
extension EmbeddedDatabase {
    public func observe(_ path: Path, idle: () throws -> Bool,
                        onChange: (Node, [String]?) throws -> Bool) throws {
        try Observer(database: self, path: path).run(idle: idle, onChange)
    }

    /// As `observe(_:idle:onChange:)`; a limited query in value or child order over a location
    /// an index serves follows only the children of its window (see `Observer`).
    public func observe(_ path: Path, query: Query, idle: () throws -> Bool,
                        onChange: (Node, [String]?) throws -> Bool) throws {
        var window: Query? = nil
        switch query.order {
        case .value, .child:
            if query.limit != nil && !path.isPriority { window = query }
        case .key, .priority:
            break
        }
        try Observer(database: self, path: path, window: window).run(idle: idle, onChange)
    }
}
