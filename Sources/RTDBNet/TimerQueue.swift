/// Timers by deadline, for an event loop. Pure: the caller says what time it is.
///
/// Invariant: `entries` is sorted by (deadline, sequence number), so timers fire in deadline
/// order and timers with the same deadline in the order they were scheduled. A timer fires once;
/// a repeating one is scheduled again by whoever runs it.
public struct TimerQueue<Action> {
    /// Names a scheduled timer, to cancel it.
    public struct ID: Hashable, Sendable {
        let value: UInt64
    }

    private var entries: [(deadline: Int64, id: ID, action: Action)] = []
    private var nextID: UInt64 = 1

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    /// The earliest deadline, nil when no timer is scheduled.
    public var nextDeadline: Int64? { entries.first?.deadline }

    /// Schedules `action` for `deadline` (milliseconds on the caller's clock).
    @discardableResult
    public mutating func schedule(at deadline: Int64, _ action: Action) -> ID {
        let id = ID(value: nextID)
        nextID += 1
        // After every entry with a deadline not later than this one: ties keep their order.
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].deadline <= deadline { lo = mid + 1 } else { hi = mid }
        }
        entries.insert((deadline, id, action), at: lo)
        return id
    }

    /// Removes a timer that has not fired; false when it is not scheduled (fired or cancelled).
    @discardableResult
    public mutating func cancel(_ id: ID) -> Bool {
        guard let i = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: i)
        return true
    }

    /// Takes out the timers due at `now` (deadline ≤ now), in firing order.
    public mutating func popDue(now: Int64) -> [Action] {
        var n = 0
        while n < entries.count, entries[n].deadline <= now { n += 1 }
        if n == 0 { return [] }
        let due = entries[0..<n].map(\.action)
        entries.removeFirst(n)
        return due
    }

    /// How long a wait may last at `now` so as not to pass the next deadline: 0 when one is
    /// due, `limit` when none is near.
    public func waitMillis(now: Int64, limit: Int64) -> Int64 {
        guard let next = nextDeadline else { return limit }
        return max(0, min(limit, next - now))
    }
}
