import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The progress of a long command as one updating line on stderr: nothing for the first
/// second (most commands are done by then), then the line is redrawn in place at most five
/// times a second, and cleared when the stage ends, so the terminal is left as it was. Only
/// for a terminal: `TerminalProgress.forCommand` gives `Progress.none` when stderr is not one
/// or with `--quiet`, so scripts never see it.
///
/// While a stage runs, SIGINT and SIGTERM (Ctrl-C) do not end the process at once: the next
/// `update` throws `Interrupted`, the operation gives up there as it does on any error (a
/// transaction rolls back), `end` clears the line, and the command's error line says what was
/// left ("nothing was written", or how much was).
final class TerminalProgress: ProgressSink {
    /// Nothing is shown before a stage has run this long.
    static let delaySeconds = 1.0
    /// The least time between two redraws.
    static let redrawSeconds = 0.2

    private let now: () -> Double
    private let write: ([UInt8]) -> Void
    private var label = ""
    private var total: Int64? = nil
    private var unit: ProgressUnit = .bytes
    private var started = 0.0
    private var lastDrawn: Double? = nil
    private var shown = false
    private var counted: (items: Int64, name: String)? = nil
    /// The signal that asked the command to stop, if one did (`Interruption.pending`).
    private let interrupted: () -> Int32?
    /// Makes SIGINT and SIGTERM ask rather than end the process (`Interruption.install`).
    private let catchSignals: () -> Void

    init(now: @escaping () -> Double = TerminalProgress.monotonicSeconds,
         write: @escaping ([UInt8]) -> Void = { Diagnostics.writeAll(2, $0) },
         interrupted: @escaping () -> Int32? = Interruption.pending,
         catchSignals: @escaping () -> Void = Interruption.install) {
        self.now = now
        self.write = write
        self.interrupted = interrupted
        self.catchSignals = catchSignals
    }

    /// The sink a command uses: this line on a terminal, nothing otherwise or with `--quiet`.
    /// `writesAsItGoes`: the command prints to stdout while the stage runs (an export, sync's
    /// lines), so when stdout is that terminal too the line would tear its output: none then.
    static func forCommand(quiet: Bool, writesAsItGoes: Bool = false) -> ProgressSink {
        if quiet || !Diagnostics.stderrIsTerminal { return Progress.none }
        if writesAsItGoes && isatty(1) == 1 { return Progress.none }
        return TerminalProgress()
    }

    func begin(_ label: String, total: Int64?, unit: ProgressUnit) {
        end()
        self.label = label
        self.total = total
        self.unit = unit
        counted = nil
        started = now()
        lastDrawn = nil
        catchSignals()
    }

    func count(_ items: Int64, _ name: String) {
        counted = (items, name)
    }

    func update(done: Int64) throws {
        if let signal = interrupted() { throw Interrupted(signal: signal, message: "stopped by \(Interrupted.name(of: signal))") }
        let t = now()
        let elapsed = t - started
        guard elapsed >= TerminalProgress.delaySeconds else { return }
        if let last = lastDrawn, t - last < TerminalProgress.redrawSeconds { return }
        lastDrawn = t
        shown = true
        // Carriage return, the line, then erase what a longer earlier line left to the right.
        let text = Progress.line(label, done: done, total: total, unit: unit, seconds: elapsed, counted: counted)
        write(Array(("\r" + text + "\u{1B}[K").utf8))
    }

    func end() {
        if shown { write(Array("\r\u{1B}[K".utf8)) }
        shown = false
    }

    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
