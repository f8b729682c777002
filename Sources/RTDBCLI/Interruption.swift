import RTDBCore
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

    var name: String { signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)" }
}

/// SIGINT and SIGTERM for a command that must stop cleanly (tx): the handler only writes the
/// signal number into a pipe, which is async-signal-safe; the command polls that pipe while it
/// waits for a child, and checks it at the points where stopping is safe.
enum Interruption {
    /// Both ends of the signal pipe (-1 until `install`); the handler writes to `writeFD`.
    nonisolated(unsafe) static var readFD: Int32 = -1
    nonisolated(unsafe) private static var writeFD: Int32 = -1
    /// The first signal seen by `pending`, kept once read from the pipe.
    nonisolated(unsafe) private static var received: Int32 = 0

    /// Installs the handlers; from now on SIGINT and SIGTERM no longer end the process.
    static func install() {
        if readFD >= 0 { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }   // without a pipe the signals keep their default action
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = fds[0]
        writeFD = fds[1]
        let handler: @convention(c) (Int32) -> Void = { sig in
            var byte = UInt8(truncatingIfNeeded: sig)
            _ = write(Interruption.writeFD, &byte, 1)
        }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
    }

    /// The signal received so far, if any.
    static func pending() -> Int32? {
        if received == 0 && readFD >= 0 {
            var byte: UInt8 = 0
            if read(readFD, &byte, 1) == 1 { received = Int32(byte) }
        }
        return received == 0 ? nil : received
    }

    /// Throws `Interrupted` when a signal has arrived.
    static func check() throws {
        if let sig = pending() { throw Interrupted(signal: sig) }
    }
}
