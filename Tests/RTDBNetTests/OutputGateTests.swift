import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import RTDBNet

@Suite("Output that shows a commit waits until the commit is durable, in order")
struct OutputGateTests {
    func pair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = socketpair(AF_UNIX, streamSocketType, 0, &fds)
        setNonBlocking(fds[0])
        setNonBlocking(fds[1])
        return (fds[0], fds[1])
    }

    /// What the peer can read now (nothing waits for more).
    func received(_ fd: Int32) -> String {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4_096)
        while true {
            let n = read(fd, &buf, buf.count)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func outputSentWhileACommitIsNotDurableGoesOutWhenItIs() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        let gate = OutputGate()
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.gate = gate
        c.send(Array("before ".utf8))
        #expect(received(peer) == "before ")
        gate.current = 1
        c.send(Array("shows-1 ".utf8))
        gate.current = 2
        c.send(Array("shows-2 ".utf8))
        #expect(received(peer) == "")
        #expect(c.pendingOutput == 16)
        gate.advance(to: 1)
        #expect(received(peer) == "shows-1 ")
        gate.advance(to: 2)
        #expect(received(peer) == "shows-2 ")
        #expect(c.pendingOutput == 0)
        // Nothing pending: output goes out at once again.
        c.send(Array("after".utf8))
        #expect(received(peer) == "after")
    }

    @Test func laterOutputWaitsBehindHeldOutputEvenWhenItsOwnCommitIsDurable() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        let gate = OutputGate()
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.gate = gate
        gate.current = 2
        c.send(Array("event-2 ".utf8))
        // An answer of commit 1 (durable once 1 is) is sent after it: it must not overtake.
        gate.sending(as: 1) { c.send(Array("answer-1".utf8)) }
        #expect(gate.current == 2)
        gate.advance(to: 1)
        #expect(received(peer) == "")
        gate.advance(to: 2)
        #expect(received(peer) == "event-2 answer-1")
    }

    @Test func aClosingConnectionClosesOnlyOnceItsHeldOutputIsSent() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        let gate = OutputGate()
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.gate = gate
        gate.current = 1
        c.send(Array("last".utf8), andClose: true)
        #expect(!c.closed)
        gate.advance(to: 1)
        #expect(c.closed)
        #expect(received(peer) == "last")
    }

    @Test func heldOutputCountsTowardTheOutputLimit() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        let gate = OutputGate()
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.gate = gate
        c.outputLimit = 1_000
        gate.current = 1
        c.send([UInt8](repeating: 0x61, count: 600))
        #expect(!c.closed)
        c.send([UInt8](repeating: 0x61, count: 600))
        #expect(c.closed)
    }

    @Test func heldOutputGathersWithHoldAndGoesOutAtRelease() throws {
        let loop = try EventLoop()
        let (mine, peer) = pair()
        defer { close(peer) }
        let gate = OutputGate()
        let c = try SocketConnection(io: .plain(mine), loop: loop)
        c.gate = gate
        c.hold()
        gate.current = 1
        c.send(Array("a".utf8))
        gate.advance(to: 1)
        // Still gathering: nothing goes out before `release()`.
        #expect(received(peer) == "")
        c.send(Array("b".utf8))
        c.release()
        #expect(received(peer) == "ab")
    }
}
