/// Firebase's splitting of realtime messages over WebSocket frames: a
/// message longer than 16,384 UTF-16 code units goes as a frame holding the number of pieces,
/// then the pieces; a frame of at most 6 characters that reads as a number is such a count
/// (`0` is the client's keep-alive).
public enum RealtimeFraming {
    public static let maxFrameUnits = 16_384

    /// The client's keep-alive frame: sent after 45 s without sending.
    public static let keepAlive: [UInt8] = [UInt8(ascii: "0")]

    /// The frames for one outgoing message (UTF-8 text), cut only between Unicode scalars:
    /// the message itself when it is short, else the count and the pieces.
    public static func frames(_ message: [UInt8]) -> [[UInt8]] {
        // Each UTF-16 unit takes at least one UTF-8 byte.
        if message.count <= maxFrameUnits { return [message] }
        var pieces: [[UInt8]] = []
        var pieceStart = 0
        var units = 0
        var i = 0
        while i < message.count {
            let lead = message[i]
            // A scalar's UTF-8 length and UTF-16 width from its first byte (a stray
            // continuation byte counts as a one-byte scalar of one unit).
            let (length, width) = lead < 0xC0 ? (1, 1) : lead < 0xE0 ? (2, 1) : lead < 0xF0 ? (3, 1) : (4, 2)
            if units + width > maxFrameUnits {
                pieces.append(Array(message[pieceStart..<i]))
                pieceStart = i
                units = 0
            }
            units += width
            i = min(message.count, i + length)
        }
        if pieceStart < message.count { pieces.append(Array(message[pieceStart...])) }
        if pieces.count == 1 { return [message] }
        return [Array(String(pieces.count).utf8)] + pieces
    }

    /// `frames` for a message held as a String.
    public static func frames(_ message: String) -> [String] {
        frames(Array(message.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Joins incoming frames into messages.
    public struct Assembler: Sendable {
        private var expected = 0
        private var parts: [UInt8] = []
        private var received = 0
        public let maxMessageBytes: Int

        public init(maxMessageBytes: Int = 16 << 20) { self.maxMessageBytes = maxMessageBytes }

        public enum Output: Sendable, Equatable {
            case message([UInt8])
            case keepAlive
            case none
        }

        public struct TooLarge: Error, Sendable {}

        public mutating func receive(_ frame: [UInt8]) throws -> Output {
            if expected == 0 {
                if frame.count <= 6, let n = Int(String(decoding: frame, as: UTF8.self)), n >= 0 {
                    if n == 0 { return .keepAlive }
                    if n > 9_999 { throw TooLarge() }
                    expected = n
                    received = 0
                    parts = []
                    return .none
                }
                return .message(frame)
            }
            if parts.count + frame.count > maxMessageBytes { throw TooLarge() }
            parts.append(contentsOf: frame)
            received += 1
            if received == expected {
                expected = 0
                let m = parts
                parts = []
                return .message(m)
            }
            return .none
        }
    }
}
