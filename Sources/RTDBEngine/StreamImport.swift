import CSQLite
import RTDBCore

extension EmbeddedDatabase: StreamingWrites {
    /// Writes the JSON read from `source` at `path` as `set` (or `update`) writes the parsed
    /// value, reading it through a bounded window (JSONStreamReader.swift) and inserting its
    /// rows as they come, so that the memory used does not grow with the input. It is one
    /// transaction like every other write: a problem anywhere in the input, a failed write or
    /// a killed process leaves nothing of it stored. Server values resolve against the data as
    /// it was before the import (read through a second connection, which does not see the
    /// import's rows until it commits). The change feed records the write without its data,
    /// as it does any large write. Returns the paths written (for an update, each entry's).
    /// Values whose text fits in `window` bytes are read whole; most go from their text to rows
    /// without a tree of values (`FlatValue`), and the rows are written by a second thread while
    /// the input is read (`LeafRows`), so that parsing and SQLite run on two cores.
    public func importJSON(_ path: Path, from source: ByteSource, as kind: ImportKind, window: Int,
                           progress: ProgressSink = Progress.none) throws -> [Path] {
        try importJSON(path, from: source, as: kind, window: window, progress: progress, flatValues: true)
    }

    public func importChildren(_ path: Path, from source: ByteSource, window: Int) throws {
        _ = try importJSON(path, from: source, as: .update, window: window, progress: Progress.none, flatValues: true,
                           distinctChildren: true)
    }

    /// `importJSON`, with `flatValues` false reading every value as a `Node` (the path a value
    /// that is not flat takes), so that tests can hold the two paths side by side; with
    /// `distinctChildren`, an update whose entries the caller knows to be distinct single keys
    /// (`importChildren`).
    func importJSON(_ path: Path, from source: ByteSource, as kind: ImportKind, window: Int,
                    progress: ProgressSink, flatValues: Bool, distinctChildren: Bool = false) throws -> [Path] {
        if path.isPriority && kind == .update {
            throw RTDBError(.invalidPath, "cannot update under \(path): a priority has no children")
        }
        let c = try retryingWhileBusy { () throws -> Connection in
            let c = try writeConnection()
            try c.exec("BEGIN IMMEDIATE")
            return c
        }
        // A small page cache for this write: its rows arrive mostly in key order and each page
        // is written about once, so a large cache would only hold memory (SQLite spills full
        // pages to the write-ahead log within the transaction). The usual cache is back
        // afterwards, and the pages the write went through are given back.
        try c.exec("PRAGMA cache_size=-8192")
        defer { try? c.exec("PRAGMA cache_size=\(EmbeddedDatabase.cacheKiB); PRAGMA shrink_memory") }
        // Not retried as other writes are: the input cannot be read a second time.
        do {
            let sink = try ImportSink(self, c, path, kind, flatValues: flatValues, distinctChildren: distinctChildren)
            defer { sink.close() }
            progress.begin("import", total: source.size, unit: .bytes)
            defer { progress.end() }
            func read(_ reader: JSONStreamReader) throws {
                switch kind {
                case .set:
                    try sink.beginEntryPath(path)
                    try reader.readValue()
                    try sink.endEntry()
                case .update:
                    try reader.readEntries()
                }
            }
            // Bytes already in memory (a request body) are read in place rather than copied.
            if let bytes = source as? BytesSource {
                try bytes.withBytes { try read(JSONStreamReader(borrowing: $0, sink: sink, base: path, wholeLimit: window)) }
            } else {
                try read(JSONStreamReader(source: source, sink: sink, base: path, window: window, progress: progress))
            }
            let written = try sink.finish()
            try c.exec("COMMIT")
            return written
        } catch {
            c.noteFullDisk()
            if !c.autocommit { try? c.exec("ROLLBACK") }
            throw error
        }
    }
}

