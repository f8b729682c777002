/// A JSON document that needs no normalizing, recognised and rendered from its text without
/// building a tree: how a huge write through `rtdb serve` is answered in the memory of its
/// text alone (it is stored by the streaming importer, `StreamingWrites`).
///
/// "Plain" means that `JSONReader` and `Limits.validate` would accept the document and store
/// exactly its leaves: an object or an array at the top, every object and array non-empty, no
/// nulls (an array's null would leave a gap in its indices), no key starting with `.` (no
/// priorities, `.value` or server values), every key valid and appearing once in its object,
/// strings under the length limit, paths within the depth limit. An array is stored as the
/// object of its indices (`0`, `1`, …), which `JSONWriter` writes back as the same array. Anything else makes `isPlain` answer false, and the caller takes the ordinary path, which gives the document's own answer (its error, its normalized value).
/// The answer to such a write, the stored value as JSON, is rendered from the text too
/// (`render`).
public enum PlainJSON {
    /// Checks `json` (to be written at a path of `depth` keys) without reading it into values.
    public static func isPlain(_ json: UnsafeBufferPointer<UInt8>, depth: Int) -> Bool {
        var w = Checker(r: JSONReader(json))
        w.r.skipSpace()
        switch w.r.peek() {
        case UInt8(ascii: "{"): guard w.object(depth: depth) else { return false }
        case UInt8(ascii: "["): guard w.array(depth: depth) else { return false }
        default: return false
        }
        w.r.skipSpace()
        return w.r.i == w.r.end
    }

