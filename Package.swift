// swift-tools-version:6.0
import PackageDescription
#if os(Linux)
import Glibc
#endif

// Packed relative relocations (DT_RELR) need glibc 2.36 or later at run time: a binary linked
// with them names GLIBC_ABI_DT_RELR and an older loader refuses to start it. The build machine's
// C library is the one the binary will run with, so the manifest asks it for its version and
// asks the linker for the packed table only when the loader knows it (Debian 12, Ubuntu 24.04
// and later); Ubuntu 22.04 (glibc 2.35) and Debian 11 get ordinary relocations.
func glibcHasPackedRelocations() -> Bool {
    #if os(Linux)
    var text = [CChar](repeating: 0, count: 64)
    guard confstr(Int32(_CS_GNU_LIBC_VERSION), &text, text.count) > 0 else { return false }
    // "glibc 2.36" -> [2, 36]
    let version = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        .split(separator: " ").last ?? ""
    let parts = version.split(separator: ".").compactMap { Int($0) }
    guard parts.count >= 2 else { return false }
    return (parts[0], parts[1]) >= (2, 36)
    #else
    return false
    #endif
}
let packedRelocations: [String] = glibcHasPackedRelocations()
    ? ["-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"] : []

// epoll, inotify and eventfd exist on Linux only: elsewhere nothing imports CLinux.
let linuxKernel: Target.Dependency = .target(name: "CLinux", condition: .when(platforms: [.linux]))

