/// Firebase's splitting of realtime messages over WebSocket frames (realtime-protocol §2): a
/// message longer than 16,384 UTF-16 code units goes as a frame holding the number of pieces,
/// then the pieces; a frame of at most 6 characters that reads as a number is such a count
/// (`0` is the client's keep-alive).
public enum RealtimeFraming {
    public static let maxFrameUnits = 16_384

    /// The frames for one outgoing message, cut only between Unicode scalars.
    public static func frames(_ message: String) -> [String] {
        if message.utf16.count <= maxFrameUnits { return [message] }
        var pieces: [String] = []
        var current = String.UnicodeScalarView()
        var units = 0
        for s in message.unicodeScalars {
            let n = s.utf16.count
            if units + n > maxFrameUnits {
                pieces.append(String(current))
                current = String.UnicodeScalarView()
                units = 0
            }
            current.append(s)
            units += n
        }
        if !current.isEmpty { pieces.append(String(current)) }
        return [String(pieces.count)] + pieces
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
