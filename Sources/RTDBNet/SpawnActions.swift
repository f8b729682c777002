#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` with posix_spawn file actions for a child whose only channel is its stdout,
/// the write end of `pipe` (`pipe[1]`): stdin and stderr on /dev/null, and neither end of the
/// pipe left open in the child under its own number, so the reader sees end of file when the
/// child exits. The actions are destroyed when `body` returns.
public func withStdoutOnPipe<T>(_ pipe: [Int32], _ body: (inout SpawnFileActions) throws -> T) rethrows -> T {
    var actions = emptySpawnFileActions()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addclose(&actions, pipe[0])
    posix_spawn_file_actions_addclose(&actions, pipe[1])
    return try body(&actions)
}
