import RTDBCore

/// Keeping the `priorities` table true to the data: a node's priority set or cleared, and the
/// priorities of ancestors a removal left empty dropped (each inside the caller's transaction).
extension EmbeddedDatabase {
    /// Sets (or with `.null` clears) the priority of the node at `path`; an empty node takes none.
    func writePriority(_ c: Connection, of path: Path, _ priority: Node) throws {
        let enc = EmbeddedDatabase.encode(path)
        if !priority.isNull, try hasData(c, enc) {
            c.facts.priorities = .present
            let s = try c.statement("INSERT OR REPLACE INTO priorities(path, p) VALUES(?1, ?2)")
            s.bind(1, blob: enc)
            EmbeddedDatabase.bind(s, 2, priority)
            try s.run()
        } else {
            try deletePriority(c, enc)
        }
    }

    private func deletePriority(_ c: Connection, _ enc: [UInt8]) throws {
        let s = try c.statement("DELETE FROM priorities WHERE path = ?1")
        s.bind(1, blob: enc)
        try s.run()
    }

    /// After data was removed at `path`: an ancestor left without data loses its priority.
    func clearPrioritiesOfEmptiedAncestors(_ c: Connection, of path: Path) throws {
        if path.isRoot { return }
        guard try prioritiesMayExist(c) else { return }
        var ancestor = path
        while let parent = ancestor.parent {
            ancestor = parent
            let enc = EmbeddedDatabase.encode(ancestor)
            if try hasData(c, enc) { return }   // so are its ancestors
            try deletePriority(c, enc)
        }
    }

    /// Whether the `priorities` table may have rows: most files have none, and then a write
    /// need not look for its node's (asked once per write transaction, TransactionFacts.swift).
    func prioritiesMayExist(_ c: Connection) throws -> Bool {
        switch c.openFacts?.priorities ?? .unknown {
        case .empty: return false
        case .present: return true
        case .unknown:
            let any = try c.statement("SELECT 1 FROM priorities LIMIT 1")
            let some = try any.step()
            any.reset()
            if !c.autocommit { c.facts.priorities = some ? .present : .empty }
            return some
        }
    }
}
