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
/// Each look costs a wake-up and two or three stat calls, a few microseconds, so the interval
/// is what it costs: every `activeInterval` (10 ms) for `activeSpan` (1 s) after it last saw a
/// change, every `idleInterval` (100 ms) after that. A commit is therefore seen within 10 ms
/// while commits come, and the first after a quiet second within 100 ms; a hundred idle
/// watchers look a thousand times a second between them.
final class CommitCheck: CommitWatch {
    static let activeInterval: UInt64 = 10_000_000
    static let idleInterval: UInt64 = 100_000_000
    static let activeSpan: UInt64 = 1_000_000_000

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
        let now = monotonicNanos()
        return lastChange > 0 && now - lastChange < CommitCheck.activeSpan ? CommitCheck.activeInterval : CommitCheck.idleInterval
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
