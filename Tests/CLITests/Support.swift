import Foundation
import Testing

// Shared helpers for the CLI packaging tests: where the package and the built `rtdb` are,
// running programs with a deadline, and scratch folders.

enum Package {
    /// The package root (this file is Tests/CLITests/Support.swift).
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func file(_ relative: String) -> URL { root.appendingPathComponent(relative) }

    static func text(_ relative: String) throws -> String {
        try String(contentsOf: file(relative), encoding: .utf8)
    }

    /// The folder holding the `rtdb` built for this test run (RTDB_TEST_BIN_DIR overrides).
    static func binDir() throws -> URL {
        var candidates: [URL] = []
        if let dir = ProcessInfo.processInfo.environment["RTDB_TEST_BIN_DIR"] {
            candidates.append(URL(fileURLWithPath: dir))
        }
        #if os(Linux)
        candidates.append(URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent())
        #endif
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        if let arg0 = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: arg0).deletingLastPathComponent())
        }
        for dir in candidates where FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("rtdb").path) {
            return dir
        }
        throw Failure("cannot find the built rtdb next to the test bundle (looked in \(candidates.map(\.path)))")
    }

    static func rtdb() throws -> String { try binDir().appendingPathComponent("rtdb").path }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

struct Run {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// The full path of `program` on PATH, or nil.
func which(_ program: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":") {
        let candidate = String(dir) + "/" + program
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// The path of a shell the tests need; a missing one fails the test with a clear message.
func requireTool(_ name: String) throws -> String {
    guard let path = which(name) else {
        throw Failure("\(name) is not installed, so this test cannot run: install it "
            + "(Debian: apt-get install \(name); `make test` installs it)")
    }
    return path
}

/// Runs `executable` with `arguments`, stdin from `input`, and fails once `timeout` seconds pass.
func run(_ executable: String, _ arguments: [String], input: String = "", environment: [String: String]? = nil,
         directory: URL? = nil, timeout: Double = 60) throws -> Run {
    let scratch = try TempDir()
    let outURL = scratch.url.appendingPathComponent("stdout")
    let errURL = scratch.url.appendingPathComponent("stderr")
    let inURL = scratch.url.appendingPathComponent("stdin")
    for url in [outURL, errURL] where !FileManager.default.createFile(atPath: url.path, contents: nil) {
        throw Failure("cannot create \(url.path)")
    }
    try Data(input.utf8).write(to: inURL)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = directory }
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    let inp = try FileHandle(forReadingFrom: inURL)
    defer { try? out.close(); try? err.close(); try? inp.close() }
    process.standardOutput = out
    process.standardError = err
    process.standardInput = inp
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning {
        if Date() > deadline {
            process.terminate()
            process.waitUntilExit()
            throw Failure("\(executable) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
        }
        usleep(5_000)
    }
    process.waitUntilExit()
    let stdout = String(decoding: try Data(contentsOf: outURL), as: UTF8.self)
    let stderr = String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
    return Run(status: process.terminationStatus, stdout: stdout, stderr: stderr)
}

/// A scratch folder, removed when the value is released.
final class TempDir {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-cli-tests-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}
