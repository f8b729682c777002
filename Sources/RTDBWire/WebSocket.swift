/// RFC 6455 WebSocket framing, bytes in and out, no I/O.
///
/// The parser is incremental and bounded: frames may arrive split anywhere, several at once.
/// A server receives masked frames only (an unmasked client frame is a protocol error, close
/// 1002); fragmented messages are joined; control frames (close, ping, pong) may come between
/// fragments and must be short. A message over `maxMessageBytes` is refused (close 1009).
public enum WebSocket {
    public enum Opcode: UInt8, Sendable {
        case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10
    }

    /// A complete message or control frame.
    public struct Message: Sendable {
        public var opcode: Opcode
        public var payload: [UInt8]
    }

    /// Why a connection must be closed, with the close code to send.
    public struct ProtocolError: Error, Sendable, Equatable {
        public var code: UInt16
        public var reason: String
    }

    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The `Sec-WebSocket-Accept` value answering a `Sec-WebSocket-Key`.
    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(SHA1.digest(Array((key.trimmingSpaces + guid).utf8)))
    }

    /// One unfragmented frame. `mask` is required from clients and absent from servers.
    public static func frame(_ opcode: Opcode, _ payload: [UInt8], mask: (UInt8, UInt8, UInt8, UInt8)? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 14)
        out.append(0x80 | opcode.rawValue)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        let n = payload.count
        if n < 126 {
            out.append(maskBit | UInt8(n))
        } else if n <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(n >> 8)); out.append(UInt8(n & 0xFF))
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(n) >> UInt64(shift)) & 0xFF)) }
        }
        if let m = mask {
            let key = [m.0, m.1, m.2, m.3]
            out.append(contentsOf: key)
            for (i, b) in payload.enumerated() { out.append(b ^ key[i & 3]) }
        } else {
            out.append(contentsOf: payload)
        }
        return out
    }

    /// A close frame with a status code and reason.
    public static func closeFrame(_ code: UInt16, _ reason: String = "", mask: (UInt8, UInt8, UInt8, UInt8)? = nil) -> [UInt8] {
        frame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(120)), mask: mask)
    }

    /// Reads frames from a byte stream.
    public struct Parser {
        public let maxMessageBytes: Int
        /// True for a server (client frames must be masked); false for a client.
        public let expectMasked: Bool
        private var buffer: [UInt8] = []
        private var start = 0
        private var fragments: [UInt8] = []
        private var fragmentOpcode: Opcode? = nil
        private var failure: ProtocolError? = nil

        public init(maxMessageBytes: Int = 16 << 20, expectMasked: Bool = true) {
            self.maxMessageBytes = maxMessageBytes
            self.expectMasked = expectMasked
        }

        public mutating func append(_ bytes: UnsafeRawBufferPointer) {
            if start > 0 && start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
            buffer.append(contentsOf: bytes)
        }

        public mutating func append(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { append($0) }
        }

        /// The next complete message or control frame; nil when more bytes are needed.
        public mutating func next() throws -> Message? {
            if let failure { throw failure }
            do {
                while true {
                    guard let (fin, opcode, payload) = try frame() else { return nil }
                    switch opcode {
                    case .close, .ping, .pong:
                        return Message(opcode: opcode, payload: payload)
                    case .text, .binary:
                        if fragmentOpcode != nil { throw ProtocolError(code: 1002, reason: "a new message began inside a fragmented one") }
                        if fin { return Message(opcode: opcode, payload: payload) }
                        fragmentOpcode = opcode
                        fragments = payload
                    case .continuation:
                        guard let op = fragmentOpcode else { throw ProtocolError(code: 1002, reason: "continuation frame without a message") }
                        if fragments.count + payload.count > maxMessageBytes { throw ProtocolError(code: 1009, reason: "message too big") }
                        fragments.append(contentsOf: payload)
                        if fin {
                            fragmentOpcode = nil
                            let m = Message(opcode: op, payload: fragments)
                            fragments = []
                            return m
                        }
                    }
                }
            } catch let e as ProtocolError {
                failure = e
                throw e
            }
        }

        /// One raw frame, unmasked.
        private mutating func frame() throws -> (Bool, Opcode, [UInt8])? {
            let avail = buffer.count - start
            if avail < 2 { return nil }
            let b0 = buffer[start], b1 = buffer[start + 1]
            if b0 & 0x70 != 0 { throw ProtocolError(code: 1002, reason: "reserved bits set without an extension") }
            guard let opcode = Opcode(rawValue: b0 & 0x0F) else { throw ProtocolError(code: 1002, reason: "unknown opcode \(b0 & 0x0F)") }
            let fin = b0 & 0x80 != 0
            let masked = b1 & 0x80 != 0
            if masked != expectMasked {
                throw ProtocolError(code: 1002, reason: expectMasked ? "client frames must be masked" : "server frames must not be masked")
            }
            var len = UInt64(b1 & 0x7F)
            var pos = start + 2
            if len == 126 {
                if avail < 4 { return nil }
                len = UInt64(buffer[pos]) << 8 | UInt64(buffer[pos + 1])
                pos += 2
            } else if len == 127 {
                if avail < 10 { return nil }
                len = 0
                for i in 0..<8 { len = len << 8 | UInt64(buffer[pos + i]) }
                pos += 8
                if len >> 63 != 0 { throw ProtocolError(code: 1002, reason: "frame length out of range") }
            }
            let isControl = opcode.rawValue >= 8
            if isControl && (len > 125 || !fin) { throw ProtocolError(code: 1002, reason: "control frames must be short and whole") }
            if len > UInt64(maxMessageBytes) { throw ProtocolError(code: 1009, reason: "message too big") }
            let n = Int(len)
            let headerEnd = pos + (masked ? 4 : 0)
            if buffer.count < headerEnd + n { return nil }
            var payload = Array(buffer[headerEnd..<(headerEnd + n)])
            if masked {
                let key = (buffer[pos], buffer[pos + 1], buffer[pos + 2], buffer[pos + 3])
                let k = [key.0, key.1, key.2, key.3]
                for i in 0..<n { payload[i] ^= k[i & 3] }
            }
            start = headerEnd + n
            if start > 65_536 && start * 2 > buffer.count {
                buffer.removeSubrange(0..<start)
                start = 0
            }
            return (fin, opcode, payload)
        }
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
