import RTDBCore
import RTDBEngine
import RTDBNet

/// Reads the first value of a stream that is large away from the loop: a stream opened on a
/// location holding tens of megabytes (or a window of children, one of which is that large)
/// must not keep the loop reading and rendering it while others ask for one leaf.
///
/// Design: before a REST stream opens, `ServerStreams.opensLarge` bounds its value from the
/// rows (`SizedReads`, up to `threshold` bytes). A larger one is read on a thread of its own
/// over the thread's own handle on the file (WAL mode: it reads the last commit while the loop
/// goes on), with the log position it reflects, and its opening bytes are rendered there. The
/// file's feed waits meanwhile (`FileViews.building`), so no view of the file moves past what
/// the thread read: on the loop, the stream gets a view of its own at that position (not the
/// path's shared view, whose value may be at another one), sends its bytes and follows the feed
/// from there, every later commit exactly once. Writes go on; their events wait for the feed.
///
/// Ownership: a `Request` and its outcome are values; the callback stays on the loop
/// (`OffLoopWork`).
final class StreamOpener {
    /// A stream's first value is read away from the loop when it is more than this many bytes
    /// of JSON (counted from its rows, up to this much): the same bound as a write's events.
    static let threshold = EventBuilder.threshold

    struct Request: Sendable {
        let file: String
        let timeoutSeconds: Double
        let path: Path
        let query: Query?
        let export: Bool
    }

    /// What the thread read: the value (a query's window), the log position it reflects, and
    /// the stream's opening bytes.
    struct Snapshot: Sendable {
        let path: Path
        let query: Query?
        let seq: Int64
        let value: Node
        let window: [Node.Entry]
        let opening: [UInt8]
    }

    enum Outcome: Sendable {
        case read(Snapshot)
        case failed(RTDBError)
    }

    private let work: OffLoopWork<Outcome>

    init(loop: EventLoop) {
        work = OffLoopWork(loop: loop)
    }

    /// Reads `request` on a new thread; `done` runs on the loop with what it read.
    func start(_ request: Request, done: @escaping (Outcome) -> Void) {
        work.start({ StreamOpener.read(request) }, done: done)
    }

    /// The work itself, on any thread.
    static func read(_ request: Request) -> Outcome {
        let db = EmbeddedDatabase(file: request.file, timeoutSeconds: request.timeoutSeconds)
        do {
            let snapshot: Snapshot
            if let query = request.query {
                let (seq, entries) = try db.querySnapshot(request.path, query)
                snapshot = Snapshot(path: request.path, query: query, seq: seq, value: .null, window: entries,
                                    opening: SSEStream.opening(.put(.root, Node.object(normalizing: entries)), export: request.export))
            } else {
                let (seq, value) = try db.snapshot(at: request.path)
                snapshot = Snapshot(path: request.path, query: nil, seq: seq, value: value, window: [],
                                    opening: SSEStream.opening(.put(.root, value), export: request.export))
            }
            return .read(snapshot)
        } catch let e as RTDBError {
            return .failed(e)
        } catch {
            return .failed(RTDBError(.ioError, "\(error)"))
        }
    }
}
