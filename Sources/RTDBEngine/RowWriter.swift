#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RTDBNet

/// A thread that writes `LeafRows`' full buffers while the thread that filled them reads on
/// (a streamed import: one core parses, the other runs SQLite). One buffer is written at a
/// time: `hand` waits for the one before, so at most two buffers exist and memory stays flat.
///
/// The statements (and their connection) are the writer's from the `hand` that lends them
/// until `wait` or `stop` gives them back: `RowStatements` cannot be copied, so the caller has
/// none to use meanwhile, and the connection's owning thread (checked in debug builds where
/// statements run) moves with them. A failed write is kept and thrown by the next `hand` or
/// `wait`; nothing more is written after it.
final class RowWriter {
    private struct State: ~Copyable {
        /// Lent by the caller; the thread takes them while it writes a buffer.
        var statements: RowStatements? = nil
        /// A buffer handed over and not yet taken by the thread.
        var work: LeafRows.Buffer? = nil
        /// True while the thread writes a buffer it took.
        var busy = false
        /// The last buffer written, emptied: given back by `hand` so its storage is reused.
        var spare = LeafRows.Buffer()
        var failure: Error? = nil
        var stopping = false

        var idle: Bool { work == nil && !busy }
    }

    private let shared = Locked(State())
    private var thread: pthread_t? = nil

    /// Nil when no thread can be started (the rows are then written by the caller).
    init?() {
        let context = Unmanaged.passRetained(shared).toOpaque()
        #if canImport(Glibc)
        var t = pthread_t()
        #else
        var t: pthread_t? = nil
        #endif
        let rc = pthread_create(&t, nil, { raw in
            #if canImport(Glibc)
            guard let raw else { return nil }
            #endif
            RowWriter.loop(Unmanaged<Locked<State>>.fromOpaque(raw).takeRetainedValue())
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Locked<State>>.fromOpaque(context).release()
            return nil
        }
        #if canImport(Glibc)
        thread = t
        #else
        guard let t else { return nil }
        thread = t
        #endif
    }

    /// Gives `buffer` to the thread once the one before is written, with the statements if the
    /// caller still had them, and returns an empty buffer to fill next. Throws the failure of
    /// an earlier write.
    func hand(_ buffer: LeafRows.Buffer, lending statements: consuming RowStatements?) throws -> LeafRows.Buffer {
        var lent = statements
        if let thread { lent?.moveOwner(to: thread) }
        return try shared.withLock(when: { $0.idle }) { state in
            if let given = lent.take() { state.statements = .some(given) }
            if let failure = state.failure { throw failure }
            state.work = buffer
            var next = LeafRows.Buffer()
            swap(&next, &state.spare)
            return next
        }
    }

    /// Waits until everything handed over is written and puts the statements back in `slot`
    /// (when they were lent); throws the failure of a write.
    func wait(returningTo slot: inout RowStatements?) throws {
        try shared.withLock(when: { $0.idle }) { state in
            RowWriter.giveBack(&state, to: &slot)
            if let failure = state.failure { throw failure }
        }
    }

    /// Drops work not yet taken, waits for the buffer being written, ends the thread, and puts
    /// the statements back in `slot` (when they were lent).
    func stop(returningTo slot: inout RowStatements?) {
        let running = thread
        thread = nil
        shared.withLock { state in
            state.stopping = true
            state.work = nil
        }
        if let running { precondition(pthread_join(running, nil) == 0, "pthread_join failed") }
        shared.withLock { state in RowWriter.giveBack(&state, to: &slot) }
    }

    private static func giveBack(_ state: inout State, to slot: inout RowStatements?) {
        guard var statements = state.statements.take() else { return }
        statements.moveOwner(to: pthread_self())
        slot = .some(statements)
    }

    private static func loop(_ shared: Locked<State>) {
        while true {
            var buffer = LeafRows.Buffer()
            var statements: RowStatements? = nil
            var failed = false
            let working = shared.withLock(when: { $0.work != nil || $0.stopping }) { state -> Bool in
                guard !state.stopping, let work = state.work else { return false }
                buffer = work
                state.work = nil
                state.busy = true
                statements = state.statements.take()
                failed = state.failure != nil
                return true
            }
            guard working else { return }
            var error: Error? = nil
            if !failed, var s = statements.take() {
                do { try LeafRows.writeAll(&buffer, &s) } catch let e { error = e }
                statements = .some(s)
            }
            buffer.clear()
            shared.withLock { state in
                if let error, state.failure == nil { state.failure = error }
                if let s = statements.take() { state.statements = .some(s) }
                state.spare = buffer
                state.busy = false
            }
        }
    }
}
