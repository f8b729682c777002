import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes with a huge body run on a thread of their own, so that the loop goes on answering
/// everyone else while one client's 90 MB PUT is parsed and committed.
///
/// Design: a data write (PUT, POST, PATCH, DELETE; not the rules) whose body is at least
/// `threshold` bytes is not run by the loop. Group commit first commits the writes queued before
/// it, then hands it to a new thread (`GroupCommit.submitDetached`) and starts no other batch
/// until it ends: SQLite lets one writer at a time into a file, and the loop must never wait
/// for that lock. The thread runs the request through a copy of the REST handler (the same
/// code, so the same checks, rules and answers) over its own handle on the database file
/// (`ServerNamespaces.detachedCopy`): the file is in WAL mode, so the loop's handle keeps
/// reading the last committed state meanwhile. When the thread is done it queues its answer
/// and writes a byte to a pipe the loop watches; the loop then sends the write's events to
/// streams and listens, answers the writer, and lets group commit run again. Reads are
/// answered throughout; other writes wait for the huge one, as they would for its lock.
///
/// Memory: the body is held once (the HTTP reader reserves its declared length instead of
/// doubling a buffer), and the engine stores a plain JSON body row by row as it reads it
/// (`StreamingWrites.importJSON`), without building the tree of values first.
final class DetachedWrites {
    /// Bodies from this size on are written away from the loop.
    static let threshold = 1 << 20

    /// One write on its thread. Only the thread touches `handler` until it finishes, and it
    /// lets go of them there (closing its database handle off the loop).
    final class Job: @unchecked Sendable {
        let request: HTTPRequest
        var handler: RESTHandler?
        var namespaces: ServerNamespaces?
        var response = HTTPResponse.error(500, "internal error: the write did not run")
        let finished: (HTTPResponse) -> Void

        init(request: HTTPRequest, handler: RESTHandler, namespaces: ServerNamespaces, finished: @escaping (HTTPResponse) -> Void) {
            self.request = request
            self.handler = handler
            self.namespaces = namespaces
            self.finished = finished
        }

        func run() {
            if let handler, case .response(let r) = handler.handle(request) { response = r }
            else { response = HTTPResponse.error(400, "Streaming needs GET") }
            handler = nil
            namespaces = nil
        }
    }

    /// Where threads leave finished jobs: a list under a lock, and a byte in a pipe the loop
    /// watches.
    final class Mailbox: @unchecked Sendable {
        let wakeRead: Int32
        let wakeWrite: Int32
        private let lock = ThreadLock()
        private var done: [Job] = []

        init(read: Int32, write: Int32) {
            wakeRead = read
            wakeWrite = write
        }

        func post(_ job: Job) {
            lock.locked { done.append(job) }
            var b: UInt8 = 1
            _ = write(wakeWrite, &b, 1)
        }

        func take() -> [Job] {
            var b = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &b, b.count) > 0 {}
            return lock.locked {
                let list = done
                done = []
                return list
            }
        }
    }

    private let mailbox: Mailbox
    /// The loop watches it: readable when a job has finished.
    var wakeRead: Int32 { mailbox.wakeRead }
    /// Jobs started and not yet handed back, kept by the loop (so their callbacks, which hold
    /// loop objects, are let go of on the loop).
    private var running: [ObjectIdentifier: Job] = [:]

    init() throws {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { throw RTDBError(.ioError, "pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        mailbox = Mailbox(read: fds[0], write: fds[1])
    }

    deinit {
        close(mailbox.wakeRead)
        close(mailbox.wakeWrite)
    }

    var isRunning: Bool { !running.isEmpty }

    /// Whether `request` (a write) is one to run away from the loop.
    static func wants(_ request: HTTPRequest) -> Bool {
        request.body.count >= threshold && !request.rawPath.hasSuffix("/.settings/rules.json")
    }

    /// Starts `job` on a new thread; `finished` runs on the loop (after `drain`).
    func start(_ job: Job) {
        running[ObjectIdentifier(job)] = job
        let mailbox = self.mailbox
        let rc = startDetachedThread {
            job.run()
            mailbox.post(job)
        }
        if rc != 0 {
            // No thread to be had: run it here rather than not at all.
            job.run()
            mailbox.post(job)
        }
    }

    /// On the loop, when `wakeRead` is readable: hands finished jobs their answers.
    func drain() {
        for job in mailbox.take() {
            running[ObjectIdentifier(job)] = nil
            job.finished(job.response)
        }
    }
}

/// A mutex (pthread's: the same on every platform this builds on).
final class ThreadLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}
