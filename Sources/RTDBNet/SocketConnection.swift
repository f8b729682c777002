#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One accepted connection on an event loop. It owns its socket (and TLS session), the bytes
/// not yet sent, and its registration in the loop; `close()` is the one place the socket
/// closes, and closing tells `onClose` once.
///
/// Output is written at once when the socket takes it; what it does not take waits here and
/// goes out when the socket is writable again. While its `sender` gathers (`OutputSender.gather`)
/// a plain socket's output is handed to the sender's thread instead; until it comes back, later
/// output waits behind it and the descriptor stays open. Back-pressure is explicit: with an
/// `outputLimit`, a peer that lets more than that many bytes pile up (a stream client that does
/// not read) is closed when more is sent to it, rather than allowed to grow memory without
/// bound. What was waiting before a send counts, not the send itself: one event larger than
/// the limit (a stream on the path of a huge write) still goes out whole.
///
/// Ownership: the connection is its loop's (debug builds check the thread); the loop holds it
/// while it is watched, its owner after. Closing is a state, not a deallocation: callbacks are
/// cleared when it closes, and nothing runs on a closed connection.
public final class SocketConnection: EventHandler {
    public let io: ConnectionIO
    public var fd: Int32 { io.fd }
    /// The loop's token for this connection (also its id).
    public private(set) var token: UInt64
    /// Weak: the loop holds the connection while it is watched, not the other way round.
    private weak var loop: EventLoop?
    /// Where a gathered stretch of output goes (nil: always written here).
    public var sender: OutputSender? = nil

    public private(set) var closed = false
    /// Monotonic milliseconds of the last bytes received / sent.
    public private(set) var lastInput: Int64
    public private(set) var lastOutput: Int64
    /// Close once everything queued is sent (after a final answer, a refused request …).
    public private(set) var closing = false
    /// Unsent bytes past which the connection is closed (nil: no limit).
    public var outputLimit: Int? = nil
    /// Called once, when the connection closes (by either side).
    public var onClose: (() -> Void)?

    private var out: [UInt8] = []
    private var outStart = 0
    /// Bytes with `OutputSender`'s thread (nil: none).
    private var handedOff: [UInt8]? = nil
    private var watchingWritable = false
    /// Between `hold()` and `release()`: output gathers and goes out in one write.
    private var holding = false

    /// Called when there is input to read (or the peer hung up): the owner then calls
    /// `readAvailable`.
    public var onReadable: (() -> Void)?

    /// Registers `io` with `loop` (the loop keeps the connection until it closes).
    public init(io: ConnectionIO, loop: EventLoop, sender: OutputSender? = nil) throws {
        self.io = io
        self.loop = loop
        self.sender = sender
        let now = monotonicMillis()
        lastInput = now
        lastOutput = now
        token = 0
        token = try loop.watch(io.fd, handler: self)
    }

    public func ready(_ r: Poller.Ready) {
        let tlsWaitsForWritable = io.wantsWritable
        if r.writable { flush() }
        // A write that failed closed the connection: its owner may have let go of what the
        // input callback would reach.
        if closed { return }
        if r.readable || r.closed || (r.writable && tlsWaitsForWritable) { onReadable?() }
    }

    /// Bytes not yet sent, those with `OutputSender`'s thread included.
    public var pendingOutput: Int { queued + (handedOff?.count ?? 0) }
    /// Bytes waiting here for the socket.
    private var queued: Int { out.count - outStart }

