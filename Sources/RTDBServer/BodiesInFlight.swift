import RTDBNet

/// The request bodies all connections are receiving at once, bounded in total: each connection
/// claims what its unfinished request's body holds or will hold (HTTPRequestParser's
/// `pendingBodyBytes`, its declared length as soon as the head arrives), and a claim that would
/// take the total past `cap` is refused, so that connections that each announce a large body and
/// send it slowly cannot together hold more than `cap` bytes of memory. A refused request is
/// answered 503 and its connection closed (ServerConnection). Shared by the server's loops:
/// the total is locked.
final class BodiesInFlight: Sendable {
    /// The most body bytes held by unfinished requests across connections.
    let cap: Int
    private let claimed = Locked(0)

    init(cap: Int) {
        self.cap = cap
    }

    /// Body bytes claimed now.
    var total: Int { claimed.withLock { $0 } }

    /// Changes one connection's claim from `old` to `new` bytes; false (and nothing changes)
    /// when a larger claim does not fit. A smaller one always does.
    func reclaim(from old: Int, to new: Int) -> Bool {
        if old == new { return true }
        return claimed.withLock { total in
            if new > old && total - old + new > cap { return false }
            total += new - old
            return true
        }
    }

    static let refusal = "The server is receiving too many request bodies at once; try again later."
}
