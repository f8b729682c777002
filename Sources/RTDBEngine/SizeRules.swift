import CSQLite
import RTDBCore

/// What a read's size bound (`ReadSizeBound`) counts, in one place, so that every count of it —
/// from rows being scanned (`ReadSizeBound`, `SubtreeSizes`) or from a value being written
/// (`SizeRules.measure`) — agrees to the byte: the count of a node is the sum of its leaves'
/// `leafBytes` and, for every node strictly below it that holds data, `memberBytes`. (So the
/// count of an object is the sum over its children of their count plus their `memberBytes`,
/// which is what lets a write change its ancestors' counts by a difference.)
enum SizeRules {
    /// A member of an object: its comma (n members, n − 1 commas and two braces: one brace is
    /// counted with the object), its key when a string (with quotes and colon; integer keys are
    /// left out, their object may render as an array), and a brace when it is itself an object.
    /// `tag` and `segmentLength`: the member's key as a `StorageKey` segment (tag, bytes, end).
    @inline(__always)
    static func memberBytes(tag: UInt8, segmentLength: Int, isObject: Bool) -> Int {
        1 + (tag == StorageKey.stringTag ? segmentLength - 2 + 3 : 0) + (isObject ? 1 : 0)
    }

    /// `memberBytes` of the member at the last segment of an encoded path (nil for the root,
    /// which is nobody's member).
    static func memberBytes(lastSegmentOf key: [UInt8], isObject: Bool) -> Int? {
        guard let start = lastSegmentStart(key) else { return nil }
        return memberBytes(tag: key[start], segmentLength: key.count - start, isObject: isObject)
    }

    /// Where the last segment of an encoded path starts (nil for the root).
    static func lastSegmentStart(_ key: [UInt8]) -> Int? {
        segmentEnds(key).dropLast().last ?? (key.isEmpty ? nil : 0)
    }

    /// The ends of the segments of an encoded path, in order (the last is its length).
    static func segmentEnds(_ key: [UInt8]) -> [Int] {
        key.withUnsafeBufferPointer { bytes in
            var ends: [Int] = []
            var i = 0
            while i < bytes.count {
                i = StorageKey.segmentEnd(bytes, from: i)
                ends.append(i)
            }
            return ends
        }
    }

    /// The most a write of a value counting `written` at the encoded path `key` can add to the
    /// root's count: the value, its member bytes there, and a member for every node above it
    /// that may start to hold data by it (as objects, whose member counts a brace more). A
    /// write of nothing adds nothing (it may only remove).
    static func growthBound(_ key: [UInt8], _ written: (bytes: Int, isObject: Bool)) -> Int {
        guard written.bytes > 0 else { return 0 }
        var total = written.bytes
        var start = 0
        for end in segmentEnds(key) {
            total += memberBytes(tag: key[start], segmentLength: end - start, isObject: true)
            start = end
        }
        return total
    }

    /// The least text of a stored leaf (column `column` of `s`): a string with its quotes, a
    /// boolean's four letters at least, an integer's digits and sign, a decimal number's one
    /// digit.
    @inline(__always)
    static func leafBytes(_ s: Statement, _ column: Int32) -> Int {
        switch sqlite3_column_type(s.handle, column) {
        case SQLITE_TEXT: return Int(sqlite3_column_bytes(s.handle, column)) + 2
        case SQLITE_BLOB: return 4
        case SQLITE_INTEGER: return integerBytes(sqlite3_column_int64(s.handle, column))
        case SQLITE_FLOAT: return 1
        default: return 0
        }
    }

    /// `leafBytes` of a leaf about to be stored as `EmbeddedDatabase.bind` stores it (0 for
    /// null and objects, which store no leaf).
    static func leafBytes(_ node: Node) -> Int {
        switch node {
        case .string(let v): return v.utf8.count + 2
        case .bool: return 4
        case .int(let v): return integerBytes(v)
        case .double: return 1
        case .prioritized(let base, _): return leafBytes(base)
        case .null, .object: return 0
        }
    }

    @inline(__always)
    static func integerBytes(_ value: Int64) -> Int {
        var v = value
        var n = v < 0 ? 2 : 1
        while v >= 10 || v <= -10 {
            v /= 10
            n += 1
        }
        return n
    }

    /// The count of `node` as `insert` stores it at the encoded path `key` (restored on
    /// return), and whether it is an object that holds data; every node strictly below it
    /// whose count is at least `threshold` is appended to `found` (for `sizes`).
    static func measure(_ node: Node, _ key: inout [UInt8], threshold: Int,
                        found: inout [(key: [UInt8], bytes: Int)]) -> (bytes: Int, isObject: Bool) {
        switch node {
        case .prioritized(let base, _):
            return measure(base, &key, threshold: threshold, found: &found)
        case .object(let list):
            var total = 0
            let mark = key.count
            for e in list {
                StorageKey.append(e.key, to: &key)
                let child = measure(e.node, &key, threshold: threshold, found: &found)
                if child.bytes > 0 {
                    if child.bytes >= threshold { found.append((key, child.bytes)) }
                    total += child.bytes + memberBytes(tag: key[mark], segmentLength: key.count - mark,
                                                       isObject: child.isObject)
                }
                key.removeSubrange(mark...)
            }
            return (total, total > 0)
        default:
            return (leafBytes(node), false)
        }
    }
}
