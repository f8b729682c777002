import Foundation
import Testing
@testable import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every readiness back-end this system has (epoll here, kqueue on macOS and the BSDs, and
/// poll(2) everywhere) answers the same questions the same way through `Poller`.
@Suite struct ReadinessTests {
    static let backends: [IOBackend] = [.native, .posix]

    /// A connected pair of stream sockets (non-blocking).
    func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, streamSocketType, 0, &fds) == 0)
        setNonBlocking(fds[0])
        setNonBlocking(fds[1])
        return (fds[0], fds[1])
    }

    func send(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        _ = write(fd, &bytes, bytes.count)
    }

    @Test(arguments: backends)
    func aReadableDescriptorIsReportedWithItsToken(_ backend: IOBackend) throws {
        let poller = try Poller(backend: backend)
        let (a, b) = try socketPair()
        defer { _ = close(a); _ = close(b) }
        try poller.add(a, token: 42)
        #expect(try poller.wait(timeoutMillis: 0).isEmpty)
        send(b, "x")
        let ready = try poller.wait(timeoutMillis: 1_000)
        #expect(ready.count == 1)
        #expect(ready.first?.token == 42 && ready.first?.readable == true && ready.first?.writable == false)
        // Level-triggered: still ready until read.
        #expect(try poller.wait(timeoutMillis: 0).map(\.token) == [42])
        var buf = [UInt8](repeating: 0, count: 8)
        _ = read(a, &buf, buf.count)
        #expect(try poller.wait(timeoutMillis: 0).isEmpty)
    }

    @Test(arguments: backends)
    func modifyTurnsWritingOnAndOffAndMergesWithReading(_ backend: IOBackend) throws {
        let poller = try Poller(backend: backend)
        let (a, b) = try socketPair()
        defer { _ = close(a); _ = close(b) }
        try poller.add(a, token: 7, read: true, write: false)
        try poller.modify(a, token: 8, read: true, write: true)
        send(b, "x")
        let ready = try poller.wait(timeoutMillis: 1_000)
        // One entry for the descriptor, both directions in it, under the new token.
        #expect(ready.count == 1)
        #expect(ready.first?.token == 8 && ready.first?.readable == true && ready.first?.writable == true)
        try poller.modify(a, token: 8, read: false, write: false)
        #expect(try poller.wait(timeoutMillis: 0).isEmpty)
    }

    @Test(arguments: backends)
    func aRemovedDescriptorIsNoLongerReported(_ backend: IOBackend) throws {
        let poller = try Poller(backend: backend)
        let (a, b) = try socketPair()
        let (c, d) = try socketPair()
        defer { for fd in [a, b, c, d] { _ = close(fd) } }
        try poller.add(a, token: 1)
        try poller.add(c, token: 2)
        send(b, "x")
        send(d, "y")
        poller.remove(a)
        #expect(try poller.wait(timeoutMillis: 1_000).map(\.token) == [2])
    }

    @Test(arguments: backends)
    func aPeerThatHangsUpIsReportedClosedAndReadable(_ backend: IOBackend) throws {
        let poller = try Poller(backend: backend)
        let (a, b) = try socketPair()
        defer { _ = close(a) }
        try poller.add(a, token: 5)
        _ = close(b)
        let ready = try poller.wait(timeoutMillis: 1_000)
        #expect(ready.count == 1)
        #expect(ready.first?.token == 5 && ready.first?.readable == true && ready.first?.closed == true)
    }

    @Test(arguments: backends)
    func aWaitWithNothingReadyLastsItsTimeout(_ backend: IOBackend) throws {
        let poller = try Poller(backend: backend)
        let (a, b) = try socketPair()
        defer { _ = close(a); _ = close(b) }
        try poller.add(a, token: 1)
        let start = monotonicMillis()
        #expect(try poller.wait(timeoutMillis: 60).isEmpty)
        let took = monotonicMillis() - start
        #expect(took >= 55 && took < 1_000, "\(took) ms")
    }

    @Test(arguments: backends)
    func modifyingAnUnknownDescriptorFails(_ backend: IOBackend) throws {
        let poller = try Poller(backend: backend)
        let (a, b) = try socketPair()
        defer { _ = close(a); _ = close(b) }
        #if os(Linux)
        #expect(throws: NetError.self) { try poller.modify(a, token: 1, read: true, write: false) }
        #else
        // kqueue adds on modify; poll(2) refuses.
        if backend == .posix {
            #expect(throws: NetError.self) { try poller.modify(a, token: 1, read: true, write: false) }
        }
        #endif
    }

    /// poll(2) keeps no registration in the kernel: a descriptor closed while registered is
    /// reported once (POLLNVAL, as closed) and forgotten, as epoll and kqueue forget it; a new
    /// descriptor with the same number can then be added under a new token.
    @Test func pollForgetsADescriptorClosedWhileRegistered() throws {
        let poller = try Poller(backend: .posix)
        let (a, b) = try socketPair()
        try poller.add(a, token: 1)
        _ = close(a)
        let first = try poller.wait(timeoutMillis: 1_000)
        #expect(first.count == 1 && first.first?.token == 1 && first.first?.closed == true)
        #expect(try poller.wait(timeoutMillis: 0).isEmpty)
        let (c, d) = try socketPair()
        defer { _ = close(b); _ = close(c); _ = close(d) }
        try poller.add(c, token: 2)
        send(d, "z")
        #expect(try poller.wait(timeoutMillis: 1_000).map(\.token) == [2])
    }

    @Test func theChoiceComesFromRTDB_IO_BACKEND() {
        #expect(IOBackend(environmentValue: "posix") == .posix)
        #expect(IOBackend(environmentValue: "native") == .native)
        #expect(IOBackend(environmentValue: nil) == .native)
        #expect(IOBackend(environmentValue: "") == .native)
        #expect(IOBackend(environmentValue: "POSIX") == .native)
        #expect(IOBackend.posix.readinessName == "poll")
        #if os(Linux)
        #expect(IOBackend.native.readinessName == "epoll")
        #elseif canImport(Darwin) || os(FreeBSD)
        #expect(IOBackend.native.readinessName == "kqueue")
        #endif
    }
}
