import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// kill -9 in the middle of a large write: the file stays intact (PRAGMA integrity_check is ok)
/// and the write is either wholly there or not there at all.
@Suite(.serialized) struct CrashSafetyTests {
    static let items = 100_000

    enum KillPoint: CustomStringConvertible {
        case afterSeconds(Double)        // a fixed delay after the start
        case walAtLeast(Int)             // once the write-ahead log has grown to this many bytes

        var description: String {
            switch self {
            case .afterSeconds(let s): return "after \(String(format: "%.3f", s)) s"
            case .walAtLeast(let b): return "at WAL ≥ \(b) bytes"
            }
        }
    }

    static func fileSize(_ path: String) -> Int? {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : nil
    }

    /// Kill points spread over the write: a few random delays and a few random WAL sizes.
    /// (A 100,000-item write logs several MB.)
    static func killPoints() -> [KillPoint] {
        [.afterSeconds(Double.random(in: 0.05...0.4)),
         .walAtLeast(Int.random(in: 4_096...200_000)),
         .walAtLeast(Int.random(in: 200_000...1_500_000)),
         .walAtLeast(Int.random(in: 1_500_000...4_000_000)),
         .walAtLeast(Int.random(in: 4_000_000...8_000_000)),
         .afterSeconds(Double.random(in: 0.4...2.5))]
    }

    struct Outcome {
        var killed: Bool          // the process died of SIGKILL (it had not finished)
        var midWrite: Bool        // …after its write had visibly started (the WAL had grown past the seed)
    }

    /// Starts `argv` (an rtdb command writing /big in `db`), kills it at `point`, then checks the
    /// file and that /big is either absent or complete with `items` children.
    func crashOnce(_ sb: Sandbox, db: String, argv: [String], stdinPath: String, point: KillPoint,
                   sourceLocation: SourceLocation = #_sourceLocation) throws -> Outcome {
        let sqlite3 = try #require(Binary.onPath("sqlite3"), "sqlite3 is needed for PRAGMA integrity_check")
        let seed = sb.rtdb("--db", db, "set", "/keep", "{\"x\":1}", "-q")
        #expect(seed.status == 0, "\(seed)", sourceLocation: sourceLocation)
        let wal = db + "-wal"
        // The seed left frames in the WAL: only growth beyond them shows the big write under way.
        let walBefore = CrashSafetyTests.fileSize(wal) ?? 0

        let name = "crash-\(UUID().uuidString.prefix(8))"
        let child = try #require(sb.background([Binary.rtdb, "--db", db] + argv, stdinPath: stdinPath, name: name),
                                 sourceLocation: sourceLocation)
        let started = Spawn.now()
        var walAtKill = 0
        var sentKill = false
        while child.isRunning {
            let walSize = CrashSafetyTests.fileSize(wal) ?? 0
            let due: Bool
            switch point {
            case .afterSeconds(let s): due = Spawn.now() - started >= s
            case .walAtLeast(let b): due = walSize >= b
            }
            if due {
                walAtKill = walSize
                child.killGroup(SIGKILL)
                sentKill = true
                break
            }
            if Spawn.now() - started > 120 { Issue.record("writer never finished", sourceLocation: sourceLocation); child.killGroup(); break }
            usleep(1_000)
        }
        let status = child.wait(timeout: 30)
        let killed = sentKill && status == 128 + SIGKILL
        #expect(status == 0 || killed, "\(point): unexpected status \(status): \(child.stderr)", sourceLocation: sourceLocation)

        // The file is intact…
        let check = Spawn.run([sqlite3, db, "PRAGMA integrity_check;"], env: ProcessInfo.processInfo.environment,
                              input: .none, timeout: 60)
        #expect(check.status == 0 && check.stdout == "ok\n", "\(point): integrity_check: \(check)", sourceLocation: sourceLocation)
        // …the data written before is untouched…
        expectOK(sb.rtdb("--db", db, "get", "/keep"), "{\"x\":1}\n", sourceLocation: sourceLocation)
        // …and /big is all or nothing.
        let shallow = sb.rtdb("--db", db, "get", "/big", "--shallow")
        #expect(shallow.status == 0 && shallow.stderr.isEmpty, "\(point): \(shallow)", sourceLocation: sourceLocation)
        if shallow.stdout == "null\n" {
            #expect(killed, "\(point): the writer finished (status \(status)) but /big is missing", sourceLocation: sourceLocation)
        } else {
            let children = (parseJSON(shallow.stdout) as? [String: Any])?.count ?? (parseJSON(shallow.stdout) as? [Any])?.count
            #expect(children == CrashSafetyTests.items,
                    "\(point): /big has \(children.map(String.init) ?? "?") children, not 0 or \(CrashSafetyTests.items)",
                    sourceLocation: sourceLocation)
        }
        // The file takes new writes.
        expectOK(sb.rtdb("--db", db, "set", "/after", "1"), "{\"path\":\"/after\",\"value\":1}\n", sourceLocation: sourceLocation)
        return Outcome(killed: killed, midWrite: killed && walAtKill > walBefore)
    }

    @Test(.timeLimit(.minutes(3)))
    func killedPushLinesIsAllOrNothing() throws {
        let sb = Sandbox()
        let lines = sb.write("lines.txt", (0..<CrashSafetyTests.items).map { "{\"i\":\($0),\"t\":\"item\"}\n" }.joined())
        var outcomes: [Outcome] = []
        for (n, point) in CrashSafetyTests.killPoints().enumerated() {
            outcomes.append(try crashOnce(sb, db: sb.dir + "/push\(n).db", argv: ["push", "/big", "--lines", "-q"],
                                          stdinPath: lines, point: point))
        }
        #expect(outcomes.contains { $0.midWrite }, "no run was killed in the middle of its write: \(outcomes)")
    }

    @Test(.timeLimit(.minutes(3)))
    func killedLargeSetIsAllOrNothing() throws {
        let sb = Sandbox()
        var doc = "{"
        for i in 0..<CrashSafetyTests.items {
            if i > 0 { doc += "," }
            doc += "\"k\(i)\":{\"i\":\(i),\"s\":\"some text\"}"
        }
        doc += "}"
        let file = sb.write("doc.json", doc)
        var outcomes: [Outcome] = []
        for (n, point) in CrashSafetyTests.killPoints().enumerated() {
            outcomes.append(try crashOnce(sb, db: sb.dir + "/set\(n).db", argv: ["set", "/big", "-", "-q"],
                                          stdinPath: file, point: point))
        }
        #expect(outcomes.contains { $0.midWrite }, "no run was killed in the middle of its write: \(outcomes)")
    }
}
