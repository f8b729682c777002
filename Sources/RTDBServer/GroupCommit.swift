import RTDBCore
import RTDBNet

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
    /// A write of the batch found a file's write lock held by another process (the batch does
    /// not wait for it: that write failed at once).
    var lockWasBusy: Bool { get }
    /// Ends the batch with nothing of it stored, in any file.
    func rollbackBatch()
    /// How long a write waits for another process's write lock before it fails.
    var lockTimeoutSeconds: Double { get }
}

/// Storage that never meets another process's lock (a test's).
extension CommitStorage {
    var lockWasBusy: Bool { false }
    func rollbackBatch() {}
    var lockTimeoutSeconds: Double { 10 }
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
/// The loop never waits for another process's write lock (an `rtdb set`, an `rtdb tx`): a
/// batch that finds a file locked is rolled back in every file, its writes go back to the
/// front of the queue in their order, nobody is answered, and it runs again after a pause
/// (2 ms, doubling up to 50 ms; `takeRetryDelay` tells the loop when) while reads go on. A
/// write closure may therefore run more than once, and only its last run counts: it must do
/// nothing outside the database that a second run would repeat. Once the oldest write has
/// waited for the lock longer than the timeout, the writes that have run in a batch of their
/// own, and those that still find the lock held fail as a wait that gave up fails.
///
/// A write with a huge body runs away from the loop (DetachedWrites.swift): it is submitted
/// with `submitDetached`; the batch before it commits first, then it starts, and no batch runs
/// until `detachedFinished()`: one writer at a time, and never the loop waiting for the lock.
final class GroupCommit {
    typealias Completion = (_ lost: RTDBError?) -> Void

    private enum Work {
        case write(() -> Completion)
        /// Starts a detached write, which calls `detachedFinished()` when it ends.
        case detached(() -> Void)
    }

    /// Something submitted, and since when a batch holding it has found a file locked by
    /// another process (nil: not yet).
    private struct Waiting<Job> {
        let job: Job
        var lockedSince: UInt64? = nil
    }

    private let storage: CommitStorage
    private var disconnects: [Waiting<() -> Void>] = []
    private var writes: [Waiting<Work>] = []
    /// A detached write is running: batches wait for it.
    private(set) var detachedRunning = false
    /// Monotonic nanoseconds.
    private let clock: () -> UInt64
    /// After a batch found a file locked: not before this time does it run again, and the pause
    /// that led there.
    private var retryAt: UInt64? = nil
    private var pauseMillis: Int64 = 0
    /// A pause the loop has not been told of yet.
    private var untoldPause: Int64? = nil
    static let firstPauseMillis: Int64 = 2
    static let longestPauseMillis: Int64 = 50

    init(storage: CommitStorage, clock: @escaping () -> UInt64 = monotonicNanos) {
        self.storage = storage
        self.clock = clock
    }

    var isEmpty: Bool { writes.isEmpty && disconnects.isEmpty }

    /// Something is submitted and may run now.
    var canRun: Bool { !isEmpty && !detachedRunning && eventsBuilding == 0 && retryAt.map { clock() >= $0 } ?? true }

    /// Events of a large write are being built away from the loop (`EventBuilder`): batches
    /// wait, so that what the builder reads is the data as that write left it.
    private(set) var eventsBuilding = 0
    func holdForEvents() { eventsBuilding += 1 }
    func eventsBuilt() { eventsBuilding -= 1 }

    /// After a batch found a file locked: in how many milliseconds it may run again, once (the
    /// loop sets a timer for it; nil when there is nothing new to wait for).
    func takeRetryDelay() -> Int64? {
        defer { untoldPause = nil }
        return untoldPause
    }

    /// Adds a write to the next batch.
    func submit(_ write: @escaping () -> Completion) { writes.append(Waiting(job: .write(write))) }

    /// Adds a write that runs away from the loop, after the writes submitted before it.
    func submitDetached(_ start: @escaping () -> Void) { writes.append(Waiting(job: .detached(start))) }

    /// The detached write ended (committed or not): batches may run again.
    func detachedFinished() { detachedRunning = false }

