import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The portable commit signal: a stat(2) of the database file and of its write-ahead log at a
/// short interval. A commit appends to the log (its size grows or, after a checkpoint started
/// it again, its modification time moves); a replaced or removed file changes its inode.
///
/// Each look costs a wake-up and two stat calls (some 10 to 25 µs of CPU on the reference
/// machine, most of it the wake-up), so the interval is what an idle watcher costs. It
/// lengthens as the file stays quiet: every 10 ms for the first second after the last change
/// seen, every 50 ms until ten seconds, every 250 ms after that (or from the start, before any
/// change). A commit is seen within 10 ms while commits come (and the observer's follow-up
/// looks make that about a millisecond), within 50 ms after a quiet second, and within 250 ms
/// after ten quiet seconds; an idle watcher looks four times a second.
final class CommitCheck: CommitWatch {
    /// (time since the last change seen, interval until then), shortest first.
    static let ladder: [(span: UInt64, interval: UInt64)] = [(1_000_000_000, 10_000_000),
                                                             (10_000_000_000, 50_000_000)]
    /// The interval once the ladder is passed, or before any change.
    static let idleInterval: UInt64 = 250_000_000

    let file: String
    private var files: [String] = []
    private var logs: [String] = []
    private var stamps: [String: FileStamp] = [:]
    private var lastChange: UInt64 = 0

    init(file: String) {
        self.file = file
        refresh(resolve: true)
    }

    var name: String { "stat check" }
    var isActive: Bool { true }
    var descriptor: Int32 { -1 }

    var checkInterval: UInt64 {
        guard lastChange > 0 else { return CommitCheck.idleInterval }
        let quiet = monotonicNanos() - lastChange
        return CommitCheck.ladder.first { quiet < $0.span }?.interval ?? CommitCheck.idleInterval
    }

    func refresh(resolve: Bool) {
        guard resolve || files.isEmpty else { return }
        let targets = CommitSignal.targets(of: file)
        files = targets
        logs = targets.map { $0 + "-wal" }
        for path in files + logs where stamps[path] == nil {
            stamps[path] = FileStamp.of(path)
        }
    }

    func collect(into wake: inout CommitSignal.Wake) {
        // An empty log holds no commit: the one a reader's connection creates is no news, and
        // a checkpoint that emptied the log also wrote the file, which is looked at below.
        for path in logs where look(path) && (stamps[path]?.size ?? 0) > 0 {
            wake.written = true
        }
        for path in files where look(path) {
            wake.written = true
            wake.fileEvent = true
        }
        if wake.written { lastChange = monotonicNanos() }
    }

    /// True when what `path` names differs from the last look (created, removed, replaced,
    /// written or resized).
    private func look(_ path: String) -> Bool {
        let now = FileStamp.of(path)
        if now == stamps[path] { return false }
        stamps[path] = now
        return true
    }
}
