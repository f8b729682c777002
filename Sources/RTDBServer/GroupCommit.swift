import RTDBCore

/// Where group commit's writes land: between `beginBatch` and `commitBatch` every database a
/// write reaches joins one transaction per file (ServerNamespaces).
protocol CommitStorage: AnyObject {
    func beginBatch()
    /// Marks the start of one write inside the batch (`touched` starts again).
    func startRequest()
    /// The files the current write reached.
    var touched: [String] { get }
    /// Commits every file of the batch; the files whose commit failed, with the error.
    func commitBatch() -> [String: RTDBError]
}

extension ServerNamespaces: CommitStorage {}

/// Group commit: the writes handlers submit during a loop turn run together in one batch, one
/// transaction and one fsync per database file, and their answers go out only after the COMMIT,
/// so an acknowledged write is on disk.
///
/// A write is a closure run inside the open batch; it returns its completion, which is called
/// after the commit with the error of a file it touched whose commit failed (nil: durable).
/// Before any completion, `committed` is told the files that were committed (the server sends
/// their events to streams and listens first: a realtime client expects its own listens to see
/// a write before its ack). The onDisconnect writes of ended sessions run first in a batch and
/// answer nobody.
///
/// The seam for the work ahead: a write that stages a huge body incrementally, or a batch that
/// commits off the loop, changes only how `run` reaches `commitBatch` and when completions run.
final class GroupCommit {
    typealias Completion = (_ lost: RTDBError?) -> Void

    private let storage: CommitStorage
    private var disconnects: [() -> Void] = []
    private var writes: [() -> Completion] = []

    init(storage: CommitStorage) {
        self.storage = storage
    }

    var isEmpty: Bool { writes.isEmpty && disconnects.isEmpty }

    /// Adds a write to the next batch.
    func submit(_ write: @escaping () -> Completion) { writes.append(write) }

    /// Adds an ended session's onDisconnect writes to the next batch.
    func submitDisconnect(_ write: @escaping () -> Void) { disconnects.append(write) }

    /// Runs one batch of everything submitted so far (nothing when nothing was).
    func run(committed: (_ files: [String]) -> Void) {
        if isEmpty { return }
        let ds = disconnects, ws = writes
        disconnects = []
        writes = []
        storage.beginBatch()
        storage.startRequest()
        for d in ds { d() }
        var disconnectFiles = storage.touched
        var done: [(completion: Completion, files: [String])] = []
        done.reserveCapacity(ws.count)
        for w in ws {
            storage.startRequest()
            let completion = w()
            done.append((completion, storage.touched))
        }
        let failed = storage.commitBatch()
        disconnectFiles.removeAll { failed[$0] != nil }
        var files = disconnectFiles
        for d in done { for f in d.files where failed[f] == nil && !files.contains(f) { files.append(f) } }
        committed(files)
        for d in done {
            let lost = d.files.first { failed[$0] != nil }.flatMap { failed[$0] }
            d.completion(lost)
        }
    }
}
