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
            var count = ReadSizeBound(skip: enc.count)
            while count.total <= cap, try s.step() {
                count.add(s)
            }
            return count.total
        }
    }
}

/// The count of one read, row by row. It is the compact JSON's size but for what it cannot
/// know without rendering, which it leaves out (so it never counts more than the JSON takes):
/// the keys of objects whose keys are all integers (they may render as arrays, which write no
/// keys), a decimal number's digits past the first, the escapes in strings, and the braces of
/// the value at the read path itself. Objects are found as rows enter them: a row whose key
/// leaves the previous row's key at some segment opens a new member there and an object for
/// every segment below it but the last.
struct ReadSizeBound {
    /// The length of the read path's key (rows below it continue it).
    let skip: Int
    private(set) var total = 0
    /// The previous row's key.
    private var previous: [UInt8] = []

    init(skip: Int) {
        self.skip = skip
    }

    mutating func add(_ s: Statement) {
        total += ReadSizeBound.valueBytes(s)
        let key = s.blob(0)
        // The value at the read path itself (a leaf): no key.
        guard key.count > skip else { return }
        // The first byte where this key leaves the previous one; a segment ending after it is
        // new (segments are never prefixes of one another, so equal bytes are the same key).
        let shared = min(key.count, previous.count)
        var diverge = skip
        while diverge < shared && key[diverge] == previous[diverge] { diverge += 1 }
        var start = skip
        while start < key.count {
            let end = StorageKey.segmentEnd(key, from: start)
            if end > diverge {
                // A new member of its object: its comma (n members, n − 1 commas and two
                // braces: one brace is counted with the object), and its key when a string.
                total += 1
                if key[start] == StorageKey.stringTag { total += end - start - 2 + 3 }
                // Not the last segment: an object opens.
                if end < key.count { total += 1 }
            }
            start = end
        }
        previous.removeAll(keepingCapacity: true)
        previous.append(contentsOf: key)
    }

    /// The least text of a leaf's value: a string with its quotes, a boolean's four letters at
    /// least, an integer's digits and sign, a decimal number's one digit.
    @inline(__always)
    static func valueBytes(_ s: Statement) -> Int {
        switch sqlite3_column_type(s.handle, 1) {
        case SQLITE_TEXT: return Int(sqlite3_column_bytes(s.handle, 1)) + 2
        case SQLITE_BLOB: return 4
        case SQLITE_INTEGER:
            var v = sqlite3_column_int64(s.handle, 1)
            var n = v < 0 ? 2 : 1
            while v >= 10 || v <= -10 {
                v /= 10
                n += 1
            }
            return n
        case SQLITE_FLOAT: return 1
        default: return 0
        }
    }
}
