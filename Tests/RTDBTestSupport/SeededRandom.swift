/// A small deterministic generator (SplitMix64) for the property tests of several test targets,
/// so that a failing case can be run again from its seed.
public struct SeededRandom: RandomNumberGenerator {
    public var state: UInt64

    /// Starts one step past `seed` (so that a seed of 0 does not start at 0).
    public init(_ seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    /// Starts at `state` itself.
    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<n.
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
