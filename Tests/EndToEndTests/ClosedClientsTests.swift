import Foundation
import Testing
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Clients that vanish while `rtdb serve` still owes them bytes. A stream or realtime listen
/// that does not read piles up events in the server; when its socket then closes, the server's
/// write fails and closes the connection in the same readiness that reports its input. That
/// must end the connection, never the server: each round opens many such clients, sends a
/// burst of large writes, closes them all (half with a reset) while events are still queued,
/// and checks the server still answers; at the end SIGTERM must give 143. A few clients owed
/// megabytes make the server queue and wait for their sockets (the case that crashed it); a
/// thousand at a time show the same holds at scale.
@Suite(.serialized) struct ClosedClientsTests {
    enum Kind { case sse, realtime }

    /// A blocking socket to the server with a small receive window, so that the server's side
    /// fills up at once.
    func smallWindowSocket(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var size: Int32 = 4_096
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(rc == 0, "connect: \(String(cString: strerror(errno)))")
        return fd
    }

    func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
            try #require(n > 0, "send: \(String(cString: strerror(errno)))")
            off += n
        }
    }

    /// Reads until `marker` arrives (or five seconds pass); whether it did.
    func readUntil(_ fd: Int32, _ marker: String) -> Bool {
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4_096)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 100) <= 0 { continue }
            let n = read(fd, &buf, buf.count)
            if n <= 0 { return false }
            got += buf[0..<n]
            if String(decoding: got, as: UTF8.self).contains(marker) { return true }
        }
        return false
    }

    /// A client following `/fan` that never reads what it is sent.
    func follower(_ kind: Kind, port: Int) throws -> Int32 {
        let fd = try smallWindowSocket(port: port)
        switch kind {
        case .sse:
            try sendAll(fd, Array("GET /fan.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8))
        case .realtime:
            try sendAll(fd, Array(("GET /.ws?v=5 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                   + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
            try #require(readUntil(fd, "\r\n\r\n"), "no answer to the upgrade")
            let listen = #"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/fan","h":""}}}"#
            try sendAll(fd, WebSocket.frame(.text, Array(listen.utf8), mask: (1, 2, 3, 4)))
        }
        return fd
    }

    /// Closes `fd` at once; with `reset`, with an RST instead of a FIN.
    func drop(_ fd: Int32, reset: Bool) {
        if reset {
            var l = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        }
        close(fd)
    }

    /// `count` PUTs of distinct values of `size` bytes to /fan/k, pipelined on one connection,
    /// their answers read by a thread of their own; returns that thread's end.
    func burst(port: Int, count: Int, size: Int, round: Int) throws -> DispatchSemaphore {
        let fd = try smallWindowSocket(port: port)
        var all: [UInt8] = []
        for i in 0..<count {
            let body = "\"\(round)-\(i)-" + String(repeating: "x", count: size) + "\""
            all += Array("PUT /fan/k.json HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        }
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            var buf = [UInt8](repeating: 0, count: 65_536)
            var seen = 0
            var tail: [UInt8] = []
            let deadline = Date().addingTimeInterval(60)
            while seen < count && Date() < deadline {
                let n = read(fd, &buf, buf.count)
                if n <= 0 { break }
                tail += buf[0..<n]
                let text = String(decoding: tail, as: UTF8.self)
                seen += text.components(separatedBy: "HTTP/1.1 ").count - 1
                tail = Array(tail.suffix(8))
            }
            close(fd)
            done.signal()
        }
        reader.start()
        try sendAll(fd, all)
        return done
    }

    func run(_ kind: Kind, clients: Int, writes: Int, size: Int, rounds: Int) throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let port = Int(server.url.split(separator: ":").last ?? "") ?? 0
        for round in 0..<rounds {
            var fds: [Int32] = []
            for _ in 0..<clients { fds.append(try follower(kind, port: port)) }
            // Let every stream or listen start before the writes come.
            usleep(300_000)
            let answered = try burst(port: port, count: writes, size: size, round: round)
            // Every write answered: its events were handed to the followers before, and what
            // their sockets did not take waits in the server.
            #expect(answered.wait(timeout: .now() + 60) == .success)
            for (i, fd) in fds.enumerated() { drop(fd, reset: i % 2 == 0) }
            usleep(200_000)
            #expect(server.child.isRunning, "serve ended in round \(round)")
            let r = curl(s, [server.url + "/fan/k.json"])
            #expect(r.code == "200", "round \(round): \(r)")
        }
        kill(server.child.pid, SIGTERM)
        #expect(server.child.wait(timeout: 20) == 143)
    }

    // A few clients each owed more than the kernel buffers for them (6 MB: the server queues
    // the rest and waits for the socket to drain), and a thousand owed less.
    @Test func streamsClosedWhileOwedMegabytesEndAlone() throws {
        try run(.sse, clients: 8, writes: 300, size: 20_000, rounds: 2)
    }

    @Test func listensClosedWhileOwedMegabytesEndAlone() throws {
        try run(.realtime, clients: 8, writes: 300, size: 20_000, rounds: 2)
    }

    @Test func aThousandStreamsClosedDuringABurstEndAlone() throws {
        try run(.sse, clients: 1_000, writes: 40, size: 10_000, rounds: 2)
    }

    @Test func aThousandListensClosedDuringABurstEndAlone() throws {
        try run(.realtime, clients: 1_000, writes: 40, size: 10_000, rounds: 2)
    }

    /// SIGTERM while every kind of client is attached: an idle keep-alive connection, half a
    /// request head, half a body, a stream and a listen owed bytes they do not read, a
    /// WebSocket upgrade cut short, and a huge write that runs away from the loop. Each time
    /// the server answers what arrived, closes everyone and exits 143.
    @Test func sigtermWithEveryKindOfClientAttachedExits143() throws {
        for attempt in 0..<5 {
            let s = Sandbox()
            let server = try #require(ServeProcess(s))
            let port = Int(server.url.split(separator: ":").last ?? "") ?? 0
            var fds: [Int32] = []
            let idle = try smallWindowSocket(port: port)
            try sendAll(idle, Array("GET /.json HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(readUntil(idle, "\r\n\r\n"))
            fds.append(idle)
            let halfHead = try smallWindowSocket(port: port)
            try sendAll(halfHead, Array("PUT /h.json HTTP/1.1\r\nHost: x\r\nContent-Le".utf8))
            fds.append(halfHead)
            let halfBody = try smallWindowSocket(port: port)
            try sendAll(halfBody, Array("PUT /h.json HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":".utf8))
            fds.append(halfBody)
            fds.append(try follower(.sse, port: port))
            fds.append(try follower(.realtime, port: port))
            let halfUpgrade = try smallWindowSocket(port: port)
            try sendAll(halfUpgrade, Array("GET /.ws?v=5 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n".utf8))
            fds.append(halfUpgrade)
            usleep(200_000)
            let answered = try burst(port: port, count: 60, size: 20_000, round: attempt)
            #expect(answered.wait(timeout: .now() + 60) == .success)
            // A write of more than a megabyte runs on a thread of its own: SIGTERM comes while
            // it may still run, and the server waits for it.
            let huge = try smallWindowSocket(port: port)
            let body = "\"" + String(repeating: "h", count: 1_500_000) + "\""
            try sendAll(huge, Array("PUT /huge.json HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))
            fds.append(huge)
            kill(server.child.pid, SIGTERM)
            #expect(server.child.wait(timeout: 30) == 143, "attempt \(attempt): \(server.child.stderr.suffix(2_000))")
            for fd in fds { close(fd) }
        }
    }
}
