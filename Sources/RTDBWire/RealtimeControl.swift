/// A control message, `{"t":"c","d":{"t":TYPE,"d":…}}`.
public enum RealtimeControl: Sendable, Equatable {
    /// `h`, server → client, the first message of every connection.
    case hello(RealtimeHello)
    /// `r`, server → client: reconnect to this host (nil when the server named none).
    case reset(host: String?)
    /// `s`, server → client: stop, for this reason; do not reconnect.
    case shutdown(reason: String?)
    /// `e`, server → client: an error to log.
    case error(String?)
    /// `p`, client → server: the JS SDK's health check, answered with `pong`.
    case ping
    /// `o`, server → client: the answer to a ping.
    case pong
    /// Any other type (`a`, `n` of the long-poll upgrade, or newer ones): ignored.
    case other(type: String)

    /// The type letter on the wire.
    public var type: String {
        switch self {
        case .hello: return "h"
        case .reset: return "r"
        case .shutdown: return "s"
        case .error: return "e"
        case .ping: return "p"
        case .pong: return "o"
        case .other(let t): return t
        }
    }

    func write(_ w: inout RealtimeJSONWriter) {
        w.raw(#"{"t":"c","d":{"t":"#)
        w.string(type)
        w.raw(#","d":"#)
        switch self {
        case .hello(let h):
            w.raw(#"{"ts":"#)
            w.int(h.timestamp)
            if let v = h.version { w.raw(#","v":"#); w.string(v) }
            if let host = h.host { w.raw(#","h":"#); w.string(host) }
            w.raw(#","s":"#)
            w.string(h.session)
            w.raw("}")
        case .reset(let s), .shutdown(let s), .error(let s):
            if let s { w.string(s) } else { w.raw("null") }
        case .ping, .other:
            w.raw("{}")
        case .pong:
            // Production answers a ping with null.
            w.raw("null")
        }
        w.raw("}}")
    }

    static func decode(_ d: RealtimeFields) throws(RealtimeDecodingError) -> RealtimeControl {
        let envelope = RealtimeFields(d.value, d.name, .envelope)
        try envelope.object()
        let type = try envelope.string("t")
        let m = RealtimeFields(d.value, d.name, .control(type))
        switch type {
        case "h":
            let body = try m.field("d")
            try body.object()
            return .hello(RealtimeHello(timestamp: try body.int("ts"), version: try body.optionalString("v"),
                                        host: try body.optionalString("h"), session: try body.string("s")))
        case "r": return .reset(host: try m.optionalString("d"))
        case "s": return .shutdown(reason: try m.optionalString("d"))
        case "e": return .error(try m.optionalString("d"))
        case "p": return .ping
        case "o": return .pong
        default: return .other(type: type)
        }
    }
}

/// The hello: server time, protocol version, the host for later connections, the session id.
public struct RealtimeHello: Sendable, Equatable {
    /// Server time in milliseconds since the Unix epoch.
    public var timestamp: Int64
    /// The protocol version (`"5"`).
    public var version: String?
    /// The `host[:port]` clients use for every later connection.
    public var host: String?
    /// The session id; a reconnecting client names it as `ls`.
    public var session: String

    public init(timestamp: Int64, version: String? = "5", host: String?, session: String) {
        self.timestamp = timestamp
        self.version = version
        self.host = host
        self.session = session
    }
}
