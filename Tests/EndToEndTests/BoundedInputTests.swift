import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Peak memory of one run, measured by GNU time (`/usr/bin/time -f %M`: the largest resident
/// set of the process, in KiB), so the runner's own memory never counts.
enum PeakMemory {
    static let time = "/usr/bin/time"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: time) }

    /// Runs `sh -c script` where `$MEASURE` stands for the measured command prefix
    /// (`/usr/bin/time -q -f …`). Returns the run with the measurement line taken out of its
    /// stderr, and the peak in bytes of the measured process.
    static func run(_ sb: Sandbox, _ script: String, timeout: Double = 120) -> (RunResult, peak: Int?) {
        var r = sb.program(["sh", "-c", script], env: ["MEASURE": "\(time) -q -f rtdb-peak-kib=%M"], timeout: timeout)
        var peak: Int? = nil
        var kept: [Substring] = []
        for line in r.stderr.split(separator: "\n") {
            if line.hasPrefix("rtdb-peak-kib=") { peak = Int(line.dropFirst("rtdb-peak-kib=".count)).map { $0 * 1024 } }
            else { kept.append(line) }
        }
        r.stderrBytes = Array(kept.map { $0 + "\n" }.joined().utf8)
        return (r, peak)
    }
}

/// Reliability: every input that is held whole is capped at the write limit as it is read —
/// push's stdin, the output of a tx command — with `too_large` (status 3), bounded memory and
/// nothing written. `set` and `update` on the database file, and `push --lines`, stream a large
/// input instead (no limit, bounded memory): 300 MB of zero bytes is then refused as the invalid
/// JSON it is, at its first byte, with nothing written.
@Suite(.enabled(if: PeakMemory.available, "GNU time (/usr/bin/time) is needed to measure peak memory; run scripts/install-test-tools"))
struct BoundedInputTests {
    static let limit = 256 * 1024 * 1024
    /// The write limit plus the program itself and one read chunk.
    static let bound = limit + 40 * 1024 * 1024
    static let oversized = "300000000"   // bytes, more than the 256 MiB write limit