    /// Reads what the socket has into `buffer`, handing each read to `deliver`; closes the
    /// connection when the peer has gone (then `failure` says why, for TLS). Reads again while
    /// TLS holds decrypted bytes the socket will not signal.
    public func readAvailable(into buffer: inout [UInt8], _ deliver: (UnsafeRawBufferPointer) -> Void) {
        repeat {
            if closed { return }
            let result = buffer.withUnsafeMutableBytes { io.read(into: $0) }
            switch result {
            case .done(let n):
                lastInput = monotonicMillis()
                buffer.withUnsafeBytes { deliver(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            case .wouldBlock:
                // A TLS handshake that could not send all it had waits for the socket to drain.
                if io.wantsWritable { watchWritable(true) }
                return
            case .closed:
                close()
                return
            case .failed:
                if case .tls(_, let session) = io, let why = session.failure { failure = why }
                close()
                return
            }
        } while io.hasBufferedInput
    }

    /// Why TLS failed, when the connection closed because it did.
    public private(set) var failure: String? = nil
    /// The loop could not change what it watches the socket for: the connection was closed,
    /// since it could no longer be served as it asked.
    public private(set) var readinessFailure: NetError? = nil

    /// Queues `bytes` (writing at once what the socket takes); with `andClose`, the connection
    /// closes once they are sent.
    public func send(_ bytes: [UInt8], andClose: Bool = false) {
        assertOnLoop()
        if closed { return }
        if let limit = outputLimit, pendingOutput > limit {
            // A peer that stopped reading: drop it rather than grow without bound.
            close()
            return
        }
        if andClose { closing = true }
        if handedOff == nil && !holding && queued == 0, let sender, sender.isGathering, case .plain(let fd) = io {
            handedOff = bytes
            sender.add(self, fd: fd, bytes)
            return
        }
        if holding || handedOff != nil {
            out.append(contentsOf: bytes)
            return
        }
        if queued == 0 {
            let r = bytes.withUnsafeBytes { io.write($0) }
            switch r {
            case .done(let n):
                if n == bytes.count { lastOutput = monotonicMillis(); closeIfDone(); return }
                // The rest waits where it is: no copy of a large answer.
                out = bytes
                outStart = n
            case .wouldBlock:
                out = bytes
                outStart = 0
            case .closed, .failed:
                close()
                return
            }
        } else {
            out.append(contentsOf: bytes)
        }
        watchWritable(true)
    }

    /// Gathers what is sent until `release()`, which writes it at once: many small answers in
    /// one turn (a burst of realtime requests) cost one system call instead of one each.
    public func hold() { holding = true }

    /// Ends `hold()`: writes what gathered (the rest waits for the socket, as any output).
    public func release() {
        guard holding else { return }
        holding = false
        if closed || handedOff != nil { return }
        if queued > 0 { flush() } else { closeIfDone() }
    }

    /// Writes queued bytes while the socket takes them.
    public func flush() {
        assertOnLoop()
        if closed || handedOff != nil { return }
        while queued > 0 {
            let r = out.withUnsafeBytes { io.write(UnsafeRawBufferPointer(rebasing: $0[outStart...])) }
            switch r {
            case .done(let n):
                outStart += n
                lastOutput = monotonicMillis()
            case .wouldBlock:
                watchWritable(true)
                return
            case .closed, .failed:
                close()
                return
            }
        }
        out.removeAll(keepingCapacity: out.capacity <= 65_536)
        outStart = 0
        watchWritable(false)
        closeIfDone()
    }

    /// Closes the connection once its queued bytes are sent (at once when there are none).
    public func closeWhenFlushed() {
        closing = true
        closeIfDone()
    }

    private func closeIfDone() {
        if closing && pendingOutput == 0 { close() }
    }

    /// `OutputSender`'s thread wrote `written` bytes of those handed to it (-1: the socket
    /// failed): the rest, and what waited behind them, go out from here.
    func handedBack(written: Int) {
        assertOnLoop()
        guard let bytes = handedOff else { return }
        handedOff = nil
        if closed {
            // Closed meanwhile: the descriptor waited for the thread to let go of it.
            io.close()
            return
        }
        if written < 0 { close(); return }
        if written > 0 { lastOutput = monotonicMillis() }
        if written < bytes.count { out.insert(contentsOf: bytes[written...], at: outStart) }
        if queued > 0 { flush() } else { closeIfDone() }
    }

    /// Whether the loop should say when the socket can take more bytes.
    public func watchWritable(_ on: Bool) {
        if closed || watchingWritable == on { return }
        watchingWritable = on
        rewatch()
    }

    /// Whether the loop is told about input (false while the owner has too much to do already).
    public private(set) var readingPaused = false

    /// Stops (or starts again) watching for input: bytes wait in the socket, and a client
    /// sending more waits for its own socket buffer. A hang-up is still reported.
    public func pauseReading(_ paused: Bool) {
        if closed || readingPaused == paused { return }
        readingPaused = paused
        rewatch()
    }

    /// Tells the loop what the socket is watched for now. A refusal (the kernel is out of
    /// memory for it, or the loop is gone) would leave a connection that is never told it can
    /// write, or reads when it should not: it is closed instead, and says why.
    private func rewatch() {
        do {
            guard let loop else { throw NetError.system("epoll_ctl", EBADF) }
            try loop.modify(io.fd, token: token, read: !readingPaused, write: watchingWritable)
        } catch let e as NetError {
            readinessFailure = e
            close()
        } catch {
            close()
        }
    }

    /// Unwatches and closes the socket (TLS first sends close_notify); `onClose` runs once.
    public func close() {
        assertOnLoop()
        if closed { return }
        closed = true
        loop?.unwatch(io.fd, token: token)
        // While the sender's thread holds bytes for it, the descriptor stays open (handedBack).
        if handedOff == nil { io.close() }
        let done = onClose
        onClose = nil
        onReadable = nil
        // The owner may let go of this connection in `onClose`; it lives until the call ends.
        withExtendedLifetime(self) { done?() }
    }

    /// Lets go of a plain socket without closing it, so that another loop can take it on: it is
    /// unwatched, this connection counts as closed (`onClose` runs once), and the descriptor is
    /// returned for the new owner. Nil (and nothing changes) while bytes are still owed to the
    /// client, which would otherwise be lost or overtaken, or for a TLS session.
    public func detach() -> Int32? {
        assertOnLoop()
        guard !closed, !closing, !holding, pendingOutput == 0, case .plain(let fd) = io else { return nil }
        closed = true
        loop?.unwatch(fd, token: token)
        let done = onClose
        onClose = nil
        onReadable = nil
        withExtendedLifetime(self) { done?() }
        return fd
    }

    /// Stops a debug build when the connection is used off its loop's thread (the check and
    /// the weak load it needs are compiled out of release builds).
    @inline(__always)
    private func assertOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(loop?.handle.inLoop ?? true, "a connection touched off its loop's thread", file: file, line: line)
    }
}
