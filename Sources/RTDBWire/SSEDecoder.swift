/// An incremental Server-Sent Events reader (WHATWG event-stream rules), for clients of a
/// stream and for tests of the frames `SSE` writes.
///
/// Invariant: `pending` holds the bytes of a line not yet ended; the fields of the event being
/// assembled are kept until a blank line dispatches it. Lines end at LF, CR or CRLF (a CR at
/// the very end of the input waits for the next bytes to tell). Lines starting with `:` are
/// comments. An event with no `data:` line is not dispatched (as the standard says). The
/// total size of one unfinished event is bounded by `maxEventBytes`.
public struct SSEDecoder {
    public struct Event: Sendable, Equatable {
        public var event: String
        public var data: String
        public var id: String?
        public init(event: String, data: String, id: String? = nil) {
            self.event = event
            self.data = data
            self.id = id
        }
    }

    public struct TooLarge: Error, Sendable {}

    public let maxEventBytes: Int
    /// The latest `retry:` value in milliseconds, if the server sent one.
    public private(set) var retry: Int?
    /// The latest `id:` seen (what a reconnecting client sends as `Last-Event-ID`).
    public private(set) var lastEventID: String?

    var pending: [UInt8] = []
    var sawCR = false
    var eventName = ""
    var data: [UInt8] = []
    var hasData = false
    var size = 0

    public init(maxEventBytes: Int = 64 << 20) {
        self.maxEventBytes = maxEventBytes
    }

    /// Feeds bytes; returns the events they complete, in order.
    public mutating func feed(_ bytes: [UInt8]) throws -> [Event] {
        var out: [Event] = []
        for b in bytes {
            if sawCR {
                sawCR = false
                if b == 0x0A { continue }   // the LF of a CRLF
            }
            if b == 0x0A || b == 0x0D {
                if b == 0x0D { sawCR = true }
                if let e = line() { out.append(e) }
                continue
            }
            pending.append(b)
            size += 1
            if size > maxEventBytes { throw TooLarge() }
        }
        return out
    }

    private mutating func line() -> Event? {
        defer { pending.removeAll(keepingCapacity: true) }
        if pending.isEmpty {
            defer { eventName = ""; data = []; hasData = false; size = 0 }
            guard hasData else { return nil }
            return Event(event: eventName.isEmpty ? "message" : eventName,
                         data: String(decoding: data, as: UTF8.self), id: lastEventID)
        }
        if pending[0] == UInt8(ascii: ":") { return nil }
        var name = pending[...]
        var value: ArraySlice<UInt8> = []
        if let colon = pending.firstIndex(of: UInt8(ascii: ":")) {
            name = pending[..<colon]
            value = pending[(colon + 1)...]
            if value.first == 0x20 { value = value.dropFirst() }
        }
        switch String(decoding: name, as: UTF8.self) {
        case "event": eventName = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append(0x0A) }
            data.append(contentsOf: value)
            hasData = true
        case "id":
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), value.count < 10 {
                retry = Int(String(decoding: value, as: UTF8.self))
            }
        default: break
        }
        return nil
    }
}
