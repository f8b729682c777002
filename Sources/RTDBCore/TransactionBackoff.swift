/// How long a transaction waits before it tries again after a stale attempt.
///
/// Invariant: the pause is a random moment ("full jitter") between zero and a ceiling that
/// starts at the length of the attempt that went stale and doubles with each further attempt,
/// up to `maxSeconds`. Writers that collided on one path then spread out instead of retrying in
/// lockstep, and the spread follows what an attempt costs: a few microseconds on the database
/// file, a network round trip and a process start (`jq`) against a server. Without it a crowd
/// of remote writers keeps colliding until Firebase's 25 attempts run out.
public struct TransactionBackoff: Sendable {
    /// The least ceiling, for an attempt too quick to measure.
    public static let minSeconds = 0.001
    /// The largest pause.
    public static let maxSeconds = 2.0

    /// A number in `0...1`, uniformly (injected, so tests are deterministic).
    let random: @Sendable () -> Double

    public init(random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.random = random
    }

    /// The ceiling of the pause before attempt `attempt` (2 for the first retry) when the
    /// attempt before it took `lastAttemptSeconds`.
    public static func ceiling(before attempt: Int, lastAttemptSeconds: Double) -> Double {
        let base = min(max(lastAttemptSeconds, minSeconds), maxSeconds)
        // 2 → 1×, 3 → 2×, 4 → 4× … (the exponent is capped: the ceiling has reached the top by then).
        let doublings = min(max(attempt - 2, 0), 16)
        return min(base * Double(1 << doublings), maxSeconds)
    }

    /// The pause, in seconds, before attempt `attempt`.
    public func pause(before attempt: Int, lastAttemptSeconds: Double) -> Double {
        TransactionBackoff.ceiling(before: attempt, lastAttemptSeconds: lastAttemptSeconds) * min(max(random(), 0), 1)
    }
}
