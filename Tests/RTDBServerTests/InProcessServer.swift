import Foundation
@testable import RTDBServer

/// A server on a thread of its own, and the signal its loop gives when it has ended.
private final class RunningServer: @unchecked Sendable {
    let server: Server
    let done = DispatchSemaphore(value: 0)
    init(_ server: Server) { self.server = server }
}

/// Runs `server` on a thread of its own for `body`, then stops it and waits (at most ten
/// seconds) for its loop to end.
func whileRunning<T>(_ server: Server, _ body: () throws -> T) rethrows -> T {
    let running = RunningServer(server)
    Thread.detachNewThread {
        _ = try? running.server.run()
        running.done.signal()
    }
    defer {
        running.server.stop()
        _ = running.done.wait(timeout: .now() + 10)
    }
    return try body()
}
