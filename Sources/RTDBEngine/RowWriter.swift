#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread that writes `LeafRows`' full buffers while the thread that filled them reads on
/// (a streamed import: one core parses, the other runs SQLite). One buffer is written at a
/// time: `hand` waits for the one before, so at most two buffers exist and memory stays flat.
///
/// The connection belongs to the writer from `hand` until `wait` or `stop` returns; SQLite
/// allows that (a connection used by one thread at a time). A failed write is kept and thrown
/// by the next `hand` or `wait`; nothing more is written after it.
final class RowWriter: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    /// Signalled when work arrives, when it is done, and on `stop`.
    private var changed = pthread_cond_t()
    /// A buffer handed over and not yet taken by the thread.
    private var work: LeafRows.Buffer? = nil
    /// True while the thread writes a buffer it took.
    private var busy = false
    /// The last buffer written, emptied: given back by `hand` so its storage is reused.
    private var spare = LeafRows.Buffer()
    private var failure: Error? = nil
    private var stopping = false
    private var thread: pthread_t? = nil
    private let statements: LeafRows.Statements

    /// Nil when no thread can be started (the rows are then written by the caller).
    init?(_ statements: LeafRows.Statements) {
        self.statements = statements
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&changed, nil)
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Glibc)
        var t = pthread_t()
        #else
        var t: pthread_t? = nil
        #endif
        let rc = pthread_create(&t, nil, { raw in
            #if canImport(Glibc)
            guard let raw else { return nil }
            #endif
            Unmanaged<RowWriter>.fromOpaque(raw).takeRetainedValue().loop()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<RowWriter>.fromOpaque(context).release()
            return nil
        }
        thread = t
    }

    deinit {
        pthread_cond_destroy(&changed)
        pthread_mutex_destroy(&mutex)
    }

    /// Gives `buffer` to the thread once the one before is written, and returns an empty
    /// buffer to fill next. Throws the failure of an earlier write.
    func hand(_ buffer: LeafRows.Buffer) throws -> LeafRows.Buffer {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        while work != nil || busy { pthread_cond_wait(&changed, &mutex) }
        if let failure { throw failure }
        work = buffer
        var next = LeafRows.Buffer()
        swap(&next, &spare)
        pthread_cond_broadcast(&changed)
        return next
    }

    /// Waits until everything handed over is written; throws the failure of a write.
    func wait() throws {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        while work != nil || busy { pthread_cond_wait(&changed, &mutex) }
        if let failure { throw failure }
    }

    /// Drops work not yet taken, waits for the buffer being written, and ends the thread.
    func stop() {
        pthread_mutex_lock(&mutex)
        let running = thread
        thread = nil
        stopping = true
        work = nil
        pthread_cond_broadcast(&changed)
        pthread_mutex_unlock(&mutex)
        if let running { pthread_join(running, nil) }
    }

    private func loop() {
        pthread_mutex_lock(&mutex)
        while true {
            while work == nil && !stopping { pthread_cond_wait(&changed, &mutex) }
            guard var buffer = work, !stopping else { break }
            work = nil
            busy = true
            let failed = failure != nil
            pthread_mutex_unlock(&mutex)
            var error: Error? = nil
            if failed {
                buffer.clear()
            } else {
                do { try LeafRows.writeAll(&buffer, statements) } catch let e { error = e; buffer.clear() }
            }
            pthread_mutex_lock(&mutex)
            if let error, failure == nil { failure = error }
            spare = buffer
            busy = false
            pthread_cond_broadcast(&changed)
        }
        pthread_mutex_unlock(&mutex)
    }
}
