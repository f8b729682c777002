import Synchronization
import RTDBNet
import RTDBWire

/// How a loop that only answers requests (`FrontLoop`) reaches the loop that owns group commit,
/// the writer: a write goes there to run in the next batch and its answer comes back once the
/// batch is durable; a connection whose next request only the writer can serve (a stream, a
/// realtime session, a large read or write) moves there for good.
///
/// Ownership: the writer's core is reached only through tasks posted to its loop, and an answer
/// only through a task posted to the front's; what crosses is Sendable (requests, responses,
/// descriptors and the reader's state).
final class WriterLink: Sendable {
    let writer: LoopBound<ServerCore>

    init(writer: LoopBound<ServerCore>) {
        self.writer = writer
    }

    /// Runs `request`, a write, in the writer's next group commit; `answer` runs on its own
    /// loop with the response once the batch is committed (or failed).
    func write(_ request: HTTPRequest, answer: LoopBound<(HTTPResponse) -> Void>) {
        let writer = self.writer
        writer.handle.execute {
            writer.value.commitForwarded(request) { response in
                answer.handle.execute { answer.value(response) }
            }
        }
    }

    /// The writer takes on `connection` (see `HandedConnection`).
    func handOver(_ connection: HandedConnection) {
        let writer = self.writer
        writer.handle.execute { writer.value.adopt(connection) }
    }
}

/// A plain HTTP connection moving from one loop to another between two requests: its socket,
/// the bytes its reader holds, the requests read but not answered (the first of them is the
/// one the new loop must serve), and what its intake has claimed and measured. Nothing is owed
/// to the client when it moves (`SocketConnection.detach` waits for that), so answers keep
/// their order.
struct HandedConnection: Sendable {
    let fd: Int32
    let parser: HTTPRequestParser
    let requests: [HTTPRequest]
    let intake: RequestIntake
    let headStarted: Int64?
}

/// Connections open on all of the server's loops together, against `--max-connections`:
/// counted by the loop that accepts (or adopts) one, and uncounted by the loop it closes on.
/// Also how many went to front loops and how many moved back to the writer since the start
/// (what tests check to know which loop served them).
final class OpenConnections: Sendable {
    private let open = Atomic<Int>(0)
    private let handedOut = Atomic<Int>(0)
    private let movedBack = Atomic<Int>(0)

    init() {}

    var count: Int { open.load(ordering: .relaxed) }
    func opened() { open.add(1, ordering: .relaxed) }
    func closed() { open.subtract(1, ordering: .relaxed) }

    var toFronts: Int { handedOut.load(ordering: .relaxed) }
    func handedToFront() { handedOut.add(1, ordering: .relaxed) }
    var toWriter: Int { movedBack.load(ordering: .relaxed) }
    func movedToWriter() { movedBack.add(1, ordering: .relaxed) }
}
