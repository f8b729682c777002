import Synchronization
import RTDBNet
import RTDBRules

/// The rules put at run time and read from the files, by the data they govern
/// (`NamespaceProvider.rulesScope`), shared by every handler of one server: the loops that
/// answer requests and the threads of large reads and writes see one set of rules per file,
/// so a rules put on one loop governs the next request on any other, and every loop counts
/// coverage into the same `RuleSet` (its counters are atomic).
///
/// A file's stored rules are read once, when some handler first needs them; the read runs
/// outside the lock (it is a database read), and the first result recorded wins.
final class RulesTable: Sendable {
    private struct State {
        var rules: [String: RuleSet] = [:]
        /// The scopes whose stored rules were read (into `rules`, when they had some).
        var read: Set<String> = []
    }
    private let state = Locked(State())
    /// Whether `rules` holds any: read without the lock on every request (see `isEmpty`).
    private let holdsRules = Atomic<Bool>(false)
    /// Moves on after every change of the state (after it, so that a handler that saw the old
    /// number looks again): a handler's `View` stays valid while it is unchanged.
    private let generation = Atomic<UInt64>(0)

    /// What one handler last looked up, valid while the table's generation is unchanged: the
    /// common request (rules read, none put since) takes no lock. A handler runs on one thread,
    /// so its view is its own.
    struct View {
        fileprivate var generation = UInt64.max
        fileprivate var known: [String: (rules: RuleSet?, read: Bool)] = [:]
        init() {}
    }

    init() {}

    /// No rules are set for any data (the common case of a server without rules: no lock).
    var isEmpty: Bool { !holdsRules.load(ordering: .acquiring) }

    /// The rules of `scope`, and whether its stored rules were read; from `view` while no
    /// change was made since it saw them.
    func lookup(_ scope: String, through view: inout View) -> (rules: RuleSet?, read: Bool) {
        let now = generation.load(ordering: .acquiring)
        if view.generation == now, let seen = view.known[scope] { return seen }
        if view.generation != now {
            view.known.removeAll(keepingCapacity: true)
            view.generation = now
        }
        let found = state.withLock { ($0.rules[scope], $0.read.contains(scope)) }
        view.known[scope] = found
        return found
    }

    /// Records what `scope`'s file holds, unless rules were recorded for it meanwhile; the
    /// rules in force for it after that.
    func recordStored(_ scope: String, _ rules: RuleSet?) -> RuleSet? {
        let now = state.withLock { s -> RuleSet? in
            s.read.insert(scope)
            if s.rules[scope] == nil, let rules { s.rules[scope] = rules }
            return s.rules[scope]
        }
        if now != nil { holdsRules.store(true, ordering: .releasing) }
        _ = generation.wrappingAdd(1, ordering: .releasing)
        return now
    }

    /// Rules put for `scope`: in force from now on, on every loop.
    func put(_ scope: String, _ rules: RuleSet) {
        state.withLock { s in
            s.rules[scope] = rules
            s.read.insert(scope)
        }
        holdsRules.store(true, ordering: .releasing)
        _ = generation.wrappingAdd(1, ordering: .releasing)
    }

    /// How many scopes have rules, and how many files were read (tests).
    var counts: (rules: Int, read: Int) { state.withLock { ($0.rules.count, $0.read.count) } }
}
