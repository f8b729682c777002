import RTDBCore

/// Pushes: values added under new push IDs, one or millions in one transaction.
extension EmbeddedDatabase: StreamingPushes {
    public func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] {
        var out: [Node.Entry] = []
        out.reserveCapacity(values.count)
        var rest = values[...]
        _ = try push(path, from: { rest.popFirst() }, stored: { out.append($0) }, bulk: false)
        return out
    }

    public func push(_ path: Path, from next: () throws -> Node?, stored: (Node.Entry) throws -> Void) throws -> Int {
        try push(path, from: next, stored: stored, bulk: true)
    }

    /// Adds each value `next` gives under a new push ID, in order, in one transaction; `stored`
    /// is told each child as stored. Nothing holds the values: a push of millions of values
    /// (`push --lines`) costs about one value and a batch of rows at a time. `bulk`: the values
    /// may be many, so the write keeps a small page cache as a streamed import does (its rows
    /// arrive in key order, each page is written about once; SQLite spills full pages to the
    /// write-ahead log within the transaction).
    func push(_ path: Path, from next: () throws -> Node?, stored: (Node.Entry) throws -> Void, bulk: Bool) throws -> Int {
        if path.isPriority { throw RTDBError(.invalidPath, "cannot push under \(path): a priority has no children") }
        return try writing { c in
            if bulk { try c.exec("PRAGMA cache_size=-8192") }
            defer { if bulk { try? c.exec("PRAGMA cache_size=\(EmbeddedDatabase.cacheKiB); PRAGMA shrink_memory") } }
            let now = clock()
            // The children for the change feed, while it could copy them (it names up to
            // `logMaxPaths` one by one, else the list).
            var logged: [Node.Entry] = []
            var count = 0
            // Indexes: of the list itself (an entry per new child), of a location above it (one
            // child changes, read before and after), or of locations inside the new children.
            let indexes = try storedIndexes(c)
            let ofList = indexes.filter { $0.definition.matches(path) }
            let inside = indexes.filter { $0.definition.pattern.count > path.count && $0.definition.matchesPrefix(path.keys[...]) }
            let above = indexes.filter { $0.definition.pattern.count < path.count }
            let work = above.isEmpty ? nil : try prepareIndexes(c, above, path)
            let entries = indexes.isEmpty ? nil : try EntryRows(c)
            let listEnc = EmbeddedDatabase.encode(path)
            // New keys hold nothing yet: only a leaf at the list or above it is replaced.
            try removeLeafAbove(c, listEnc, orAt: true)
            try removeAncestorLeaves(c, of: path.appending("_"))
            // The list's size grows by each new child's (which had none), counted from its value.
            let size = try beginSizeChange(c, listEnc)
            var added = 0
            var found: [(key: [UInt8], bytes: Int)] = []
            let threshold = sizeThreshold
            let rows = try LeafRows(c)
            var enc = listEnc
            while let v = try next() {
                let key = pushIDs.next(now: now)
                let child = path.appending(key)
                let resolved = try ServerValues.resolve(v, at: child, now: now) { try readForIncrement(c, $0) }
                enc.removeSubrange(listEnc.count...)
                StorageKey.append(key, to: &enc)
                try insert(rows, resolved, &enc)
                let measured = SizeRules.measure(resolved, &enc, threshold: threshold, found: &found)
                if measured.bytes > 0 {
                    if measured.bytes >= threshold { found.append((enc, measured.bytes)) }
                    added += measured.bytes + SizeRules.memberBytes(tag: enc[listEnc.count], segmentLength: enc.count - listEnc.count,
                                                                 isObject: measured.isObject)
                }
                if let entries {
                    for index in ofList where !resolved.isNull {
                        try entries.add(index.id, listEnc, sortValue: index.definition.sortValue(resolved),
                                        keySegment: enc[listEnc.count...])
                    }
                    for index in inside where index.definition.matchesPrefix((path.keys + [key])[...]) {
                        try addEntries(entries, index, index.definition.pattern[(path.count + 1)...], child, resolved)
                    }
                }
                count += 1
                if count <= EmbeddedDatabase.changeDataLeaves { logged.append(Node.Entry(key, resolved)) } else { logged = [] }
                try stored(Node.Entry(key, resolved))
            }
            try rows.flush()
            try entries?.flush()
            try finishSizeChange(c, size, newBytes: size.oldBytes + added, newIsObject: size.oldBytes + added > 0,
                                 found: found, replacingBelow: false)
            if let work { try finishIndexes(c, work, path, nil) }
            if count > EmbeddedDatabase.changeDataLeaves {
                // More children than the feed copies: readers read the list back.
                try log(c, [path], .update(path, []), copyData: false)
            } else if count > 0 {
                // One push is a set of its child, a batch one update of the new children.
                try log(c, count > EmbeddedDatabase.logMaxPaths ? [path] : logged.map { path.appending($0.key) },
                        LoggedChange.push(path, logged))
            }
            return count
        }
    }
}