let package = Package(
    name: "rtdb",
    // Atomics come from the standard library's Synchronization module, which macOS has from 15
    // on; Linux and FreeBSD have it with Swift 6.
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "rtdb", targets: ["rtdb"]),
    ],
    targets: [
        // The system SQLite3 C library (Debian: libsqlite3-dev; macOS: the SDK).
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        // Pure, deterministic semantics: values, JSON, paths, keys, ordering, queries,
        // push IDs, server values, limits, event generation. No I/O.
        .target(name: "RTDBCore"),
        // The embedded database: one SQLite file shared by any number of processes.
        .target(name: "RTDBEngine", dependencies: ["RTDBCore", "CSQLite", "RTDBNet", linuxKernel]),
        // Pure wire codecs, no I/O: HTTP/1.1 requests and responses (incremental, bounded, one
        // chunked-body decoder), Server-Sent Events and stream events, WebSocket frames, Firebase's
        // realtime messages (one typed codec for both ends), REST query parameters, Firebase's
        // node hash and ETags.
        .target(name: "RTDBWire", dependencies: ["RTDBCore"]),
        // Security rules: the rules language (lenient JSON with positions, parser, type checks),
        // the evaluator of reads and writes, and ID tokens. Pure: no I/O.
        .target(name: "RTDBRules", dependencies: ["RTDBCore"]),
        // Linux kernel interfaces Glibc does not export (epoll, inotify, eventfd).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // Sockets, readiness polling (epoll, kqueue or poll), the event loop (descriptors and
        // timers), connections that own their socket and output, signals, folder and file
        // watching, and the shim over what differs between Linux, macOS and FreeBSD (System.swift).
        .target(name: "RTDBNet", dependencies: [linuxKernel]),
        // The data viewer `rtdb serve` answers at /.ui/: one page, its script and its style,
        // kept as the files they are (page/) and compiled into the binary as bytes by SwiftPM
        // (embedInCode), so the page needs no build step and no file beside the binary.
        .target(name: "RTDBViewer",
                resources: [.embedInCode("page/index.html"), .embedInCode("page/viewer.js"),
                            .embedInCode("page/viewer.css")]),
        // rtdb serve: Firebase's REST and streaming protocols over the embedded database.
        .target(name: "RTDBServer", dependencies: ["RTDBCore", "RTDBEngine", "RTDBNet", "RTDBWire", "RTDBRules", "RTDBViewer"]),
        // The Database over Firebase's REST API and event streams: HTTP/1.1 client, targets,
        // credentials (production Firebase, the emulator, rtdb serve).
        .target(name: "RTDBRemote", dependencies: ["RTDBCore", "RTDBWire", "RTDBNet"]),
        // A remote database through its offline cache, a Database of its own: the cache's
        // tables in an embedded file (queue, tracked queries, kept queries, purge), flushing,
        // reads from the cache, watches of it, client-side sessions.
        .target(name: "RTDBOffline", dependencies: ["RTDBCore", "RTDBEngine", "RTDBWire", "RTDBRemote"]),
        // Argument parsing, the command registry, one file per command, output and errors.
        // Commands see RTDBCore's Database and its capabilities only; Targets.swift opens them.
        .target(name: "RTDBCLI", dependencies: ["RTDBCore", "RTDBEngine", "RTDBServer", "RTDBNet", "RTDBRules", "RTDBRemote", "RTDBOffline"]),
        // Linked by lld, with packed relative relocations where the C library knows them
        // (DT_RELR, glibc 2.36+, see packedRelocations above): the loader then applies the
        // executable's ~20,000 relative relocations from a table a few KB long instead of
        // ~480 KB, which takes about 0.1 ms off every command's start-up.
        // A release build on Linux carries what it can of its runtime itself, so that the
        // README's plain `swift build -c release` and `make build` give the same binary (see
        // "Start-up against sqlite3" in BENCHMARKS.md): the Swift libraries (-static-stdlib),
        // libstdc++ (link/libstdc++.so says how) and libgcc's unwinder, and it exports no
        // symbols (the static Swift runtime asks for --export-dynamic, which nothing here
        // uses). The loader then maps only libsqlite3, libm and libc. Debug builds stay
        // dynamic: the test bundle links this target and loads the toolchain's shared Swift
        // runtime (Swift Testing), and one process must not hold two runtimes.
        .executableTarget(name: "rtdb", dependencies: ["RTDBCLI"],
                          exclude: ["link"],
                          linkerSettings: [.unsafeFlags(["-use-ld=lld"] + packedRelocations,
                                                        .when(platforms: [.linux])),
                                           .unsafeFlags(["-static-stdlib",
                                                         "-L", Context.packageDirectory + "/Sources/rtdb/link",
                                                         "-Xclang-linker", "-static-libgcc",
                                                         "-Xlinker", "--no-export-dynamic"],
                                                        .when(platforms: [.linux], configuration: .release))]),
        // What several test targets share (a seeded generator for property tests).
        .target(name: "RTDBTestSupport", path: "Tests/RTDBTestSupport"),
        .testTarget(name: "RTDBCoreTests", dependencies: ["RTDBCore", "RTDBTestSupport"]),
        .testTarget(name: "RTDBEngineTests", dependencies: ["RTDBEngine", "RTDBCore", "RTDBTestSupport"]),
        .testTarget(name: "RTDBWireTests", dependencies: ["RTDBWire", "RTDBCore"]),
        .testTarget(name: "RTDBRulesTests", dependencies: ["RTDBRules", "RTDBCore"]),
        // silent_sse_server.py is a helper script a test runs with python3, not a resource.
        .testTarget(name: "RTDBRemoteTests", dependencies: ["RTDBRemote", "RTDBWire", "RTDBNet", "RTDBCore"],
                    exclude: ["silent_sse_server.py"]),
        .testTarget(name: "RTDBNetTests", dependencies: ["RTDBNet"]),
        .testTarget(name: "RTDBServerTests", dependencies: ["RTDBServer", "RTDBWire", "RTDBEngine", "RTDBCore", "RTDBRules", "RTDBRemote",
                                                        "RTDBTestSupport"]),
        .testTarget(name: "RTDBOfflineTests", dependencies: ["RTDBOffline", "RTDBEngine", "RTDBRemote", "RTDBWire", "RTDBCore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["rtdb", "RTDBCLI", "RTDBCore", "RTDBNet", "RTDBRemote"]),
        .testTarget(name: "CLITests", dependencies: ["RTDBCLI", "RTDBCore", "rtdb"]),
    ]
)
