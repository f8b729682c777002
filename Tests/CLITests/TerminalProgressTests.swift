import Testing
import RTDBCore
@testable import RTDBCLI

@Suite struct TerminalProgressTests {
    final class Clock { var t = 100.0 }

    @Test("nothing for the first second, then a line redrawn in place at most five times a second, cleared at the end")
    func drawsAfterADelayAndClears() {
        let clock = Clock()
        var written: [String] = []
        let p = TerminalProgress(now: { clock.t }, write: { written.append(String(decoding: $0, as: UTF8.self)) })
        p.begin("import", total: 1000, unit: .bytes)
        clock.t += 0.5
        p.update(done: 100)
        #expect(written.isEmpty)
        clock.t += 0.5
        p.update(done: 500)
        #expect(written == ["\rimport: 500 B / 1.0 kB (50%), 500 B/s, 1 s left\u{1B}[K"])
        clock.t += 0.1
        p.update(done: 600)
        #expect(written.count == 1)
        clock.t += 0.15
        p.update(done: 700)
        #expect(written.count == 2)
        p.end()
        #expect(written.last == "\r\u{1B}[K")
        p.end()
        #expect(written.count == 3)
    }

    @Test("a stage that ends within the first second leaves no trace")
    func quickStageShowsNothing() {
        let clock = Clock()
        var written: [[UInt8]] = []
        let p = TerminalProgress(now: { clock.t }, write: { written.append($0) })
        p.begin("export", total: nil, unit: .bytes)
        clock.t += 0.9
        p.update(done: 1 << 20)
        p.end()
        #expect(written.isEmpty)
    }
}
