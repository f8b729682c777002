import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import RTDBNet

/// Other threads reach a loop through its handle only: tasks run on the loop, in order; the
/// loop knows which thread owns it. A connection closed inside its own readiness call runs
/// nothing after.
@Suite("Work handed to a loop, and who owns it")
struct LoopOwnershipTests {
    @Test func tasksFromOtherThreadsRunOnTheLoopInTheOrderTheyCame() throws {
        let loop = try EventLoop()
        let handle = loop.handle
        let ran = Locked<[Int]>([])
        let onLoop = Locked<[Bool]>([])
        let posted = DispatchSemaphore(value: 0)
        let poster = Thread {
            for i in 0..<100 {
                handle.execute {
                    ran.withLock { $0.append(i) }
                    onLoop.withLock { $0.append(handle.inLoop) }
                }
            }
            posted.signal()
        }
        poster.start()
        #expect(posted.wait(timeout: .now() + 10) == .success)
        // Nothing runs until the loop turns, and then all of it, on the loop's thread.
        #expect(ran.withLock { $0.isEmpty })
        var turns = 0
        while ran.withLock({ $0.count }) < 100 && turns < 100 {
            try loop.turn(maxWaitMillis: 100)
            turns += 1
        }
        #expect(ran.withLock { $0 } == Array(0..<100))
        #expect(onLoop.withLock { $0.allSatisfy { $0 } })
        // The wake-ups coalesced: a few turns, not one per task.
        #expect(turns <= 3)
    }

    @Test func aTaskPostedFromTheLoopRunsOnItsNextTurnNotAtOnce() throws {
        let loop = try EventLoop()
        let me = LoopBound(Box(), on: loop.handle)
        loop.handle.execute { me.value.flag = true }
        #expect(!me.value.flag)
        try loop.turn(maxWaitMillis: 100)
        #expect(me.value.flag)
    }

    @Test func theLoopBelongsToTheThreadThatRunsIt() throws {
        let loop = try EventLoop()
        #expect(loop.handle.inLoop)
        let handle = loop.handle
        let elsewhere = Locked<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            elsewhere.withLock { $0 = handle.inLoop }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(elsewhere.withLock { $0 } == false)
        // Handed over: now the other thread owns it and this one does not.
        let moved = Locked<Bool?>(nil)
        Thread {
            // (The loop object itself is not touched there: only its handle.)
            handle.claim()
            moved.withLock { $0 = handle.inLoop }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(moved.withLock { $0 } == true)
        #expect(!loop.handle.inLoop)
        loop.moveToCurrentThread()
        #expect(loop.handle.inLoop)
    }

    @Test func aWaitingThreadSleepsUntilWokenAndWakesCoalesce() throws {
        let w = try Wakeup()
        #expect(!w.wait(timeoutMillis: 10))
        for _ in 0..<1_000 { w.wake() }
        #expect(w.wait(timeoutMillis: 10))
        // Drained: a thousand wakes were one.
        #expect(!w.wait(timeoutMillis: 10))
    }

    final class Box { var flag = false }
}

@Suite("A connection closed during its own readiness call")
struct ClosedInReadinessTests {
    @Test func aWriteThatFailsInReadinessEndsTheCallAndClearsTheCallbacks() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, streamSocketType, 0, &fds) == 0)
        setNonBlocking(fds[0])
        // A process another test starts meanwhile must not keep the peer open past its close.
        setCloseOnExec(fds[1])
        let c = try SocketConnection(io: .plain(fds[0]), loop: loop)
        // More than the socket takes: the rest is queued and the connection waits for writable.
        c.send([UInt8](repeating: 0x61, count: 4 << 20))
        #expect(c.pendingOutput > 0 && !c.closed)
        var readable = 0
        var closes = 0
        c.onReadable = { readable += 1 }
        c.onClose = { closes += 1 }
        // The peer goes: the next write fails, which closes the connection.
        close(fds[1])
        c.ready(Poller.Ready(token: c.token, readable: true, writable: true, closed: true))
        #expect(c.closed && closes == 1)
        // The owner let go of what the input callback reaches when it was told of the close:
        // nothing may run after that.
        #expect(readable == 0)
        #expect(c.onReadable == nil && c.onClose == nil)
    }

    @Test func aReadinessChangeTheLoopRefusesClosesTheConnectionAndSaysWhy() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, streamSocketType, 0, &fds) == 0)
        defer { close(fds[1]) }
        setNonBlocking(fds[0])
        setCloseOnExec(fds[1])
        let c = try SocketConnection(io: .plain(fds[0]), loop: loop)
        var closes = 0
        c.onClose = { closes += 1 }
        // The descriptor is replaced behind the loop's back (it stays open, so closing the
        // connection closes nothing else): changing what it is watched for fails.
        let null = open("/dev/null", O_RDONLY)
        try #require(null >= 0)
        #expect(dup2(null, fds[0]) == fds[0])
        close(null)
        c.pauseReading(true)
        #expect(c.closed && closes == 1)
        #expect(c.readinessFailure != nil)
    }
}