    /// The text of the value `json` stores, as `JSONWriter` renders it (keys in key order,
    /// objects of array indices as arrays, numbers and strings in its notation), read from the
    /// text itself: no tree of values. Only for a plain document (`isPlain`).
    public static func render(_ json: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count)
        var r = JSONReader(json)
        r.skipSpace()
        try renderValue(&r, into: &out)
        return out
    }

    /// The answer to a PATCH of a plain object: its members, in key order, as an object even
    /// when every key is an array index (`RESTRender.members` writes them so), each value as
    /// `render` writes it. Only for a plain document whose top is an object.
    public static func renderMembers(_ json: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count)
        var r = JSONReader(json)
        r.skipSpace()
        guard r.peek() == UInt8(ascii: "{") else { throw r.fail("not an object") }
        try renderObject(&r, into: &out, asObject: true)
        return out
    }

    /// Whether `render` (with `members`, `renderMembers`) would write `json` byte for byte as it
    /// stands: then the answer to a huge write is its body itself, shared, not a second copy.
    /// Generated documents mostly are so (no spaces, keys in key order, numbers and strings as
    /// the writer writes them). Checked member by member of the top object, each member's value
    /// rendered into a scratch buffer and compared with its text. Only for a plain document.
    public static func rendersAsItself(_ json: UnsafeBufferPointer<UInt8>, members: Bool) -> Bool {
        guard json.first == UInt8(ascii: "{"), json.count > 2 else { return false }
        var r = JSONReader(json)
        let b = r.b
        r.i = 1
        var keys = OrderedKeys()
        var count: Int64 = 0
        var scratch: [UInt8] = []
        while true {
            count += 1
            guard r.i < r.end, b[r.i] == UInt8(ascii: "\"") else { return false }
            let keyStart = r.i + 1
            guard (try? r.skipString()) != nil else { return false }
            let key = UnsafeBufferPointer(rebasing: b[keyStart..<(r.i - 1)])
            if key.contains(UInt8(ascii: "\\")) { return false }
            if !keys.next(key) { return false }
            guard r.i < r.end, b[r.i] == UInt8(ascii: ":") else { return false }
            r.i += 1
            let valueStart = r.i
            scratch.removeAll(keepingCapacity: true)
            guard (try? renderValue(&r, into: &scratch)) != nil,
                  scratch.elementsEqual(UnsafeBufferPointer(rebasing: b[valueStart..<r.i])) else { return false }
            guard r.i < r.end else { return false }
            let c = b[r.i]
            r.i += 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { break }
            return false
        }
        // An object of array indices, at least half of them present, is written as an array
        // (`JSONWriter`), except as a PATCH's members.
        let array = keys.allIndices && (keys.previous?.int ?? 0) < 2 * count
        return r.i == r.end && (members || !array)
    }

    private static func renderValue(_ r: inout JSONReader, into out: inout [UInt8]) throws {
        switch r.peek() {
        case UInt8(ascii: "{"): try renderObject(&r, into: &out)
        case UInt8(ascii: "["):
            // Indices 0, 1, … in order, none missing: the stored object is written back as
            // this array, element by element.
            r.i += 1
            out.append(UInt8(ascii: "["))
            var first = true
            while true {
                r.skipSpace()
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                try renderValue(&r, into: &out)
                r.skipSpace()
                let c = r.peek()
                r.i += 1
                if c == UInt8(ascii: "]") { break }
            }
            out.append(UInt8(ascii: "]"))
        case UInt8(ascii: "\""):
            // Without escapes the text is what JSONWriter writes (a plain document's strings
            // were checked as UTF-8 already, and hold no control characters).
            let start = r.i
            try r.skipString()
            let text = UnsafeBufferPointer(rebasing: r.b[start..<r.i])
            if text.contains(UInt8(ascii: "\\")) {
                r.i = start
                JSONWriter.appendString(try r.string(), to: &out)
            } else {
                out.append(contentsOf: text)
            }
        case UInt8(ascii: "t"): try r.literal("true"); JSONWriter.append("true", to: &out)
        case UInt8(ascii: "f"): try r.literal("false"); JSONWriter.append("false", to: &out)
        default:
            switch try r.number() {
            case .int(let v): JSONWriter.appendInt(v, to: &out)
            case .double(let d): JSONWriter.append(JSONWriter.format(d), to: &out)
            default: throw r.fail("not a plain document")
            }
        }
    }

    /// One member of an object being rendered: where its key's text and its value start, and
    /// the key's integer reading (`Int64.max`: none). 24 bytes, for objects of a million members.
    private struct Member {
        var int: Int64
        var keyStart: Int32
        var keyEnd: Int32
        var value: Int32
    }

    /// One object: its members found (each value skipped), put in key order, then written.
    /// Keys are compared as their text when none is written with escapes (their text is then
    /// the key); otherwise as decoded keys.
    private static func renderObject(_ r: inout JSONReader, into out: inout [UInt8], asObject: Bool = false) throws {
        let open = r.i
        if try renderInOrder(&r, into: &out, asObject: asObject) { return }
        r.i = open + 1
        var members: [Member] = []
        var escaped = false
        while true {
            r.skipSpace()
            let keyStart = r.i + 1
            try r.skipString()
            let keyEnd = r.i - 1
            let key = UnsafeBufferPointer(rebasing: r.b[keyStart..<keyEnd])
            if !escaped && key.contains(UInt8(ascii: "\\")) { escaped = true }
            skipColon(&r)
            let int = KeyOrder.intValue(bytes: key).map(Int64.init) ?? Int64.max
            members.append(Member(int: int, keyStart: Int32(keyStart), keyEnd: Int32(keyEnd), value: Int32(r.i)))
            if try skipValueEndsObject(&r) { break }
        }
        let end = r.i
        if escaped {
            r.i = open
            try renderDecodedObject(&r, into: &out, asObject: asObject)
            r.i = end
            return
        }
        let b = r.b
        func text(_ m: Member) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: b[Int(m.keyStart)..<Int(m.keyEnd)]) }
        members.sort { x, y in
            if x.int != Int64.max || y.int != Int64.max {
                if x.int != y.int { return x.int < y.int }
                let lx = x.keyEnd - x.keyStart, ly = y.keyEnd - y.keyStart
                if lx != ly { return lx < ly }
            }
            return KeyOrder.compareUTF16(bytes: text(x), text(y)) < 0
        }
        try write(members.count, key: { String(decoding: text(members[$0]), as: UTF8.self) }, value: { Int(members[$0].value) },
                  asObject: asObject, &r, into: &out)
        r.i = end
    }

    /// An object whose keys are already in key order, none written with escapes, and not all
    /// array indices, is written member by member as it stands, with no list of its members
    /// (huge generated documents mostly are so). False, with nothing written, for any other.
    private static func renderInOrder(_ r: inout JSONReader, into out: inout [UInt8], asObject: Bool) throws -> Bool {
        let open = r.i
        let b = r.b
        var keys = OrderedKeys()
        r.i += 1
        while true {
            r.skipSpace()
            let keyStart = r.i + 1
            try r.skipString()
            let key = UnsafeBufferPointer(rebasing: b[keyStart..<(r.i - 1)])
            if key.contains(UInt8(ascii: "\\")) { return false }
            if !keys.next(key) { return false }
            skipColon(&r)
            if try skipValueEndsObject(&r) { break }
        }
        if keys.allIndices && !asObject { return false }
        let end = r.i
        r.i = open + 1
        out.append(UInt8(ascii: "{"))
        var first = true
        while r.i < end - 1 {
            r.skipSpace()
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            let keyStart = r.i
            try r.skipString()
            // No escapes: the key's text is what JSONWriter writes for it.
            out.append(contentsOf: UnsafeBufferPointer(rebasing: b[keyStart..<r.i]))
            out.append(UInt8(ascii: ":"))
            skipColon(&r)
            try renderValue(&r, into: &out)
            r.skipSpace()
            r.i += 1   // ',' or the closing brace
        }
        out.append(UInt8(ascii: "}"))
        r.i = end
        return true
    }

    /// The keys of one object, met one by one: whether each comes after the one before in key
    /// order, and whether all so far are array indices.
    private struct OrderedKeys {
        var previous: (int: Int64, key: UnsafeBufferPointer<UInt8>)? = nil
        var allIndices = true

        /// Takes the next key (its text, written without escapes); false when it does not come
        /// after the one before.
        mutating func next(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
            let int = KeyOrder.intValue(bytes: key).map(Int64.init) ?? Int64.max
            if let p = previous, !PlainJSON.comesAfter(key, int, p) { return false }
            previous = (int, key)
            if allIndices && !JSONWriter.isIndex(String(decoding: key, as: UTF8.self)) { allIndices = false }
            return true
        }
    }

    /// Whether `key` (read as the integer `int`, `Int64.max` for none) comes after `previous`
    /// in key order: integers first, by value, then the rest by their UTF-16 code units.
    @inline(__always)
    private static func comesAfter(_ key: UnsafeBufferPointer<UInt8>, _ int: Int64,
                                   _ previous: (int: Int64, key: UnsafeBufferPointer<UInt8>)) -> Bool {
        let p = previous
        if p.int != Int64.max || int != Int64.max, p.int != int || p.key.count != key.count {
            return p.int != int ? p.int < int : p.key.count < key.count
        }
        return KeyOrder.compareUTF16(bytes: p.key, key) < 0
    }

    /// `renderObject` for an object with a key written with escapes: keys decoded, then sorted.
    private static func renderDecodedObject(_ r: inout JSONReader, into out: inout [UInt8], asObject: Bool) throws {
        r.i += 1
        var members: [(key: SortableKey, value: Int)] = []
        while true {
            r.skipSpace()
            let key = try r.string()
            skipColon(&r)
            members.append((SortableKey(key), r.i))
            if try skipValueEndsObject(&r) { break }
        }
        members.sort { SortableKey.compare($0.key, $1.key) < 0 }
        try write(members.count, key: { members[$0].key.key }, value: { members[$0].value }, asObject: asObject, &r, into: &out)
    }

    /// Writes sorted members (key, where its value starts) as `JSONWriter` writes an object.
    /// Writes `n` sorted members (the key of each, where its value starts) as `JSONWriter`
    /// writes an object: as an array when its keys are array indices (`JSONWriter.arrayLength`).
    private static func write(_ n: Int, key: (Int) -> String, value: (Int) -> Int, asObject: Bool = false,
                              _ r: inout JSONReader, into out: inout [UInt8]) throws {
        var arrayLength: Int? = nil
        if !asObject, n > 0, (0..<n).allSatisfy({ JSONWriter.isIndex(key($0)) }), let maxKey = Int(key(n - 1)), maxKey < 2 * n {
            arrayLength = maxKey + 1
        }
        if let count = arrayLength {
            out.append(UInt8(ascii: "["))
            var next = 0
            for index in 0..<count {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                if next < n, Int(key(next)) == index {
                    r.i = value(next)
                    try renderValue(&r, into: &out)
                    next += 1
                } else {
                    JSONWriter.append("null", to: &out)
                }
            }
            out.append(UInt8(ascii: "]"))
        } else {
            out.append(UInt8(ascii: "{"))
            for m in 0..<n {
                if m > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(key(m), to: &out)
                out.append(UInt8(ascii: ":"))
                r.i = value(m)
                try renderValue(&r, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Steps over the `:` after a member's key, to its value.
    @inline(__always)
    private static func skipColon(_ r: inout JSONReader) {
        r.skipSpace()
        r.i += 1
        r.skipSpace()
    }

    /// Steps over a member's value and the `,` or `}` after it; true when it was the `}`.
    @inline(__always)
    private static func skipValueEndsObject(_ r: inout JSONReader) throws -> Bool {
        try skipValue(&r)
        r.skipSpace()
        let c = r.peek()
        r.i += 1
        return c == UInt8(ascii: "}")
    }

    /// Steps over one value of a plain document.
    private static func skipValue(_ r: inout JSONReader) throws {
        switch r.peek() {
        case UInt8(ascii: "{"):
            r.i += 1
            while true {
                r.skipSpace()
                _ = try r.string()
                skipColon(&r)
                if try skipValueEndsObject(&r) { return }
            }
        case UInt8(ascii: "["):
            r.i += 1
            while true {
                r.skipSpace()
                try skipValue(&r)
                r.skipSpace()
                let c = r.peek()
                r.i += 1
                if c == UInt8(ascii: "]") { return }
            }
        case UInt8(ascii: "\""): try r.skipString()
        case UInt8(ascii: "t"): try r.literal("true")
        case UInt8(ascii: "f"): try r.literal("false")
        default: _ = try r.number()
        }
    }

    private struct Checker {
        var r: JSONReader

        /// One object (at `r.i`, the opening brace), whose members live `depth + 1` keys deep.
        mutating func object(depth: Int) -> Bool {
            let open = r.i
            switch members(depth: depth, ordered: true) {
            case .plain: return true
            case .notPlain: return false
            case .outOfOrder:
                r.i = open
                return members(depth: depth, ordered: false) == .plain
            }
        }

        enum Members { case plain, notPlain, outOfOrder }

        /// The members of the object at `r.i`. A repeated key keeps its last value in
        /// JSONReader: not plain. Keys are the same when their bytes are. With `ordered`, each
        /// key must come after the one before in key order, which proves them distinct with no
        /// memory (generated documents mostly are so); the first that does not answers
        /// `outOfOrder`, and the object is read again keeping a hash of each key (a hash that
        /// merely collides sends the document the ordinary way too, never the wrong way).
        private mutating func members(depth: Int, ordered: Bool) -> Members {
            if depth + 1 > Limits.maxDepth { return .notPlain }
            r.i += 1
            r.skipSpace()
            if r.peek() == UInt8(ascii: "}") { return .notPlain }   // {} vanishes
            var seen = Set<Int>()
            var previous: String? = nil
            while true {
                r.skipSpace()
                guard r.peek() == UInt8(ascii: "\"") else { return .notPlain }
                guard let key = try? r.string() else { return .notPlain }
                if key.utf8.first == UInt8(ascii: ".") || Limits.keyProblem(key) != nil { return .notPlain }
                if ordered {
                    if let previous, KeyOrder.compare(previous, key) >= 0 { return .outOfOrder }
                    previous = key
                } else {
                    var hasher = Hasher()
                    var bytes = key
                    bytes.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
                    if !seen.insert(hasher.finalize()).inserted { return .notPlain }
                }
                r.skipSpace()
                guard r.peek() == UInt8(ascii: ":") else { return .notPlain }
                r.i += 1
                r.skipSpace()
                guard value(depth: depth) else { return .notPlain }
                r.skipSpace()
                let c = r.peek()
                if c == UInt8(ascii: ",") { r.i += 1; continue }
                if c == UInt8(ascii: "}") { r.i += 1; break }
                return .notPlain
            }
            return .plain
        }

        /// One array (at `r.i`, the opening bracket), whose elements live `depth + 1` keys deep.
        mutating func array(depth: Int) -> Bool {
            if depth + 1 > Limits.maxDepth { return false }
            r.i += 1
            r.skipSpace()
            if r.peek() == UInt8(ascii: "]") { return false }   // [] vanishes
            while true {
                r.skipSpace()
                guard value(depth: depth) else { return false }
                r.skipSpace()
                let c = r.peek()
                if c == UInt8(ascii: ",") { r.i += 1; continue }
                if c == UInt8(ascii: "]") { r.i += 1; break }
                return false
            }
            return true
        }

        /// One member's value or array element (at `r.i`), living `depth + 1` keys deep.
        mutating func value(depth: Int) -> Bool {
            guard r.i < r.end else { return false }
            switch r.b[r.i] {
            case UInt8(ascii: "{"):
                return object(depth: depth + 1)
            case UInt8(ascii: "["):
                return array(depth: depth + 1)
            case UInt8(ascii: "\""):
                guard let s = try? r.string(), s.utf8.count <= Limits.maxStringBytes else { return false }
            case UInt8(ascii: "t"), UInt8(ascii: "f"):
                guard (try? r.literal(r.b[r.i] == UInt8(ascii: "t") ? "true" : "false")) != nil else { return false }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard (try? r.number()) != nil else { return false }
            default:
                return false   // null, or not JSON
            }
            return true
        }
    }
}

extension JSONReader {
    /// Steps over a string already read once (`PlainJSON.render`'s second visit).
    mutating func skipString() throws {
        i += 1
        while i < end {
            let c = b[i]
            if c == UInt8(ascii: "\"") { i += 1; return }
            i += c == UInt8(ascii: "\\") ? 2 : 1
        }
        throw fail("unterminated string")
    }
}
