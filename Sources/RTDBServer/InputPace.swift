/// The slowest a client may send an unfinished request (head or body) before it is dropped.
///
/// The idle timeout alone is reset by every byte, so a client that announces a large body and
/// then sends one byte every few seconds would hold its connection (and the memory of the body
/// so far) for ever. Instead, while a request is incomplete, every window of `windowMillis`
/// (10 s) must bring at least `minimumBytes` (10 KiB: 1 KiB/s on average); the first window
/// starts when the request's first byte arrives, so a request is never judged before it has had
/// a whole window. Time during which the server itself does not read (its queue for the
/// connection is full) does not count. Loop-only state of one connection.
struct InputPace: Sendable {
    static let windowMillis: Int64 = 10_000
    static let minimumBytes = 10_240
    static let refusal = "The request arrived too slowly (under 1 KiB/s averaged over 10 s)."

    /// When the current window started; nil while no request is incomplete.
    private var windowStart: Int64? = nil
    private var windowBytes = 0

    init() {}

    /// `count` bytes arrived at `now`; `partial` says whether a request is incomplete after them.
    mutating func received(_ count: Int, partial: Bool, now: Int64) {
        guard partial else {
            windowStart = nil
            windowBytes = 0
            return
        }
        if windowStart == nil {
            windowStart = now
            windowBytes = 0
        } else {
            windowBytes += count
        }
    }

    /// The server stopped reading for a while: the window starts again.
    mutating func restart(now: Int64) {
        if windowStart != nil {
            windowStart = now
            windowBytes = 0
        }
    }

    /// At `now`: true when the window that just ended brought too little (the client is to be
    /// dropped); otherwise a new window starts once the old one is over.
    mutating func tooSlow(now: Int64) -> Bool {
        guard let start = windowStart, now - start >= InputPace.windowMillis else { return false }
        if windowBytes < InputPace.minimumBytes { return true }
        windowStart = now
        windowBytes = 0
        return false
    }
}
