import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import RTDBNet

/// A clock the test moves by hand.
private final class FakeClock: @unchecked Sendable {
    var now: Int64 = 1_000
}

@Suite("Timers: deadline order, ties in scheduling order")
struct TimerQueueTests {
    @Test func firesInDeadlineOrderAndTiesInOrderScheduled() {
        var q = TimerQueue<String>()
        q.schedule(at: 30, "c")
        q.schedule(at: 10, "a1")
        q.schedule(at: 20, "b")
        q.schedule(at: 10, "a2")
        #expect(q.nextDeadline == 10)
        let early = q.popDue(now: 9), first = q.popDue(now: 20), last = q.popDue(now: 100)
        #expect(early == [] && first == ["a1", "a2", "b"] && last == ["c"])
        #expect(q.isEmpty && q.nextDeadline == nil)
    }

    @Test func cancelledTimersDoNotFire() {
        var q = TimerQueue<Int>()
        let one = q.schedule(at: 5, 1)
        q.schedule(at: 5, 2)
        let first = q.cancel(one), second = q.cancel(one)
        #expect(first && !second)
        let due = q.popDue(now: 5)
        #expect(due == [2])
    }

    @Test func waitsNoLongerThanTheNextDeadline() {
        var q = TimerQueue<Int>()
        #expect(q.waitMillis(now: 0, limit: 1_000) == 1_000)
        q.schedule(at: 250, 1)
        #expect(q.waitMillis(now: 0, limit: 1_000) == 250)
        #expect(q.waitMillis(now: 300, limit: 1_000) == 0)
    }
}

@Suite("The event loop: descriptors and timers")
struct EventLoopTests {
    @Test func timersFireInOrderOnTheLoopsClock() throws {
        let clock = FakeClock()
        let loop = try EventLoop(clock: { clock.now })
        var fired: [String] = []
        loop.schedule(after: 300) { fired.append("300") }
        loop.schedule(after: 100) { fired.append("100") }
        let cancelled = loop.schedule(after: 200) { fired.append("200") }
        loop.schedule(after: 100) { fired.append("100 again") }
        loop.cancel(cancelled)
        try loop.turn(maxWaitMillis: 0)
        #expect(fired.isEmpty)
        clock.now += 250
        try loop.turn(maxWaitMillis: 0)
        #expect(fired == ["100", "100 again"])
        // Scheduled later with an earlier deadline, it fires first.
        loop.schedule(after: 0) { fired.append("now") }
        clock.now += 100
        try loop.turn(maxWaitMillis: 0)
        #expect(fired == ["100", "100 again", "now", "300"])
    }

    @Test func readyDescriptorsRunTheirHandlersThenTheTurnEnds() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        fds.forEach(setCloseOnExec)
        defer { close(fds[0]); close(fds[1]) }
        var reads = 0
        var turns = 0
        let token = try loop.watch(fds[0]) { ready in
            #expect(ready.readable)
            var b: UInt8 = 0
            _ = read(fds[0], &b, 1)
            reads += 1
        }
        var one: UInt8 = 1
        _ = write(fds[1], &one, 1)
        try loop.run(maxWaitMillis: 50) {
            turns += 1
            if reads == 1 { loop.stop() }
        }
        #expect(reads == 1 && turns >= 1)
        // Unwatched, it is not called again.
        loop.unwatch(fds[0], token: token)
        _ = write(fds[1], &one, 1)
        try loop.turn(maxWaitMillis: 10)
        #expect(reads == 1 && loop.watchedCount == 0)
    }
}

@Suite("A connection owns its socket, its unsent bytes and its closing")
struct ConnectionTests {
    /// A connected pair of local sockets: the connection's end and the peer's.
    func pair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = socketpair(AF_UNIX, streamSocketType, 0, &fds)
        setNonBlocking(fds[0])
        setCloseOnExec(fds[1])
        return (fds[0], fds[1])
    }

    func drain(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65_536)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 50) <= 0 { return out }
            let n = read(fd, &buf, buf.count)
            if n <= 0 { return out }
            out += buf[0..<n]
        }
    }

    @Test func bytesInAndOutAndOneCloseNotice() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16)
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.onReadable = { c.readAvailable(into: &buffer) { received += $0 } }
        var closes = 0
        c.onClose = { closes += 1 }
        _ = Array("hello".utf8).withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
        try loop.turn(maxWaitMillis: 100)
        #expect(received == Array("hello".utf8))
        c.send(Array("answer".utf8))
        #expect(drain(peer) == Array("answer".utf8))
        // Closing after the last bytes: they arrive, then the end of the stream.
        c.send(Array("bye".utf8), andClose: true)
        #expect(c.closed && closes == 1)
        #expect(drain(peer) == Array("bye".utf8))
        c.close()
        #expect(closes == 1)
        #expect(loop.watchedCount == 0)
    }

    @Test func aPeerThatDoesNotReadIsDroppedPastTheOutputLimit() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.outputLimit = 1 << 20
        let chunk = [UInt8](repeating: 0x61, count: 64 << 10)
        var sent = 0
        while !c.closed && sent < 64 << 20 {
            c.send(chunk)
            sent += chunk.count
        }
        #expect(c.closed)
        #expect(sent < 64 << 20)
    }

    /// The limit is on what waits when more is sent: one event larger than it (a stream on the
    /// path of a huge write) goes out whole; the next one finds it still waiting and drops
    /// the peer.
    @Test func oneSendLargerThanTheLimitGoesOutWhole() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.outputLimit = 1 << 20
        c.send([UInt8](repeating: 0x62, count: 8 << 20))
        #expect(!c.closed)
        #expect(c.pendingOutput > 1 << 20)
        c.send(Array("next".utf8))
        #expect(c.closed)
    }

    @Test func thePeerHangingUpClosesTheConnection() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        var buffer = [UInt8](repeating: 0, count: 16)
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.onReadable = { c.readAvailable(into: &buffer) { _ in } }
        var closed = false
        c.onClose = { closed = true }
        close(peer)
        try loop.turn(maxWaitMillis: 100)
        #expect(closed && c.closed)
    }
}