    /// Adds an ended session's onDisconnect writes to the next batch.
    func submitDisconnect(_ write: @escaping () -> Void) { disconnects.append(Waiting(job: write)) }

    /// Runs one batch of everything submitted so far (nothing when nothing was).
    func run(committed: (_ files: [String]) -> Void) {
        if !canRun { return }
        let now = clock()
        retryAt = nil
        let timeout = UInt64(max(0, storage.lockTimeoutSeconds) * 1e9)
        let expired = { (w: UInt64?) -> Bool in w.map { now >= $0 &+ timeout } ?? false }
        // Past the timeout, only the writes that have waited that long run (and may fail).
        let givingUp = expired(disconnects.first?.lockedSince) || expired(writes.first?.lockedSince)
        let ds = takeDisconnects(givingUp ? { expired($0.lockedSince) } : { _ in true })
        // The writes up to the first detached one; that one starts once they are committed.
        let ws = takeWrites(givingUp ? { expired($0.lockedSince) } : { _ in true })
        guard let (disconnectFiles, done) = runBatch(ds, ws, retrying: !givingUp) else {
            // A file was locked by another process: all of it again, later.
            storage.rollbackBatch()
            disconnects.insert(contentsOf: ds.map { Waiting(job: $0.job, lockedSince: $0.lockedSince ?? now) }, at: 0)
            writes.insert(contentsOf: ws.map { Waiting(job: $0.job, lockedSince: $0.lockedSince ?? now) }, at: 0)
            pauseMillis = min(max(pauseMillis * 2, GroupCommit.firstPauseMillis), GroupCommit.longestPauseMillis)
            retryAt = now + UInt64(pauseMillis) * 1_000_000
            untoldPause = pauseMillis
            return
        }
        if !givingUp { pauseMillis = 0 }
        defer {
            if case .detached(let start)? = ws.last?.job {
                detachedRunning = true
                start()
            }
        }
        if done.isEmpty && ds.isEmpty { return }
        let failed = storage.commitBatch()
        var files = disconnectFiles.filter { failed[$0] == nil }
        for d in done { for f in d.files where failed[f] == nil && !files.contains(f) { files.append(f) } }
        committed(files)
        for d in done {
            let lost = d.files.first { failed[$0] != nil }.flatMap { failed[$0] }
            d.completion(lost)
        }
    }

    private func takeDisconnects(_ taking: (Waiting<() -> Void>) -> Bool) -> [Waiting<() -> Void>] {
        let n = disconnects.prefix(while: taking).count
        defer { disconnects.removeFirst(n) }
        return Array(disconnects.prefix(n))
    }

    /// The writes `taking` accepts, in order, up to and including the first detached one.
    private func takeWrites(_ taking: (Waiting<Work>) -> Bool) -> [Waiting<Work>] {
        var n = 0
        for w in writes {
            guard taking(w) else { break }
            n += 1
            if case .detached = w.job { break }
        }
        defer { writes.removeFirst(n) }
        return Array(writes.prefix(n))
    }

    /// Runs the disconnects and writes in one batch, left open for the caller to commit; nil,
    /// as soon as one of them found a file locked by another process, when `retrying` (the
    /// batch is then to be rolled back).
    private func runBatch(_ ds: [Waiting<() -> Void>], _ ws: [Waiting<Work>], retrying: Bool)
        -> (disconnectFiles: [String], done: [(completion: Completion, files: [String])])? {
        let writes = ws.compactMap { w -> (() -> Completion)? in if case .write(let f) = w.job { f } else { nil } }
        if ds.isEmpty && writes.isEmpty { return ([], []) }
        storage.beginBatch()
        storage.startRequest()
        for d in ds {
            d.job()
            if retrying && storage.lockWasBusy { return nil }
        }
        let disconnectFiles = storage.touched
        var done: [(completion: Completion, files: [String])] = []
        done.reserveCapacity(writes.count)
        for w in writes {
            storage.startRequest()
            let completion = w()
            if retrying && storage.lockWasBusy { return nil }
            done.append((completion, storage.touched))
        }
        return (disconnectFiles, done)
    }
}
