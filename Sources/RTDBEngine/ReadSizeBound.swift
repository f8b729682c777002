import CSQLite
import RTDBCore

/// The size bound of a read (`SizedReads`), counted from the leaf rows under the path in key
/// order: no value is decoded or rendered, and the scan ends as soon as the count passes the
/// cap, so a read far over the response limit costs what counting to the limit costs.
extension EmbeddedDatabase: SizedReads {
    public func jsonBytesAtLeast(_ path: Path, stoppingAbove cap: Int) throws -> Int {
        // A priority is one small leaf.
        if path.isPriority { return 0 }
        return try reading(0) { c in
            let enc = EmbeddedDatabase.encode(path)
            let s = try range(c, StorageKey.subtree(enc), "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
            defer { s.reset() }
            var total = 0
            while total <= cap, try s.step() {
                total += ReadSizeBound.rowBytes(s, skip: enc.count)
            }
            return total
        }
    }
}

enum ReadSizeBound {
    /// What one leaf row adds to the JSON at least: its value's text (a string with its two
    /// quotes, a boolean's four letters, a number's one digit), and below the read path a
    /// separator and, for a string key (never an array index), the key with its quotes and
    /// colon. Escapes, nesting and integer keys only add to it.
    @inline(__always)
    static func rowBytes(_ s: Statement, skip: Int) -> Int {
        var n: Int
        switch sqlite3_column_type(s.handle, 1) {
        case SQLITE_TEXT: n = Int(sqlite3_column_bytes(s.handle, 1)) + 2
        case SQLITE_BLOB: n = 4
        case SQLITE_INTEGER, SQLITE_FLOAT: n = 1
        default: n = 0
        }
        let key = s.blob(0)
        guard key.count > skip else { return n }
        // The row's last segment: the key it has in its parent object.
        var start = skip
        while true {
            let end = StorageKey.segmentEnd(key, from: start)
            if end >= key.count { break }
            start = end
        }
        n += 1
        if key[start] == StorageKey.stringTag {
            // The key's bytes (tag and end byte off), two quotes and a colon.
            n += key.count - start - 2 + 3
        }
        return n
    }
}
