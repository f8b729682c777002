/// The request bodies all connections are receiving at once, bounded in total: each connection
/// claims what its unfinished request's body holds or will hold (HTTPRequestParser's
/// `pendingBodyBytes`, its declared length as soon as the head arrives), and a claim that would
/// take the total past `cap` is refused, so that connections that each announce a large body and
/// send it slowly cannot together hold more than `cap` bytes of memory. A refused request is
/// answered 503 and its connection closed (ServerConnection). Used on the loop only.
final class BodiesInFlight {
    /// The most body bytes held by unfinished requests across connections.
    let cap: Int
    /// Body bytes claimed now.
    private(set) var total = 0

    init(cap: Int) {
        self.cap = cap
    }

    /// Changes one connection's claim from `old` to `new` bytes; false (and nothing changes)
    /// when a larger claim does not fit. A smaller one always does.
    func reclaim(from old: Int, to new: Int) -> Bool {
        if new > old && total - old + new > cap { return false }
        total += new - old
        return true
    }

    static let refusal = "The server is receiving too many request bodies at once; try again later."
}
