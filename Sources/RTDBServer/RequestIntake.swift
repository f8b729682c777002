import RTDBWire

/// What one HTTP connection checks about a request while it is still arriving, before it is
/// trusted: its head is judged for a refusal before its body is read
/// (`HTTPHandler.refusedBeforeBody`), its body's bytes are claimed against the total across
/// connections (`BodiesInFlight`), and its pace is watched (`InputPace`). Invariant: `claim` is
/// what this connection holds in the server's `BodiesInFlight`, and goes back to it (`release`)
/// when the request is read whole, refused, or the connection ends. Loop-only state.
struct RequestIntake: Sendable {
    var pace = InputPace()
    /// The pending request's head was judged.
    private var headJudged = false
    /// The body bytes claimed in the server's BodiesInFlight.
    private var claim = 0

    init() {}

    /// A request was read whole: the next head is judged afresh.
    mutating func requestRead() { headJudged = false }

    /// Whether a pending head still waits to be judged.
    func awaitsJudging(_ parser: HTTPRequestParser) -> Bool { !headJudged && parser.pendingHead != nil }

    /// The request whose body is arriving, before more of it is read: the answer that refuses
    /// it (the connection then closes), or nil to read on. `mayJudge` says the requests before
    /// it have been answered (theirs come first); until then its head waits to be judged.
    mutating func admit(_ parser: HTTPRequestParser, mayJudge: Bool, _ http: HTTPHandler, _ bodies: BodiesInFlight) -> HTTPResponse? {
        guard let head = parser.pendingHead else {
            headJudged = false
            release(bodies)
            return nil
        }
        if !headJudged && mayJudge {
            headJudged = true
            if let refused = http.refusedBeforeBody(head) {
                release(bodies)
                return refused
            }
        }
        let wanted = parser.pendingBodyBytes
        guard bodies.reclaim(from: claim, to: wanted) else {
            release(bodies)
            return HTTPResponse.error(503, BodiesInFlight.refusal)
        }
        claim = wanted
        return nil
    }

    /// Gives back the body bytes claimed.
    mutating func release(_ bodies: BodiesInFlight) {
        _ = bodies.reclaim(from: claim, to: 0)
        claim = 0
    }
}
