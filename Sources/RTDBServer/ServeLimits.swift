import RTDBCore
import RTDBWire

/// The size limits Firebase puts on one request, as `rtdb serve` applies them (all three can
/// be made small, so that clients' handling of them is testable on small data):
///
/// * a read whose JSON answer would be larger than `maxResponseBytes` (Firebase: 256 MB) is
///   answered 400 "Data requested exceeds the maximum size that can be accessed with a single
///   request.";
/// * a write body larger than `maxWriteBytes` (Firebase: 256 MB) is refused;
/// * a write may ask for a `writeSizeLimit` (Firebase's tiny, small, medium, large, unlimited,
///   targets of 1, 10, 30 and 60 seconds of work): Firebase estimates what a write costs and
///   refuses one over its target. Here the cost is the bytes the write sends plus the JSON size
///   of the data it replaces or deletes, and the targets are 1, 10, 30 and 60 × 1/256 of
///   `maxWriteBytes` (1, 10, 30 and 60 MiB by default); `unlimited` takes up to `maxWriteBytes`
///   sent and any amount replaced. `defaultWriteSizeLimit` applies when a write names none (the
///   database's `defaultWriteSizeLimit` setting in Firebase; unlimited unless told).
public struct ServeLimits: Sendable {
    public var maxResponseBytes = Limits.maxWriteBytes
    public var maxWriteBytes = Limits.maxWriteBytes
    public var defaultWriteSizeLimit = WriteSizeLimit.unlimited

    public init() {}

    static let responseTooLarge = "Data requested exceeds the maximum size that can be accessed with a single request."
    static let writeTooLarge = "Data to write exceeds the maximum size that can be modified with a single request (writeSizeLimit)."

    /// The most a write at `limit` may cost, nil for no limit.
    func budget(_ limit: WriteSizeLimit) -> Int? {
        switch limit {
        case .tiny: return max(1, maxWriteBytes / 256)
        case .small: return max(1, maxWriteBytes / 256 * 10)
        case .medium: return max(1, maxWriteBytes / 256 * 30)
        case .large: return max(1, maxWriteBytes / 256 * 60)
        case .unlimited: return nil
        }
    }
}

/// Firebase's `writeSizeLimit` levels.
public enum WriteSizeLimit: String, Sendable, CaseIterable {
    case tiny, small, medium, large, unlimited
}

extension RESTHandler {
    /// Refuses a read answer larger than the response limit.
    func checkResponseSize(_ body: [UInt8]) throws {
        if body.count > sizeLimits.maxResponseBytes { throw RESTError(400, ServeLimits.responseTooLarge) }
    }

    /// Refuses a write whose estimated cost is over its `writeSizeLimit` (or the server's
    /// default): `sent` bytes of body, and the data now at `replaced`.
    /// The bytes a write may cost under its `writeSizeLimit` (the request's, or the server's
    /// default), nil when unlimited.
    func writeBudget(_ c: Context) throws -> Int? {
        var limit = sizeLimits.defaultWriteSizeLimit
        if let asked = c.request.queryValue("writeSizeLimit") {
            guard let l = WriteSizeLimit(rawValue: asked) else {
                throw RESTError(400, "writeSizeLimit must be tiny, small, medium, large or unlimited")
            }
            limit = l
        }
        return sizeLimits.budget(limit)
    }

    func checkWriteSize(_ c: Context, sent: Int, replaced: [Path]) throws {
        guard let budget = try writeBudget(c) else { return }
        var cost = sent
        if cost > budget { throw RESTError(400, ServeLimits.writeTooLarge) }
        let db = try c.database(provider)
        for p in replaced {
            cost += RESTRender.json(try db.get(p), pretty: false, export: false).count
            if cost > budget { throw RESTError(400, ServeLimits.writeTooLarge) }
        }
    }
}
