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
/// A write with a huge body runs away from the loop (DetachedWrites.swift): it is submitted
/// with `submitDetached`; the batch before it commits first, then it starts, and no batch runs
/// until `detachedFinished()`: one writer at a time, and never the loop waiting for the lock.
final class GroupCommit {
    typealias Completion = (_ lost: RTDBError?) -> Void

    private enum Entry {
        case write(() -> Completion)
        /// Starts a detached write, which calls `detachedFinished()` when it ends.
        case detached(() -> Void)
    }

    private let storage: CommitStorage
    private var disconnects: [() -> Void] = []
    private var writes: [Entry] = []
    /// A detached write is running: batches wait for it.
    private(set) var detachedRunning = false

    init(storage: CommitStorage) {
        self.storage = storage
    }

    var isEmpty: Bool { writes.isEmpty && disconnects.isEmpty }

    /// Something is submitted and may run now.
    var canRun: Bool { !isEmpty && !detachedRunning }

    /// Adds a write to the next batch.
    func submit(_ write: @escaping () -> Completion) { writes.append(.write(write)) }

    /// Adds a write that runs away from the loop, after the writes submitted before it.
    func submitDetached(_ start: @escaping () -> Void) { writes.append(.detached(start)) }

    /// The detached write ended (committed or not): batches may run again.
    func detachedFinished() { detachedRunning = false }

    /// Adds an ended session's onDisconnect writes to the next batch.
    func submitDisconnect(_ write: @escaping () -> Void) { disconnects.append(write) }

    /// Runs one batch of everything submitted so far (nothing when nothing was).
    func run(committed: (_ files: [String]) -> Void) {
        if !canRun { return }
        // The writes up to the first detached one; that one starts once they are committed.
        var ws: [() -> Completion] = []
        var detached: (() -> Void)? = nil
        var taken = 0
        for entry in writes {
            taken += 1
            if case .write(let w) = entry { ws.append(w) } else if case .detached(let start) = entry { detached = start; break }
        }
        writes.removeFirst(taken)
        defer {
            if let detached {
                detachedRunning = true
                detached()
            }
        }
        let ds = disconnects
        disconnects = []
        if ds.isEmpty && ws.isEmpty { return }
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
