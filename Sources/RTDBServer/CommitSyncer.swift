import RTDBCore
import RTDBEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What makes group commit's commits durable after the COMMIT: `request` asks for the files'
/// commits up to `mark` to be synced; the answer comes later through `GroupCommit.synced`.
protocol CommitSyncing: AnyObject {
    func request(files: [String], upTo mark: UInt64)
}

/// The fsyncs of group commit, on a thread of their own, so that the loop reads, runs and
/// commits the next group while the disk makes the last one durable (a commit's answers and
/// events wait for it: OutputGate).
///
/// Requests gather while a sync runs: the next sync covers all of them, one `fdatasync` per file
/// however many commits it had (WALSync). When a sync is done the thread leaves the highest mark
/// it covered, with the files whose sync failed, and writes a byte to a pipe the loop watches;
/// the loop then calls `take()`.
final class CommitSyncer: CommitSyncing, @unchecked Sendable {
    struct Done {
        var mark: UInt64
        var failed: [String: RTDBError]
    }

    /// The loop watches it: readable when a sync has finished.
    let wakeRead: Int32
    private let wakeWrite: Int32
    private var mutex = pthread_mutex_t()
    private var wanted = pthread_cond_t()
    // Under `mutex`:
    private var files: [String] = []
    private var mark: UInt64 = 0
    private var done: [Done] = []
    private var stopping = false
    /// The thread's own: one WALSync per file it has synced.
    private var syncs: [String: WALSync] = [:]

    /// Starts the thread; nil when no thread or pipe could be had (commits then sync in place).
    static func start() -> CommitSyncer? {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        let syncer = CommitSyncer(read: fds[0], write: fds[1])
        guard startThread({ syncer.serve() }) else {
            syncer.stop()
            return nil
        }
        return syncer
    }

    private init(read: Int32, write: Int32) {
        wakeRead = read
        wakeWrite = write
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&wanted, nil)
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
        pthread_cond_destroy(&wanted)
        pthread_mutex_destroy(&mutex)
    }

    func request(files new: [String], upTo mark: UInt64) {
        locked {
            for f in new where !files.contains(f) { files.append(f) }
            self.mark = max(self.mark, mark)
            pthread_cond_signal(&wanted)
        }
    }

    /// On the loop, when `wakeRead` is readable: the syncs finished since the last call.
    func take() -> [Done] {
        var b = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &b, b.count) > 0 {}
        return locked {
            let list = done
            done = []
            return list
        }
    }

    /// Ends the thread once it has synced what was asked (the server stops).
    func stop() {
        locked {
            stopping = true
            pthread_cond_signal(&wanted)
        }
    }

    private func serve() {
        while let (files, mark) = nextRequest() {
            var failed: [String: RTDBError] = [:]
            for f in files {
                let sync = syncs[f] ?? WALSync(file: f)
                syncs[f] = sync
                do { try sync.sync() } catch let e as RTDBError { failed[f] = e } catch {
                    failed[f] = RTDBError(.ioError, "\(error)")
                }
            }
            locked { done.append(Done(mark: mark, failed: failed)) }
            var b: UInt8 = 1
            _ = write(wakeWrite, &b, 1)
        }
        syncs = [:]
    }

    /// Waits for files to sync; nil once stopped with nothing left to sync.
    private func nextRequest() -> ([String], UInt64)? {
        locked {
            while files.isEmpty && !stopping { pthread_cond_wait(&wanted, &mutex) }
            if files.isEmpty { return nil }
            let taken = files
            files = []
            return (taken, mark)
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }
}
