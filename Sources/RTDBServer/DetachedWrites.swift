import RTDBCore
import RTDBNet
import RTDBWire

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
/// reading the last committed state meanwhile. When the thread is done it posts its answer to
/// the loop (`LoopHandle.execute`); the loop then sends the write's events to streams and
/// listens, answers the writer, and lets group commit run again. Reads are answered
/// throughout; other writes wait for the huge one, as they would for its lock.
///
/// Ownership: a `Job` goes to its thread whole (the loop keeps no reference to it); what the
/// loop needs when the job ends (its callback) stays on the loop (`OffLoopWork`).
///
/// Memory: the body is held once (the HTTP reader reserves its declared length instead of
/// doubling a buffer), and the engine stores a plain JSON body row by row as it reads it
/// (`StreamingWrites.importJSON`), without building the tree of values first.
final class DetachedWrites {
    /// Bodies from this size on are written away from the loop.
    static let threshold = 1 << 20

    /// One write, run on its thread through its own handler and handle on the file; both are
    /// let go of there (closing the database handle off the loop).
    // Unchecked: the handler and the handle are made for this job alone and only its thread
    // uses them; what they share with the loop's handler (rule sets, options, the file's
    // set-up closure) is immutable once the server runs.
    final class Job: @unchecked Sendable {
        let request: HTTPRequest
        private var handler: RESTHandler?
        private var namespaces: ServerNamespaces?

        init(request: HTTPRequest, handler: RESTHandler, namespaces: ServerNamespaces) {
            self.request = request
            self.handler = handler
            self.namespaces = namespaces
        }

        func run() -> HTTPResponse {
            defer {
                handler = nil
                namespaces = nil
            }
            if let handler, case .response(let r) = handler.handle(request) { return r }
            return HTTPResponse.error(400, "Streaming needs GET")
        }
    }

    private let work: OffLoopWork<HTTPResponse>

    init(loop: EventLoop) {
        work = OffLoopWork(loop: loop)
    }

    var isRunning: Bool { work.isRunning }

    /// Whether `request` (a write) is one to run away from the loop.
    static func wants(_ request: HTTPRequest) -> Bool {
        request.body.count >= threshold && !request.rawPath.hasSuffix("/.settings/rules.json")
    }

    /// Starts `job` on a new thread; `finished` runs on the loop with its answer.
    func start(_ job: Job, finished: @escaping (HTTPResponse) -> Void) {
        work.start({ job.run() }, done: finished)
    }
}
