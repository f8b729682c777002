import RTDBCore
import RTDBEngine
import RTDBNet

/// Builds the events of a write the change feed knows by its paths alone (a write too large to
/// copy) on a thread of its own, for the streams that must read it back: a stream on the path
/// of an 88 MB PUT reads 88 MB and is sent all of it, and the loop must not wait for that while
/// others ask for one leaf.
///
/// Design: `ServerStreams.pump` stops at such an entry and hands over what the thread needs,
/// all values: the file's name, the entry, and each concerned view's location, current value
/// (`LocationStream`) and the kinds of its subscribers. The thread opens its own handle on the
/// file, reads what is near each location (`EmbeddedDatabase.change(of:at:)`), applies it and
/// renders the frames (`PreparedEvent`); the loop then gives each view its new value, sends the
/// bytes and goes on with the feed. The file's later entries wait meanwhile, so every stream
/// still sees writes in commit order, and so do this server's writes (group commit holds its
/// batches), so the thread reads the data as that write left it: every event is exact, as
/// when it is built on the loop. Reads go on: the file is in WAL mode.
///
/// Ownership: a `Request` and its outcomes are values; what the loop needs when the thread ends
/// (its callback) stays on the loop (`OffLoopWork`).
final class EventBuilder {
    struct ViewState: Sendable {
        let path: Path
        let location: LocationStream
        let kinds: [StreamSubscriber.Kind]
    }

    struct Request: Sendable {
        let file: String
        let timeoutSeconds: Double
        let entry: FeedEntry
        let views: [ViewState]
    }

    enum Outcome: Sendable {
        /// The view's value after the write, and the event, when it changed.
        case built(LocationStream, PreparedEvent?)
        /// The value could not be read: the loop reads the view again.
        case failed
    }

    /// A view reads a write back away from the loop when that is more than this many bytes of
    /// JSON (counted from its rows first, up to this much); a smaller one (a priority change)
    /// is read at once, and its events go out before the writer's answer as any other's.
    static let threshold = 256 << 10

    private let work: OffLoopWork<[Outcome]>
    /// This server's writes, held while a build runs.
    private let writes: GroupCommit?

    init(loop: EventLoop, holding writes: GroupCommit?) {
        work = OffLoopWork(loop: loop)
        self.writes = writes
    }

    var isRunning: Bool { work.isRunning }

    /// Starts building `request` on a new thread; `done` runs on the loop with one outcome per
    /// view, in order.
    func start(_ request: Request, done: @escaping ([Outcome]) -> Void) {
        writes?.holdForEvents()
        work.start({ EventBuilder.build(request) }) { [writes] outcomes in
            writes?.eventsBuilt()
            done(outcomes)
        }
    }

    /// The work itself, on any thread (and inline where there is no loop).
    static func build(_ request: Request) -> [Outcome] {
        let db = EmbeddedDatabase(file: request.file, timeoutSeconds: request.timeoutSeconds)
        return request.views.map { view in
            var location = view.location
            do {
                guard let change = try db.change(of: request.entry, at: view.path),
                      let event = location.apply(change) else { return .built(location, nil) }
                return .built(location, PreparedEvent(event, renderedFor: view.kinds))
            } catch {
                return .failed
            }
        }
    }
}
