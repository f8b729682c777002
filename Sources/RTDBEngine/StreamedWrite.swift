import RTDBCore

/// A huge write stored as it is read (`StreamedWrites`): the document's leaves go into `data`
/// straight from its text, so storing it costs the text and SQLite's pages, not a tree of
/// values several times the text's size. Same rows, same change feed entry (by path only, as
/// for any write too large to copy), same transaction as `set`.
extension EmbeddedDatabase: StreamedWrites {
    public func setStreamed(_ path: Path, json: UnsafeBufferPointer<UInt8>) throws -> Bool {
        // A priority path, or a document that needs normalizing, goes the ordinary way.
        if path.isPriority || !PlainJSON.isPlain(json, depth: path.count) { return false }
        // A small page cache for this write: its rows arrive in document order and each page is
        // written once, so a large cache would only hold memory (SQLite spills full pages to
        // the write-ahead log within the transaction). The usual cache is back afterwards, and
        // the pages the write went through are given back.
        try writeConnection().exec("PRAGMA cache_size=-8192")
        defer { try? conn?.exec("PRAGMA cache_size=-65536; PRAGMA shrink_memory") }
        return try writing { c in
            // Indexes are kept from the tree of values: a file with any takes the ordinary way.
            guard try storedIndexes(c).isEmpty else { return false }
            var enc = EmbeddedDatabase.encode(path)
            try removeAncestorLeaves(c, of: path)
            try deleteSubtree(c, enc)
            let rows = try LeafRows(c)
            var marks: [Int] = []
            try PlainJSON.walk(json, depth: path.count) { event in
                switch event {
                case .enter(let key):
                    marks.append(enc.count)
                    StorageKey.append(key, to: &enc)
                case .leave:
                    enc.removeSubrange((marks.popLast() ?? enc.count)...)
                case .leaf(let key, let value):
                    let mark = enc.count
                    StorageKey.append(key, to: &enc)
                    try rows.add(enc, value)
                    enc.removeSubrange(mark...)
                }
            }
            try rows.flush()
            try log(c, [path], .set(path, .null), copyData: false)
            return true
        }
    }
}