/// Turns the reader's values into rows inside the import's transaction (see `importStream`).
final class ImportSink: JSONStreamSink {
    private let db: EmbeddedDatabase
    private let c: Connection
    private let target: Path
    private let kind: ImportKind
    private let rows: LeafRows
    private let now: Int64
    private let indexes: [EmbeddedDatabase.StoredIndex]
    /// Where the current entry (the whole value, for a set) is written.
    private var base: Path { didSet { baseKey = EmbeddedDatabase.encode(base) } }
    /// `base` as a row key.
    private var baseKey: [UInt8]
    private var work: EmbeddedDatabase.IndexWork? = nil
    /// The node whose rows the current entry changes, for `sizes` (StoredSizes.swift): the
    /// entry's, or for an update of a node without a stored size the target's (counted once
    /// at the end, from its rows: `updateSizeChange`).
    private var size: EmbeddedDatabase.SizeChange? = nil
    /// An update whose target has no stored size: one change of the target (`size`).
    private var targetSize = false
    /// The entries of an update, relative to the target, for the overlap check (with
    /// `distinctChildren`, only as many as the log names one by one).
    private var entries: [Path] = []
    /// The caller vouches that an update's entries are distinct single keys: none can overlap.
    private let distinctChildren: Bool
    /// How many entries the update had.
    private var entryCount = 0
    /// Distinct children written into a node that held nothing, in a file without indexes: no
    /// entry has anything to clear before it or to tidy after it, so their rows stream to the
    /// row writer without a pause per entry (a PATCH of a million new children).
    private let intoEmptyNode: Bool
    /// Values for `.priority` paths of an update: written last, as `update` writes them.
    private var priorityWrites: [(path: Path, value: Node)] = []
    /// The data as it was before the import, for increments (opened when one is met).
    private var before: Connection? = nil
    /// Values that need no normalizing come as `FlatValue`s (false only to compare the paths).
    let takesFlatValues: Bool

    init(_ db: EmbeddedDatabase, _ c: Connection, _ target: Path, _ kind: ImportKind, flatValues: Bool,
         distinctChildren: Bool = false) throws {
        self.db = db
        self.distinctChildren = distinctChildren
        takesFlatValues = flatValues
        self.c = c
        self.target = target
        self.kind = kind
        base = target
        baseKey = EmbeddedDatabase.encode(target)
        now = db.clock()
        indexes = try db.storedIndexes(c)
        let targetKey = EmbeddedDatabase.encode(target)
        let empty = try db.leaf(c, at: targetKey) == nil && !db.hasDescendants(c, targetKey)
        intoEmptyNode = distinctChildren && kind == .update && indexes.isEmpty && !target.isPriority && empty
        // Rows are written by a second thread while the input is read (`LeafRows`).
        rows = try LeafRows(c, background: true)
        if kind == .update, let change = try db.updateSizeChange(c, target) {
            size = change
            targetSize = true
        }
    }

    /// Ends the row writer and the snapshot of the data before the import: the connection is
    /// the caller's again (to commit or roll back).
    func close() {
        rows.stop()
        if let before { try? before.exec("COMMIT") }
        before = nil
    }

    // MARK: entries

    func beginEntry(_ key: String) throws -> Path {
        let rel: Path
        do { rel = try Path(key) } catch let err as RTDBError {
            throw RTDBError(.invalidKey, "update key \(Limits.quote(key)): \(err.message)")
        }
        if rel.isRoot { throw RTDBError(.invalidKey, "update key \(Limits.quote(key)) names no child") }
        let full = target.appending(rel)
        if full.depth > Limits.maxDepth { throw RTDBError(.tooDeep, "update path \(full) is more than \(Limits.maxDepth) levels deep") }
        entryCount += 1
        if !distinctChildren || entries.count <= EmbeddedDatabase.logMaxPaths { entries.append(rel) }
        try beginEntryPath(full)
        return full
    }

    /// Clears the place of the value about to be written at `full` (its rows, and a leaf above
    /// it that would shadow it), after noting what the indexes need to know of it.
    func beginEntryPath(_ full: Path) throws {
        base = full
        if full.isPriority { return }
        // The first entry clears a leaf above the node, if any; the others have nothing to clear.
        if intoEmptyNode && entryCount > 1 { return }
        try rows.flush()
        work = indexes.isEmpty ? nil : try db.prepareIndexes(c, indexes, full)
        if !targetSize { size = try db.beginSizeChange(c, EmbeddedDatabase.encode(full)) }
        try db.removeAncestorLeaves(c, of: full)
        try db.deleteSubtree(c, EmbeddedDatabase.encode(full))
    }

