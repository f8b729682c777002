import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import RTDBNet

/// A throwaway CA and certificates, made once per test run by scripts/make-test-certificates
/// (the openssl CLI) in a temporary folder that is never committed.
enum TestPKI {
    static let folder: String? = {
        let dir = NSTemporaryDirectory() + "rtdb-net-pki-\(getpid())"
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/make-test-certificates").path
        let r = run(["/bin/sh", script, dir])
        // Removed when the test process exits (the folder's name follows from the pid).
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "rtdb-net-pki-\(getpid())") }
        return r.status == 0 ? dir : nil
    }()

    /// The path of `name` in the folder ("" when the folder could not be made: tests then fail
    /// on their first expectation rather than crash).
    static func file(_ name: String) -> String { (folder ?? "/nonexistent") + "/" + name }

    static func read(_ name: String) -> String { (try? String(contentsOfFile: file(name), encoding: .utf8)) ?? "" }

    struct Result { var status: Int32; var output: String }

    /// Runs a program to completion; stdout and stderr together.
    static func run(_ argv: [String], input: [UInt8]? = nil) -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0].hasPrefix("/") ? argv[0] : "/usr/bin/env")
        p.arguments = argv[0].hasPrefix("/") ? Array(argv.dropFirst()) : argv
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        let inPipe = Pipe()
        p.standardInput = input == nil ? FileHandle.nullDevice : inPipe
        do { try p.run() } catch { return Result(status: -1, output: "cannot start \(argv): \(error)") }
        if let input {
            inPipe.fileHandleForWriting.write(Data(input))
            try? inPipe.fileHandleForWriting.close()
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }
}

/// `openssl s_server -www` on a loopback port the kernel chooses, with the given certificate;
/// it answers `GET /` with a status page. Killed when released.
final class OpenSSLServer {
    let pid: pid_t
    let port: Int

    init?(cert: String, key: String) {
        let log = NSTemporaryDirectory() + "rtdb-s_server-\(getpid())-\(UUID().uuidString).out"
        defer { unlink(log) }
        let out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(out); close(null) }
        var actions = emptySpawnFileActions()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, null, 0)
        posix_spawn_file_actions_adddup2(&actions, out, 1)
        posix_spawn_file_actions_adddup2(&actions, null, 2)
        let argv = ["/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key, "-www"]
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid: pid_t = 0
        guard out >= 0, null >= 0, posix_spawn(&pid, argv[0], &actions, nil, &cargs, processEnvironment) == 0 else { return nil }
        self.pid = pid
        // It prints "ACCEPT 127.0.0.1:PORT" once it listens.
        var found: Int? = nil
        for _ in 0..<1000 where found == nil {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
               let tail = line.split(separator: ":").last {
                found = Int(tail)
            } else {
                usleep(5_000)
            }
        }
        guard let found else {
            kill(pid, SIGKILL)
            var st: Int32 = 0
            waitpid(pid, &st, 0)
            return nil
        }
        port = found
    }

    deinit {
        kill(pid, SIGKILL)
        var st: Int32 = 0
        waitpid(pid, &st, 0)
    }
}
