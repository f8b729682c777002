import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thrown when SIGINT or SIGTERM asked a command to stop before it committed anything: the error
/// line says `not_committed` and the process exits with 128 + the signal (130, 143).
struct Interrupted: Error {
    let signal: Int32
    /// The sentence of the error line (code `not_committed`).
    var message = "stopped by a signal before anything was committed"

    var name: String { Interrupted.name(of: signal) }

    static func name(of signal: Int32) -> String {
        signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)"
    }

    /// This interruption with what the command left said after it: "stopped by SIGINT; WHAT".
    func saying(_ what: String) -> Interrupted {
        Interrupted(signal: signal, message: "stopped by \(name); \(what)")
    }
}

/// SIGINT and SIGTERM for a command that must stop cleanly (tx, session, sync), over the
/// process's signal pipe (`SignalPipe`): the command polls `readFD` while it waits for a child,
/// and checks `pending` at the points where stopping is safe.
enum Interruption {
    /// The pipe once installed, and the first signal `pending` read from it. Only commands read
    /// them (the handler writes to the pipe alone), so a lock is enough.
    private struct State: Sendable {
        var pipe: SignalPipe? = nil
        var received: Int32 = 0
    }

    private static let state = Locked(State())

    /// The pipe's read end, -1 until `install` (or when no pipe could be made).
    static var readFD: Int32 { state.withLock { $0.pipe?.readEnd ?? -1 } }

    /// Installs the handlers; from now on SIGINT and SIGTERM no longer end the process.
    static func install() {
        state.withLock { s in
            if s.pipe != nil { return }
            // Without a pipe the signals keep their default action.
            s.pipe = try? SignalPipe()
        }
    }

    /// The signal received so far, if any.
    static func pending() -> Int32? {
        state.withLock { s in
            if s.received == 0, let first = s.pipe?.drain().first { s.received = first }
            return s.received == 0 ? nil : s.received
        }
    }

    /// Throws `Interrupted` when a signal has arrived.
    static func check() throws {
        if let sig = pending() { throw Interrupted(signal: sig) }
    }

    /// Runs `body`; when a signal stops it (at a progress line's update, TerminalProgress), the
    /// command's error line says what it left: `left` is read at that moment.
    static func saying<T>(_ left: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as Interrupted {
            throw e.saying(left())
        }
    }
}