    func endEntry() throws {
        if base.isPriority { return }
        // A plain value is never empty (nothing to tidy) and no index watches the file.
        if intoEmptyNode { return }
        try rows.flush()
        if !targetSize, let size { try db.finishSizeChangeFromRows(c, size) }
        if !targetSize { size = nil }
        let enc = EmbeddedDatabase.encode(base)
        if try db.leaf(c, at: enc) == nil, try !db.hasDescendants(c, enc) {
            try db.clearPrioritiesOfEmptiedAncestors(c, of: base)
        }
        if let work { try db.finishIndexes(c, work, base, nil) }
        work = nil
    }

    // MARK: values

    func value(_ node: Node, at keys: [String], fresh: Bool) throws {
        let full = keys.isEmpty ? base : base.appending(Path(validatedKeys: keys))
        if full.isPriority {
            try Limits.validate(node, at: full)
            priorityWrites.append((full, node))
            return
        }
        if !fresh { try clear(full) }
        try Limits.validate(node, at: full)
        let resolved = try ServerValues.resolve(node, at: full, now: now) { try self.existing($0) }
        var enc = EmbeddedDatabase.encode(full)
        try db.insert(rows, resolved, &enc)
    }

    /// A flat value is valid and holds no server value (`FlatValue`): its leaves and priorities
    /// go to rows as they are.
    func value(flat: FlatValue, at keys: [String], fresh: Bool) throws {
        if !fresh { try clear(keys.isEmpty ? base : base.appending(Path(validatedKeys: keys))) }
        // The row keys of the value's node: the entry's, then one segment per key.
        var enc = baseKey
        for key in keys { StorageKey.append(key, to: &enc) }
        try db.insert(rows, flat, &enc)
    }

    func beginObject(at keys: [String], fresh: Bool) throws {
        if !fresh { try clear(base.appending(Path(validatedKeys: keys))) }
    }

    func endObject(at keys: [String], priority: Node?) throws {
        guard let priority, !priority.isNull else { return }
        let full = base.appending(Path(validatedKeys: keys))
        try rows.flush()
        let enc = EmbeddedDatabase.encode(full)
        // An empty node takes no priority.
        guard try db.leaf(c, at: enc) != nil || db.hasDescendants(c, enc) else { return }
        let resolved = try ServerValues.resolve(priority, at: full.priority, now: now) { try self.existing($0) }
        try rows.addPriority(enc, resolved)
    }

    /// Removes what the input gave a node earlier (a repeated key: the last value counts).
    private func clear(_ full: Path) throws {
        try rows.flush()
        try db.deleteSubtree(c, EmbeddedDatabase.encode(full))
    }

    /// The value stored at `path` before the import.
    private func existing(_ path: Path) throws -> Node {
        if before == nil {
            let snapshot = try Connection(file: db.file, create: false, timeoutSeconds: db.timeoutSeconds)
            try snapshot.exec("BEGIN")
            before = snapshot
        }
        guard let before else { return .null }
        return try db.readForIncrement(before, path)
    }

    // MARK: the end

    /// Writes what waits for the end, checks an update's paths, and logs the write.
    func finish() throws -> [Path] {
        try rows.flush()
        if let size { try db.finishSizeChangeFromRows(c, size) }
        size = nil
        switch kind {
        case .set:
            if target.isPriority {
                let value = priorityWrites.last?.value ?? .null
                let resolved = try ServerValues.resolve(value, at: target, now: now) { try self.existing($0) }
                try db.write(c, target, resolved)
            }
            try db.log(c, [target], .set(target, .null), copyData: false)
            return [target]
        case .update:
            let sorted = entries.sorted { PathOrder.compare($0, $1) < 0 }
            for i in sorted.indices.dropFirst() where !distinctChildren && sorted[i - 1].contains(sorted[i]) {
                throw RTDBError(.invalidData, "update paths overlap: \(sorted[i - 1]) contains \(sorted[i])")
            }
            for p in priorityWrites {
                let resolved = try ServerValues.resolve(p.value, at: p.path, now: now) { try self.existing($0) }
                try db.write(c, p.path, resolved)
            }
            if !sorted.isEmpty {
                try db.log(c, entryCount > EmbeddedDatabase.logMaxPaths ? [target] : sorted.map { target.appending($0) },
                           .update(target, sorted.map { (path: $0, value: Node.null) }), copyData: false)
            }
            if distinctChildren { return [] }
            return sorted.map { target.appending($0) }
        }
    }
}
