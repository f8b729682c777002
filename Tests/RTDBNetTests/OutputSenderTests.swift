import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import RTDBNet

@Suite("Answers written by the sender's thread: in order, descriptor kept, leftovers from the loop")
struct OutputSenderTests {
    /// A connected pair of local sockets: the connection's end (non-blocking) and the peer's.
    func pair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, streamSocketType, 0, &fds) == 0)
        setNonBlocking(fds[0])
        setCloseOnExec(fds[1])
        return (fds[0], fds[1])
    }

    /// A loop, a sender, and a connection on it with its peer's end.
    struct Fixture {
        let loop: EventLoop
        let sender: OutputSender
        let c: SocketConnection
        let peer: Int32
    }

    func fixture(sendBuffer: Int32? = nil) throws -> Fixture {
        let loop = try EventLoop()
        let (mine, peer) = try pair()
        if var size = sendBuffer {
            _ = setsockopt(mine, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let sender = try OutputSender(loop: loop)
        return Fixture(loop: loop, sender: sender, c: try SocketConnection(io: .plain(mine), loop: loop, sender: sender), peer: peer)
    }

    /// What the peer can read within 50 ms of quiet, and whether it saw the end of the stream.
    func receive(_ fd: Int32) -> (bytes: [UInt8], ended: Bool) {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65_536)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 50) <= 0 { return (out, false) }
            let n = read(fd, &buf, buf.count)
            if n <= 0 { return (out, n == 0) }
            out += buf[0..<n]
        }
    }

    @Test func gatheredBytesGoOutByTheThreadAndLaterOutputWaitsBehindThem() throws {
        let f = try fixture()
        defer { close(f.peer) }
        let (sender, c, peer) = (f.sender, f.c, f.peer)
        sender.gather {
            c.send(Array("one".utf8))
            // Gathered, not written: nothing reaches the peer before the batch is submitted.
            #expect(c.pendingOutput == 3)
            #expect(receive(peer).bytes.isEmpty)
        }
        #expect(sender.isBusy)
        // Sent while the first bytes are with the thread: queued behind them, not written.
        c.send(Array("two".utf8))
        #expect(c.pendingOutput == 6)
        sender.finish()
        #expect(!sender.isBusy && c.pendingOutput == 0 && !c.closed)
        #expect(receive(peer).bytes == Array("onetwo".utf8))
        c.close()
    }

    @Test func aConnectionClosedWhileTheThreadHoldsItsBytesKeepsItsDescriptorUntilTheyComeBack() throws {
        let f = try fixture()
        defer { close(f.peer) }
        let (loop, sender, c, peer) = (f.loop, f.sender, f.c, f.peer)
        var closes = 0
        c.onClose = { closes += 1 }
        sender.gather { c.send(Array("answer".utf8)) }
        c.close()
        #expect(c.closed && closes == 1 && loop.watchedCount == 0)
        // The descriptor is still open (the peer sees no end), whatever the thread has written.
        let before = receive(peer)
        #expect(!before.ended)
        sender.finish()
        let after = receive(peer)
        #expect(after.ended)
        #expect(before.bytes + after.bytes == Array("answer".utf8))
        #expect(closes == 1)
    }

    @Test func anAnswerThatClosesItsConnectionClosesItOnceTheBytesAreBack() throws {
        let f = try fixture()
        defer { close(f.peer) }
        let (sender, c, peer) = (f.sender, f.c, f.peer)
        sender.gather { c.send(Array("bye".utf8), andClose: true) }
        #expect(!c.closed)
        sender.finish()
        #expect(c.closed)
        let got = receive(peer)
        #expect(got.bytes == Array("bye".utf8) && got.ended)
    }

    @Test func whatTheSocketDidNotTakeGoesOutFromTheLoop() throws {
        let f = try fixture(sendBuffer: 4_096)
        defer { close(f.peer) }
        let (loop, sender, c, peer) = (f.loop, f.sender, f.c, f.peer)
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        sender.gather { c.send(big) }
        sender.finish()
        // The socket took part of it; the rest waits on the connection for writability.
        #expect(c.pendingOutput > 0 && c.pendingOutput < big.count && !c.closed)
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65_536)
        setNonBlocking(peer)
        var rounds = 0
        while got.count < big.count && rounds < 10_000 {
            rounds += 1
            let n = read(peer, &buf, buf.count)
            if n > 0 { got += buf[0..<n] }
            try loop.turn(maxWaitMillis: 10)
        }
        #expect(got == big)
        #expect(c.pendingOutput == 0)
        c.close()
    }

    @Test func aSocketThatFailedUnderTheThreadClosesTheConnection() throws {
        let f = try fixture()
        let (sender, c, peer) = (f.sender, f.c, f.peer)
        var closes = 0
        c.onClose = { closes += 1 }
        close(peer)
        sender.gather { c.send(Array("lost".utf8)) }
        sender.finish()
        #expect(c.closed && closes == 1)
    }

    @Test func heldOutputIsWrittenByTheLoopNotHandedOff() throws {
        let f = try fixture()
        defer { close(f.peer) }
        let (sender, c, peer) = (f.sender, f.c, f.peer)
        sender.gather {
            c.hold()
            c.send(Array("a".utf8))
            c.send(Array("b".utf8))
            c.release()
            #expect(c.pendingOutput == 0)
        }
        #expect(!sender.isBusy)
        #expect(receive(peer).bytes == Array("ab".utf8))
        c.close()
    }
}

extension OutputSenderTests {
    @Test func aLongGatheringIsHandedToTheThreadSliceBySlice() throws {
        let loop = try EventLoop()
        let sender = try OutputSender(loop: loop, slice: 2)
        var pairs: [(SocketConnection, Int32)] = []
        for _ in 0..<3 {
            let (mine, peer) = try pair()
            pairs.append((try SocketConnection(io: .plain(mine), loop: loop, sender: sender), peer))
        }
        defer { for (c, peer) in pairs { c.close(); close(peer) } }
        sender.gather {
            for (c, _) in pairs { c.send(Array("event".utf8)) }
            // The first slice (two sends) is with the thread already: its peers get their
            // bytes while the gathering goes on; the third waits for the end.
            for (_, peer) in pairs.prefix(2) {
                var p = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
                #expect(poll(&p, 1, 5_000) == 1)
            }
            #expect(receive(pairs[2].1).bytes.isEmpty)
        }
        sender.finish()
        for (c, peer) in pairs {
            #expect(receive(peer).bytes == Array("event".utf8))
            #expect(c.pendingOutput == 0)
        }
    }
}
