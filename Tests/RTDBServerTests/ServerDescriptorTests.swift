import Foundation
import Testing
import RTDBEngine
@testable import RTDBNet
@testable import RTDBServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A server closes what it opens. Started and stopped a hundred times in one process, each
/// server is freed once stopped (its owners' deinits close the listener, the loop and its
/// wake-up, the signal pipe, the sender's thread and wake-up), and the descriptors it held are
/// closed: each is checked by its identity (device and inode), since other suites in this
/// process open descriptors meanwhile and may be given the same numbers.
@Suite(.serialized) struct ServerDescriptorTests {
    struct Identity: Hashable {
        let fd: Int32
        let device: UInt64
        let inode: UInt64
    }

    /// What `fd` is now (nil: closed).
    func identity(_ fd: Int32) -> Identity? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return Identity(fd: fd, device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    @Test func aHundredServersStartedAndStoppedAreFreedAndCloseTheirDescriptors() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-fds-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var held: [(server: Int, identity: Identity)] = []
        var freed = 0
        for number in 0..<100 {
            weak var gone: Server? = nil
            weak var goneLoop: EventLoop? = nil
            try {
                var options = Server.Options()
                options.port = 0
                let server = try Server(options: options, namespaces: ServerNamespaces(file: dir + "/a.db", timeoutSeconds: 5),
                                        watchFolder: dir)
                gone = server
                goneLoop = server.loop
                try whileRunning(server) {
                    // Each one served something: a write and a read.
                    let stream = try TCPStream.connect(host: "127.0.0.1", port: server.port, timeoutMillis: 5_000)
                    defer { stream.close() }
                    let request = "PUT /n.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n1GET /n.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    try Array(request.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 5_000) }
                    var buffer = [UInt8](repeating: 0, count: 4_096)
                    var got: [UInt8] = []
                    while true {
                        let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 5_000) }
                        if n == 0 { break }
                        got += buffer[0..<n]
                    }
                    #expect(String(decoding: got, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count == 3)
                }
                let own = [server.listener.fd, server.signals.readEnd, server.signals.writeEnd,
                           server.loop.handle.wakeup.readEnd, server.loop.handle.wakeup.writeEnd] + (server.watch.map { [$0.fd] } ?? [])
                let identities = own.compactMap { identity($0) }
                #expect(identities.count == own.count)
                held += identities.map { (number, $0) }
            }()
            // The thread that ran it lets go of it just after saying it has stopped.
            let deadline = Date().addingTimeInterval(2)
            while (gone != nil || goneLoop != nil) && Date() < deadline { usleep(1_000) }
            if gone == nil && goneLoop == nil { freed += 1 }
        }
        #expect(freed == 100, "\(100 - freed) servers were not freed once stopped")
        #expect(held.count >= 500)
        // A descriptor's device and inode tell it apart only when nothing else had them: every
        // eventfd, epoll and inotify descriptor of the process shares one anonymous inode, so a
        // number another suite's loop reopened meanwhile would look like one left open. Sockets
        // and pipes (the listener, the signal pipe) have inodes of their own: those are checked.
        // (Both ends of one pipe share its inode: an inode counts once per server.)
        func file(_ i: Identity) -> Identity { Identity(fd: 0, device: i.device, inode: i.inode) }
        var servers: [Identity: Set<Int>] = [:]
        for h in held { servers[file(h.identity), default: []].insert(h.server) }
        let distinct = held.map(\.identity).filter { servers[file($0)]?.count == 1 }
        #expect(distinct.count >= 300)
        let open = distinct.filter { identity($0.fd) == $0 }
        #expect(open.isEmpty, "\(open.count) of the servers' descriptors are still open")
    }
}
