import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One client WebSocket carrying Firebase realtime messages: the
/// upgrade (its `Sec-WebSocket-Accept` checked), masked text frames, Firebase's splitting of
/// long messages both ways, answers to the server's pings and close frames. Messages go in and
/// out as `RealtimeMessage` values (RTDBWire's codec).
///
/// Blocking, with a bound on every wait. The owner closes it; after any failure it is unusable.
final class WebSocketConnection {
    private let tcp: TCPStream
    private let stream: ByteStream
    private var frames = WebSocket.Parser(expectMasked: false)
    private var assembler = RealtimeFraming.Assembler()
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var random = SystemRandomNumberGenerator()
    private var closed = false
    /// Monotonic milliseconds of the last frame sent (the keep-alive counts from it).
    private(set) var lastSent: Int64

    private init(tcp: TCPStream, stream: ByteStream) {
        self.tcp = tcp
        self.stream = stream
        self.lastSent = monotonicMillis()
    }

    deinit { close() }

    enum Received {
        case message(RealtimeMessage)
        /// A whole message that could not be decoded (the client ignores it).
        case malformed(RealtimeDecodingError)
        case idle
        case closed(String)
    }

    /// Connects to `endpoint`, upgrades `target` (`/.ws?…`) and returns the open socket.
    static func open(_ endpoint: Endpoint, target: String, headers: [(name: String, value: String)],
                     caFile: String?, timeoutMillis: Int) throws -> WebSocketConnection {
        let deadline = timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis)
        let tcp: TCPStream
        do {
            tcp = try TCPStream.connect(host: endpoint.host, port: endpoint.port, timeoutMillis: HTTPClient.left(deadline))
        } catch {
            throw HTTPClient.transportError(error, endpoint)
        }
        let stream: ByteStream
        if endpoint.secure {
            do {
                stream = try TLSHook.secureStream(over: tcp, host: endpoint.host, caFile: caFile, timeoutMillis: HTTPClient.left(deadline))
            } catch {
                tcp.close()
                throw error
            }
        } else {
            stream = tcp
        }
        let c = WebSocketConnection(tcp: tcp, stream: stream)
        do {
            try c.upgrade(endpoint, target: target, headers: headers, deadline: deadline)
        } catch {
            c.close()
            throw HTTPClient.transportError(error, endpoint)
        }
        return c
    }

    private func upgrade(_ endpoint: Endpoint, target: String, headers: [(name: String, value: String)], deadline: Int64) throws {
        var nonce: [UInt8] = []
        for _ in 0..<16 { nonce.append(UInt8.random(in: 0...255, using: &random)) }
        let key = Base64.encode(nonce)
        var head = "GET \(target) HTTP/1.1\r\nHost: \(endpoint.hostHeader)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for h in headers { head += "\(h.name): \(h.value)\r\n" }
        head += "\r\n"
        try Array(head.utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: HTTPClient.left(deadline)) }

        // Read the response head byte-exactly: what follows it already belongs to the frames.
        var got: [UInt8] = []
        let end: Int
        while true {
            if let i = WebSocketConnection.headEnd(got) { end = i; break }
            if got.count > 16_384 { throw RTDBError(.unavailable, "\(endpoint.host) answered the WebSocket upgrade with an oversized head") }
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: HTTPClient.left(deadline)) }
            if n == 0 { throw RTDBError(.unavailable, "\(endpoint.host) closed the connection during the WebSocket upgrade") }
            got.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: got[0..<end], as: UTF8.self)
        try WebSocketConnection.checkUpgrade(text, key: key, host: endpoint.host)
        frames.append(Array(got[(end + 4)...]))
    }

    static func headEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }

    /// A 101 answer with `Upgrade: websocket` and the accept value for `key`, else an error
    /// naming what was wrong.
    static func checkUpgrade(_ head: String, key: String, host: String) throws {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let status = lines.first.map { $0.split(separator: " ", maxSplits: 2) } ?? []
        guard status.count >= 2, status[0].hasPrefix("HTTP/1.") else {
            throw RTDBError(.unavailable, "\(host) did not answer the WebSocket upgrade with HTTP")
        }
        guard status[1] == "101" else {
            throw RTDBError(.unavailable, "\(host) refused the realtime connection (HTTP \(status[1]))", fact: .upgradeRefused)
        }
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append((RemoteTarget.ascii(lowercased: String(line[..<colon])), String(line[line.index(after: colon)...]).trimmingSpacesAndTabs))
        }
        func field(_ name: String) -> String? { fields.first { $0.0 == name }?.1 }
        guard let up = field("upgrade"), RemoteTarget.ascii(lowercased: up) == "websocket" else {
            throw RTDBError(.unavailable, "\(host) answered the WebSocket upgrade without Upgrade: websocket")
        }
        guard field("sec-websocket-accept") == WebSocket.acceptValue(forKey: key) else {
            throw RTDBError(.unavailable, "\(host) answered the WebSocket upgrade with a wrong Sec-WebSocket-Accept")
        }
    }

    // MARK: sending

    private func mask() -> (UInt8, UInt8, UInt8, UInt8) {
        let v = UInt32.random(in: 0...UInt32.max, using: &random)
        return (UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF))
    }

    private func write(_ bytes: [UInt8], timeoutMillis: Int) throws {
        try bytes.withUnsafeBytes { try stream.write($0, timeoutMillis: timeoutMillis) }
        lastSent = monotonicMillis()
    }

    /// One realtime message, split into a count and pieces when it is long.
    func send(_ message: RealtimeMessage, timeoutMillis: Int) throws {
        var out: [UInt8] = []
        for piece in RealtimeFraming.frames(message.encode()) { out += WebSocket.frame(.text, piece, mask: mask()) }
        try write(out, timeoutMillis: timeoutMillis)
    }

    /// The keep-alive frame `0`.
    func sendKeepAlive(timeoutMillis: Int) throws {
        try write(WebSocket.frame(.text, RealtimeFraming.keepAlive, mask: mask()), timeoutMillis: timeoutMillis)
    }

    // MARK: receiving

    /// The next whole realtime message; `.idle` when none came within `timeoutMillis`;
    /// `.closed` when the server closed the socket (or sent a close frame).
    func receive(timeoutMillis: Int) throws -> Received {
        let deadline = timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis)
        while true {
            while let m = try frames.next() {
                switch m.opcode {
                case .text:
                    switch try assembler.receive(m.payload) {
                    case .message(let bytes):
                        do { return .message(try RealtimeMessage.decode(bytes)) } catch { return .malformed(error) }
                    case .keepAlive, .none: continue
                    }
                case .ping:
                    try write(WebSocket.frame(.pong, m.payload, mask: mask()), timeoutMillis: 5_000)
                case .close:
                    let code = m.payload.count >= 2 ? Int(m.payload[0]) << 8 | Int(m.payload[1]) : 1005
                    try? write(WebSocket.closeFrame(1000, mask: mask()), timeoutMillis: 1_000)
                    abandon()
                    return .closed("the server closed the WebSocket (code \(code))")
                case .pong, .continuation:
                    continue
                case .binary:
                    throw RTDBError(.unavailable, "the server sent a binary WebSocket message")
                }
            }
            // -1 waits without limit; a deadline already passed (by however little) is idle.
            var left = -1
            if deadline != Int64.max {
                left = Int(deadline - monotonicMillis())
                if left <= 0 { return .idle }
            }
            // Wait on the socket first: a TLS stream is unusable after a timed-out read.
            var p = pollfd(fd: tcp.fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, Int32(clamping: left))
            if r == 0 { return .idle }
            if r < 0 {
                if errno == EINTR { continue }
                throw NetError.system("poll", errno)
            }
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 30_000) }
            if n == 0 {
                abandon()
                return .closed("the server closed the connection")
            }
            buffer.withUnsafeBytes { frames.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    /// Sends a close frame (best effort) and closes the socket.
    func close(code: UInt16 = 1000) {
        if closed { return }
        closed = true
        if code != 0 { try? write(WebSocket.closeFrame(code, mask: mask()), timeoutMillis: 500) }
        stream.close()
        tcp.close()
    }

    /// Closes the socket without a close frame, as a process that dies does.
    func abandon() {
        if closed { return }
        closed = true
        stream.close()
        tcp.close()
    }
}

extension String {
    var trimmingSpacesAndTabs: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
