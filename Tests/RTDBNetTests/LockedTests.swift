import Foundation
import Testing
@testable import RTDBNet

/// The project's lock. Under the thread sanitizer (`make test` runs this suite with it) these
/// contend on purpose: the standard library's `Mutex` made the sanitizer report a race on
/// exactly this pattern, because its contended hand-over happens in the kernel.
@Suite struct LockedTests {
    @Test func contendedIncrementsAreAllCounted() {
        let counter = Locked<[Int]>([])
        let threads = 4
        let each = 20_000
        let done = DispatchGroup()
        for t in 0..<threads {
            done.enter()
            Thread {
                for i in 0..<each {
                    counter.withLock { list in
                        list.append(t * each + i)
                        if list.count > 64 { list.removeFirst(32) }
                    }
                }
                done.leave()
            }.start()
        }
        done.wait()
        // Every append happened: the total of what is left plus what was removed.
        let left = counter.withLock { $0.count }
        #expect(left > 0 && left <= 64)
        #expect((threads * each - left) % 32 == 0)
    }

    @Test func aWaiterSleepsUntilTheStateIsReady() {
        let box = Locked<(ready: Bool, seen: Int)>((false, 0))
        let finished = DispatchSemaphore(value: 0)
        Thread {
            let value = box.withLock(when: { $0.ready }) { s -> Int in
                s.seen += 1
                return s.seen
            }
            #expect(value == 1)
            finished.signal()
        }.start()
        // The waiter cannot pass before `ready`.
        usleep(50_000)
        #expect(box.withLock { $0.seen } == 0)
        box.withLock { $0.ready = true }
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(box.withLock { $0.seen } == 1)
    }
}
