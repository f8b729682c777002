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
/// Ownership: a `Request` and its `Result` are values; what the loop needs when the thread ends
/// (its callback) stays here, keyed by the build's number, as in `DetachedWrites`.
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

    private let loop: EventLoop
    /// This server's writes, held while a build runs.
    private let writes: GroupCommit?
    private var finished: [UInt64: ([Outcome]) -> Void] = [:]
    private var nextNumber: UInt64 = 0

    init(loop: EventLoop, holding writes: GroupCommit?) {
        self.loop = loop
        self.writes = writes
    }

    var isRunning: Bool { !finished.isEmpty }

    /// Starts building `request` on a new thread; `done` runs on the loop with one outcome per
    /// view, in order.
    func start(_ request: Request, done: @escaping ([Outcome]) -> Void) {
        loop.assertOnLoop()
        let number = nextNumber
        nextNumber += 1
        finished[number] = done
        writes?.holdForEvents()
        let me = LoopBound(self, on: loop.handle)
        _ = startDetachedThread(orHere: true) {
            let outcomes = EventBuilder.build(request)
            me.handle.execute { me.value.end(number, outcomes) }
        }
    }

    /// On the loop: a build ended.
    private func end(_ number: UInt64, _ outcomes: [Outcome]) {
        writes?.eventsBuilt()
        finished.removeValue(forKey: number)?(outcomes)
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
