/// What a watch sees at one moment (`Database.observeViews`).
public struct ObservedView: Sendable {
    /// The value (for a limited query possibly only the children of its window; see
    /// `Database.observe(_:query:idle:onChange:)`), or with an incomplete view what is known.
    public var value: Node
    /// The child keys that changed since the last view, when known.
    public var changedKeys: [String]?
    /// nil: the database always has the whole value. Otherwise whether this view is whole:
    /// an offline cache may know only some children.
    public var complete: Bool?

    public init(value: Node, changedKeys: [String]?, complete: Bool?) {
        self.value = value
        self.changedKeys = changedKeys
        self.complete = complete
    }
}

/// The events a watch prints, view after view.
///
/// A view that is always whole gives the usual events: the value (or a `child_added` per
/// child) first, unless only changes are asked for, then the differences. A view that can be
/// partial describes known children at once with child events, and gives `value` events only
/// while it is whole: with child events, one `value` marks the moment it becomes whole; without,
/// the first `value` comes then, and differences only between whole views.
public struct WatchEvents: Sendable {
    let query: Query
    let childEvents: Bool
    let changesOnly: Bool
    private var previous: Node? = nil
    private var previousComplete = false

    public init(query: Query, childEvents: Bool, changesOnly: Bool) {
        self.query = query
        self.childEvents = childEvents
        self.changesOnly = changesOnly
    }

    /// The events from the last view to `view`.
    public mutating func next(_ view: ObservedView) -> [Event] {
        defer {
            previous = view.value
            previousComplete = view.complete ?? true
        }
        guard let complete = view.complete else {
            guard let old = previous else {
                return changesOnly ? [] : EventGenerator.initial(query: query, value: view.value, childEvents: childEvents)
            }
            return EventGenerator.changes(query: query, old: old, new: view.value, childEvents: childEvents,
                                          changedKeys: view.changedKeys)
        }
        var events: [Event] = []
        if let old = previous {
            if childEvents {
                events = EventGenerator.changes(query: query, old: old, new: view.value, childEvents: true)
                if complete && !previousComplete { events += EventGenerator.initial(query: query, value: view.value, childEvents: false) }
            } else if complete {
                events = previousComplete ? EventGenerator.changes(query: query, old: old, new: view.value, childEvents: false)
                    : EventGenerator.initial(query: query, value: view.value, childEvents: false)
            }
        } else if !changesOnly {
            if childEvents { events = EventGenerator.initial(query: query, value: view.value, childEvents: true) }
            if complete { events += EventGenerator.initial(query: query, value: view.value, childEvents: false) }
        }
        return events
    }
}
