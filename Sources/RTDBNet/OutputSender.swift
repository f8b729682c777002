#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes the answers of a stretch of loop work (a group commit's acknowledgements and events)
/// on a thread of its own, so that the loop reads and parses the next requests while the
/// kernel delivers the last answers. On loopback one small `send` also runs the receiver's side
/// of TCP and wakes the receiver: the largest single cost of answering a small write.
///
/// Inside `gather`, `SocketConnection.send` on a plain socket with nothing else queued hands its
/// bytes to the batch instead of writing them; the batch goes to the thread a slice at a time,
/// and the thread makes one non-blocking `send` per connection and hands back how much each took. The thread
/// sees descriptors and bytes only; the loop keeps the connections. Until its bytes come back
/// (`drain`, when `wakeRead` is readable) a connection writes nothing else (later output queues
/// behind, so bytes leave in the order they were sent) and does not close its descriptor (so
/// the number cannot be reused under the thread); what the socket did not take goes out from
/// the loop, as any output. TLS connections never hand off: their session is the loop's.
public final class OutputSender {
    struct Item: Sendable {
        let fd: Int32
        let bytes: [UInt8]
    }

    /// What the thread and the loop share, under `mutex`: batches to write, what each item's
    /// `send` took (-1: the socket failed), and the pipe that wakes the loop.
    private final class Shared: @unchecked Sendable {
        private var mutex = pthread_mutex_t()
        /// Signalled when there is a batch to write (or the thread should stop).
        private var work = pthread_cond_t()
        /// Broadcast when the thread has written a batch.
        private var written = pthread_cond_t()
        private var queue: [[Item]] = []
        private var results: [[Int]] = []
        private var writing = false
        private var stopping = false
        let wakeRead: Int32
        let wakeWrite: Int32

        init(wakeRead: Int32, wakeWrite: Int32) {
            self.wakeRead = wakeRead
            self.wakeWrite = wakeWrite
            pthread_mutex_init(&mutex, nil)
            pthread_cond_init(&work, nil)
            pthread_cond_init(&written, nil)
        }

        deinit {
            pthread_cond_destroy(&work)
            pthread_cond_destroy(&written)
            pthread_mutex_destroy(&mutex)
            close(wakeRead)
            close(wakeWrite)
        }

        private func locked<T>(_ body: () -> T) -> T {
            pthread_mutex_lock(&mutex)
            defer { pthread_mutex_unlock(&mutex) }
            return body()
        }

        func append(_ batch: [Item]) {
            locked {
                queue.append(batch)
                pthread_cond_signal(&work)
            }
        }

        func takeResults() -> [[Int]] {
            locked {
                let r = results
                results = []
                return r
            }
        }

        /// Blocks until every batch given to the thread is written.
        func waitUntilWritten() {
            locked { while !queue.isEmpty || writing { pthread_cond_wait(&written, &mutex) } }
        }

        func stop() {
            locked {
                stopping = true
                pthread_cond_signal(&work)
            }
        }

        /// The thread's body: write batches in order until stopped with nothing left.
        func run() {
            while let batch = next() {
                var taken: [Int] = []
                taken.reserveCapacity(batch.count)
                for item in batch {
                    switch item.bytes.withUnsafeBytes({ SocketIO.write(item.fd, $0) }) {
                    case .done(let n): taken.append(n)
                    case .wouldBlock: taken.append(0)
                    case .closed, .failed: taken.append(-1)
                    }
                }
                locked {
                    results.append(taken)
                    writing = false
                    pthread_cond_broadcast(&written)
                }
                var b: UInt8 = 1
                _ = write(wakeWrite, &b, 1)
            }
        }

        private func next() -> [Item]? {
            locked {
                while queue.isEmpty && !stopping { pthread_cond_wait(&work, &mutex) }
                if queue.isEmpty { return nil }
                writing = true
                return queue.removeFirst()
            }
        }
    }

    private let shared: Shared
    /// Gathered sends go to the thread in slices of this many, so that it starts writing while
    /// the loop still makes the rest (one write fanned out to 1,000 streams: its slowest
    /// subscriber is served about a fifth sooner than with one batch at the end).
    let slice: Int
    /// The connections of the batches with the thread, oldest first, in item order.
    private var inFlight: [[SocketConnection]] = []

    /// The loop watches it: readable when a batch has been written (then call `drain`).
    public var wakeRead: Int32 { shared.wakeRead }

    /// Some batch has not come back yet.
    public var isBusy: Bool { !inFlight.isEmpty }

    /// Starts the thread; throws when no pipe or thread can be had (then write on the loop).
    public init(slice: Int = 64) throws {
        self.slice = max(1, slice)
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { throw NetError.system("pipe", errno) }
        setNonBlocking(fds[0])
        setNonBlocking(fds[1])
        let shared = Shared(wakeRead: fds[0], wakeWrite: fds[1])
        self.shared = shared
        let rc = startDetachedThread { shared.run() }
        if rc != 0 { throw NetError.system("pthread_create", rc) }
    }

    deinit {
        finish()
        shared.stop()
    }

    /// Runs `body` with the sends of `loop`'s plain connections gathered and handed to the
    /// thread (a slice at a time, the rest at the end). Not nested.
    public func gather(on loop: EventLoop, _ body: () -> Void) {
        let batch = Batch(sender: self)
        loop.outputBatch = batch
        body()
        loop.outputBatch = nil
        submit(batch)
    }

    /// Hands what `batch` gathered so far to the thread.
    fileprivate func submit(_ batch: Batch) {
        if batch.items.isEmpty { return }
        inFlight.append(batch.connections)
        shared.append(batch.items)
        batch.connections = []
        batch.items = []
    }

    /// On the loop: tells the connections of every written batch what their socket took.
    public func drain() {
        var b = [UInt8](repeating: 0, count: 64)
        while read(shared.wakeRead, &b, b.count) > 0 {}
        for written in shared.takeResults() {
            let connections = inFlight.removeFirst()
            for (c, n) in zip(connections, written) { c.handedBack(written: n) }
        }
    }

    /// On the loop, while it stops: waits for the thread to write what it holds, then drains.
    public func finish() {
        if inFlight.isEmpty { return }
        shared.waitUntilWritten()
        drain()
    }

    /// Sends gathered during `gather`: the connections and what each sent, in order.
    final class Batch {
        unowned let sender: OutputSender
        var connections: [SocketConnection] = []
        var items: [Item] = []

        init(sender: OutputSender) { self.sender = sender }

        func add(_ connection: SocketConnection, fd: Int32, _ bytes: [UInt8]) {
            connections.append(connection)
            items.append(Item(fd: fd, bytes: bytes))
            if items.count >= sender.slice { sender.submit(self) }
        }
    }
}
