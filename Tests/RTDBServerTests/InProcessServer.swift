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

/// Runs a server on a fresh file (in a folder of its own, removed after) for `body`, which is
/// given the server and the file's path; then stops it.
func withServerOnFreshFile(timeoutSeconds: Double = 5, _ body: (Server, String) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-server-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var options = Server.Options()
    options.port = 0
    let file = dir + "/a.db"
    let server = try Server(options: options, namespaces: ServerNamespaces(file: file, timeoutSeconds: timeoutSeconds),
                            watchFolder: nil)
    try whileRunning(server) { try body(server, file) }
}
