import RTDBCore
import RTDBNet
import RTDBWire

/// Reads of large values are answered on a thread of their own, so that one client's 200 MB
/// GET (or its refusal) never keeps the loop from answering everyone else's small reads.
///
/// Design: before the loop answers a GET, `RESTHandler.isLargeRead` counts the rows under its
/// path up to `threshold` bytes of JSON (a bounded scan: `SizedReads`). A read past that
/// leaves the loop: a thread runs it through a copy of the REST handler (the same checks,
/// rules and answers) over its own handle on the file (`ServerNamespaces.detachedCopy`) —
/// the file is in WAL mode, so the thread reads the last committed state while the loop goes
/// on committing — and posts the answer back to the loop (`LoopHandle.execute`). The copy
/// first bounds the answer's size from the rows (`RESTHandler.boundsReads`): a read past
/// `--max-response-bytes` is refused after counting to the limit, without rendering anything.
/// Its connection waits for the answer before running its next request (answers keep their
/// order); other connections go on.
///
/// At most `maxRunning` such reads run at once (each holds a handle on its file and up to
/// the response limit of memory); more wait here, in order, and start as others end.
///
/// Ownership: a job goes to its thread whole; what the loop needs when it ends (its callback)
/// stays on the loop (`OffLoopWork`).
final class DetachedReads {
    /// Reads whose JSON is at least this large run away from the loop.
    static let threshold = 256 << 10
    /// Large reads running at once; the rest wait their turn.
    static let maxRunning = 4

    private let work: OffLoopWork<HTTPResponse>

    init(loop: EventLoop) {
        work = OffLoopWork(loop: loop, maxRunning: DetachedReads.maxRunning)
    }

    /// Reads started or waiting: a stopping server answers them first.
    var isRunning: Bool { work.isRunning }

    /// Runs `job` (now, or when a place frees); `finished` runs on the loop with its answer.
    func start(_ job: DetachedWrites.Job, finished: @escaping (HTTPResponse) -> Void) {
        work.start({ job.run() }, done: finished)
    }
}

extension RESTHandler {
    /// Whether `request` is a plain read (GET or HEAD of data, not a stream, not a page of
    /// keys) of a value whose JSON is at least `DetachedReads.threshold` bytes. Costs a lookup
    /// of the stored sizes (`SizedReads.jsonBytesExceed`); anything it cannot tell (a bad request, an unknown
    /// file) is answered on the loop as before.
    func isLargeRead(_ request: HTTPRequest) -> Bool {
        guard request.method == "GET" || request.method == "HEAD",
              request.header("x-http-method-override") == nil, request.queryValue("x-http-method-override") == nil,
              !RESTHandler.wantsStream(request), !request.rawPath.hasSuffix("/.settings/rules.json"),
              let target = try? self.target(of: request.rawPath), case .data(let path) = target,
              let namespace = try? self.namespace(request)
        else { return false }
        // A shallow page of keys seeks to each key: cheap whatever the size below.
        if request.queryValue("shallow") == "true",
           request.query.contains(where: { RESTQuery.names.contains($0.name) }) { return false }
        guard let db = try? provider.database(namespace), let sized = db.capability(SizedReads.self),
              let large = try? sized.jsonBytesExceed(path, DetachedReads.threshold) else { return false }
        return large
    }

    /// Refuses a plain read whose JSON is known, from its rows, to be past the response limit
    /// (only on handlers that run reads away from the loop: the count is cheap, but not free).
    func checkReadBound(_ c: Context, shallow: Bool, filtered: Bool) throws {
        guard boundsReads, !shallow, !filtered, !c.silent,
              let sized = try c.database(provider).capability(SizedReads.self) else { return }
        let limit = sizeLimits.maxResponseBytes
        if try sized.jsonBytesExceed(c.path, limit) {
            throw RESTError(400, ServeLimits.responseTooLarge)
        }
    }
}

extension RESTHandler {
    /// Refuses a key-ordered window whose children's JSON is known, from their rows, to be
    /// past the response limit, before any of it is rendered (a walking client's first pages
    /// are often such windows). Only where reads are bounded (`boundsReads`).
    func checkWindowBound(_ c: Context, _ db: Database, _ keys: [String]) throws {
        guard boundsReads, let sized = db.capability(SizedReads.self) else { return }
        let limit = sizeLimits.maxResponseBytes
        var total = 0
        for key in keys {
            total += try sized.jsonBytesAtLeast(c.path.appending(key), stoppingAbove: limit - total)
            if total > limit { throw RESTError(400, ServeLimits.responseTooLarge) }
        }
    }
}
