/// What a write transaction knows of the root's count (`SizeRules`), which decides whether a
/// write keeps `sizes` row by row (StoredSizes.swift) or may leave it alone: while the root
/// counts less than the threshold, so does every node below it, `sizes` is empty, and a write
/// that cannot bring the root up to the threshold has nothing to store there. Most files are
/// that small, and their writes then run no statement for sizes at all.
enum RootSize {
    case unknown
    /// The root counts at most this, which is less than the threshold (so `sizes` is empty).
    /// Writes add what they may add (`SizeRules.growthBound`) and never take off what they
    /// remove, so the bound only grows; once it would reach the threshold the root is counted
    /// again.
    case below(Int)
    /// The root counted at least `largeFraction` of the threshold when it was last known:
    /// writes keep `sizes` row by row, and the root is not counted again (a count that ends
    /// near the threshold would otherwise be made again every few writes).
    case large

    /// Three quarters: a root counted below that is counted again after at least a quarter of
    /// the threshold of growth.
    static func isLarge(_ bytes: Int, threshold: Int) -> Bool { bytes >= threshold - threshold / 4 }

    /// The fact for a root whose count is exactly `bytes`.
    static func exactly(_ bytes: Int, threshold: Int) -> RootSize {
        isLarge(bytes, threshold: threshold) ? .large : .below(bytes)
    }
}
