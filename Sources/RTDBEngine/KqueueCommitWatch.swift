#if canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
import RTDBNet
#if canImport(Darwin)
import Darwin
#else
import Glibc
#endif

/// The commit signal on macOS and the BSDs: kqueue's EVFILT_VNODE on the database file, on its
/// write-ahead log and on the folders that hold them (`VnodeWatch`). It follows
/// `InotifyCommitWatch`: the log written is `written`; the file written, removed or renamed is
/// also a `fileEvent`. kqueue watches open files rather than names, so a change in a folder
/// (a name created, removed or renamed) makes it open the names again: a log that appeared, or
/// a file or log that is now another file, counts as written (and as a file event for the file).
final class KqueueCommitWatch: CommitWatch {
    let file: String
    private let vnodes: VnodeWatch
    private var files: [String] = []
    private var logs: [String] = []
    private var folders: [String] = []

    /// Nil when no kqueue can be had.
    init?(file: String) {
        self.file = file
        guard let vnodes = try? VnodeWatch() else { return nil }
        self.vnodes = vnodes
        refresh(resolve: true)
    }

    var name: String { "kqueue" }
    var isActive: Bool { folders.contains(where: { vnodes.isWatching($0) }) }
    var descriptor: Int32 { vnodes.fd }
    var checkInterval: UInt64 { 0 }

    func refresh(resolve: Bool) {
        guard resolve || !isActive else { return }
        let targets = CommitSignal.targets(of: file)
        files = targets
        logs = targets.map { $0 + "-wal" }
        folders = []
        for target in targets where !folders.contains(FileAccess.folder(of: target)) {
            folders.append(FileAccess.folder(of: target))
        }
        for path in folders + files + logs { vnodes.watch(path) }
    }

    func collect(into wake: inout CommitSignal.Wake) {
        var folderChanged = false
        for event in vnodes.drain() {
            if logs.contains(event.path) {
                wake.written = true
            } else if files.contains(event.path) {
                wake.written = true
                wake.fileEvent = true
            } else if folders.contains(event.path) {
                folderChanged = true
            }
        }
        guard folderChanged else { return }
        for folder in folders where !vnodes.isWatching(folder) { vnodes.watch(folder) }
        for path in logs where vnodes.watch(path) { wake.written = true }
        for path in files where vnodes.watch(path) {
            wake.written = true
            wake.fileEvent = true
        }
    }
}
#endif
