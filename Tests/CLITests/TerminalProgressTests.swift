import Testing
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import RTDBCLI

@Suite struct TerminalProgressTests {
    final class Clock { var t = 100.0 }

    @Test("nothing for the first second, then a line redrawn in place at most five times a second, cleared at the end")
    func drawsAfterADelayAndClears() throws {
        let clock = Clock()
        var written: [String] = []
        let p = TerminalProgress(now: { clock.t }, write: { written.append(String(decoding: $0, as: UTF8.self)) },
                                 interrupted: { nil }, catchSignals: {})
        p.begin("import", total: 1000, unit: .bytes)
        clock.t += 0.5
        try p.update(done: 100)
        #expect(written.isEmpty)
        clock.t += 0.5
        try p.update(done: 500)
        #expect(written == ["\rimport: 500 B / 1.0 kB (50%), 500 B/s, 1 s left\u{1B}[K"])
        clock.t += 0.1
        try p.update(done: 600)
        #expect(written.count == 1)
        clock.t += 0.15
        try p.update(done: 700)
        #expect(written.count == 2)
        p.end()
        #expect(written.last == "\r\u{1B}[K")
        p.end()
        #expect(written.count == 3)
    }

    @Test("a stage that ends within the first second leaves no trace")
    func quickStageShowsNothing() throws {
        let clock = Clock()
        var written: [[UInt8]] = []
        let p = TerminalProgress(now: { clock.t }, write: { written.append($0) }, interrupted: { nil }, catchSignals: {})
        p.begin("export", total: nil, unit: .bytes)
        clock.t += 0.9
        try p.update(done: 1 << 20)
        p.end()
        #expect(written.isEmpty)
    }

    @Test("a signal during a stage stops the work at its next update; the line is then cleared")
    func aSignalStopsTheWorkAtItsNextUpdate() throws {
        let clock = Clock()
        var written: [String] = []
        var signal: Int32? = nil
        var caught = 0
        let p = TerminalProgress(now: { clock.t }, write: { written.append(String(decoding: $0, as: UTF8.self)) },
                                 interrupted: { signal }, catchSignals: { caught += 1 })
        p.begin("import", total: nil, unit: .bytes)
        #expect(caught == 1, "signals ask rather than end the process while a stage runs")
        clock.t += 1.5
        try p.update(done: 100)
        #expect(written.count == 1)
        signal = SIGINT
        var stopped: Interrupted? = nil
        do { try p.update(done: 200) } catch let e as Interrupted { stopped = e }
        #expect(stopped?.signal == SIGINT)
        #expect(stopped?.saying("nothing was written").message == "stopped by SIGINT; nothing was written")
        p.end()
        #expect(written.last == "\r\u{1B}[K", "the line is cleared before the error line")
    }

    @Test("things counted besides the units are shown from the next redraw on")
    func countedThingsAreShown() throws {
        let clock = Clock()
        var written: [String] = []
        let p = TerminalProgress(now: { clock.t }, write: { written.append(String(decoding: $0, as: UTF8.self)) },
                                 interrupted: { nil }, catchSignals: {})
        p.begin("read", total: nil, unit: .bytes)
        clock.t += 2
        p.count(42, "children")
        try p.update(done: 2000)
        #expect(written == ["\rread: 2.0 kB, 42 children, 1.0 kB/s\u{1B}[K"])
    }
}