    func expectRefused(_ r: RunResult, peak: Int?, below bound: Int = BoundedInputTests.bound,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        expectError(r, status: 3, code: "too_large", sourceLocation: sourceLocation)
        #expect(r.error?.message.contains("write limit") == true, "\(r)", sourceLocation: sourceLocation)
        guard let peak else {
            Issue.record("no peak memory measured: \(r)", sourceLocation: sourceLocation)
            return
        }
        #expect(peak <= bound, "peak memory \(peak / 1024 / 1024) MiB, more than \(bound / 1024 / 1024) MiB",
                sourceLocation: sourceLocation)
    }

    /// A streamed input that is not JSON: refused at its first byte, in bounded memory.
    func expectStreamedAndRefused(_ r: RunResult, peak: Int?, sourceLocation: SourceLocation = #_sourceLocation) {
        expectError(r, status: 3, code: "invalid_json", sourceLocation: sourceLocation)
        #expect(r.error?.message.contains("at byte 0") == true, "\(r)", sourceLocation: sourceLocation)
        guard let peak else {
            Issue.record("no peak memory measured: \(r)", sourceLocation: sourceLocation)
            return
        }
        #expect(peak <= 96 * 1024 * 1024, "peak memory \(peak / 1024 / 1024) MiB", sourceLocation: sourceLocation)
    }

    @Test func oversizedStdinIsRefusedAsItIsRead() {
        let sb = Sandbox()
        sb.seed("/a", "1")
        for command in ["push /a -"] {
            let (r, peak) = PeakMemory.run(sb, "head -c \(BoundedInputTests.oversized) /dev/zero | $MEASURE \"$RTDB\" \(command)")
            expectRefused(r, peak: peak)
        }
        for command in ["set /a -", "update /a -", "push /a --lines"] {
            let (r, peak) = PeakMemory.run(sb, "head -c \(BoundedInputTests.oversized) /dev/zero | $MEASURE \"$RTDB\" \(command)")
            expectStreamedAndRefused(r, peak: peak)
        }
        // One line of digits longer than the write limit: refused once the limit is read.
        let (long, peak) = PeakMemory.run(sb, "head -c \(BoundedInputTests.oversized) /dev/zero | tr '\\0' 1 | $MEASURE \"$RTDB\" push /a --lines")
        expectRefused(long, peak: peak)
        #expect(long.error?.message.contains("line 1 of stdin") == true, "\(long)")
        #expect(sb.get("/") == #"{"a":1}"#)
    }

    @Test func endlessDeviceFileIsStreamedAndRefused() {
        let sb = Sandbox()
        // /dev/zero has no size to check first and no end: it is streamed, and refused at once.
        let (r, peak) = PeakMemory.run(sb, "$MEASURE \"$RTDB\" set /a --file /dev/zero")
        expectStreamedAndRefused(r, peak: peak)
        #expect(sb.get("/") == "null")
    }

    @Test func oversizedRegularFileIsRefusedWithoutBeingRead() throws {
        let sb = Sandbox()
        let file = sb.dir + "/big.json"
        // A sparse file: 300 MB long, no disk space used.
        try #require(FileManager.default.createFile(atPath: file, contents: nil) && truncate(file, 300_000_000) == 0)
        for script in ["$MEASURE \"$RTDB\" push /a --file \"$0\""] {
            let (r, peak) = PeakMemory.run(sb, script.replacingOccurrences(of: "\"$0\"", with: "'\(file)'"))
            // Its size is checked before a byte is read.
            expectRefused(r, peak: peak, below: 64 * 1024 * 1024)
            #expect(r.elapsed < 5, "\(r.elapsed)s")
        }
        for script in ["$MEASURE \"$RTDB\" set /a --file \"$0\"", "$MEASURE \"$RTDB\" update /a --file \"$0\"",
                       "$MEASURE \"$RTDB\" set /a - < \"$0\"", "$MEASURE \"$RTDB\" push /a --lines < \"$0\""] {
            let (r, peak) = PeakMemory.run(sb, script.replacingOccurrences(of: "\"$0\"", with: "'\(file)'"))
            // Streamed: refused at the first byte, without reading the rest.
            expectStreamedAndRefused(r, peak: peak)
            #expect(r.elapsed < 5, "\(r.elapsed)s")
        }
        #expect(sb.get("/") == "null")
    }

    @Test func txCommandWithEndlessOutputIsStoppedAtTheLimit() throws {
        let sb = Sandbox()
        sb.seed("/a", "1")
        let pidFile = sb.dir + "/cat.pid"
        // Reported today as an abort (status 134) once memory ran out.
        let (r, peak) = PeakMemory.run(sb, "$MEASURE \"$RTDB\" tx /a -- sh -c 'echo $$ > \"$0\"; exec cat /dev/zero' '\(pidFile)'")
        expectRefused(r, peak: peak)
        #expect(sb.get("/a") == "1")
        let pid = try #require(Int32(String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(!TxSignalTests.running(pid), "the command is still running")
    }

    @Test func inputWithinTheLimitStillWorks() {
        let sb = Sandbox()
        // A 9 MB string through a pipe, then through a tx command's output.
        let (r, _) = PeakMemory.run(sb, "{ printf '\"'; head -c 9000000 /dev/zero | tr '\\0' x; printf '\"'; } | $MEASURE \"$RTDB\" set /big - -q")
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
        let size = sb.program(["sh", "-c", "\"$RTDB\" get /big | wc -c"])
        #expect(size.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "9000003")
        let t = sb.rtdb("tx", "/big", "--", "sh", "-c", "cat; echo >&2 done", timeout: 120)
        #expect(t.status == 0 && t.stdout.contains("\"committed\":true"), "\(t.status) \(t.stderr)")
    }
}
