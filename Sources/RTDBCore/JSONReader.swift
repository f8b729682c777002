/// Our JSON reader. It reads RFC 8259 JSON straight into normal-form `Node`s:
/// * integers stay `.int` while they fit in 64 bits (every digit kept), anything with a
///   fraction or exponent, or too large, becomes `.double`; NaN and Infinity cannot be written;
/// * keys are kept byte for byte; a repeated key keeps its last value (as `JSON.parse` does);
/// * arrays become objects keyed "0", "1", …; nulls, `{}` and `[]` vanish;
/// * an object's `".priority"` entry becomes its priority and `{".value": v, ".priority": p}` is
///   the leaf `v` with priority `p` (`Node.withPriority`), Firebase's export format; a priority
///   must be a string, a number, null or a server value (`invalid_data` otherwise), and an empty
///   node takes none; `{".value": v}` alone is `v`;
/// * `.sv` placeholders are kept for `ServerValues` to resolve.
/// Invalid text is `invalid_json` with the byte offset, line and column of the problem
/// (JSONErrorPlace.swift).
public struct JSONReader {
    /// Nesting beyond this is refused before recursion could exhaust the stack.
    public static let maxNesting = 512

    public static func parse(_ text: String) throws -> Node {
        var text = text
        return try text.withUTF8 { try parse($0) }
    }

    public static func parse(_ bytes: [UInt8]) throws -> Node {
        try bytes.withUnsafeBufferPointer { try parse($0) }
    }

    public static func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws -> Node {
        var r = JSONReader(buffer)
        r.skipSpace()
        let v = try r.value(depth: 0)
        r.skipSpace()
        if r.i != r.end { throw r.fail("unexpected text after the JSON value") }
        return v
    }

    /// Reads the JSON string whose opening quote is at `index`, with every escape of RFC 8259
    /// (surrogate pairs joined, lone surrogates and invalid UTF-8 refused); `index` then stands
    /// just past the closing quote. Shared by the readers of protocol envelopes.
    public static func string(in buffer: UnsafeBufferPointer<UInt8>, at index: inout Int) throws -> String {
        var r = JSONReader(buffer)
        r.i = index
        defer { index = r.i }
        return try r.string()
    }

    /// Reads a top-level object whose values are kept even when null (a multi-path update:
    /// `null` there means delete). Keys are returned as written, in input order.
    public static func parseEntries(_ buffer: UnsafeBufferPointer<UInt8>) throws -> [Node.Entry]? {
        var r = JSONReader(buffer)
        r.skipSpace()
        guard r.i < r.end, r.b[r.i] == UInt8(ascii: "{") else {
            _ = try parse(buffer)   // report syntax errors first
            return nil
        }
        r.i += 1
        var entries: [Node.Entry] = []
        r.skipSpace()
        if r.peek() == UInt8(ascii: "}") {
            r.i += 1
        } else {
            while true {
                r.skipSpace()
                guard r.peek() == UInt8(ascii: "\"") else { throw r.fail("expected a string key") }
                let key = try r.string()
                r.skipSpace()
                guard r.peek() == UInt8(ascii: ":") else { throw r.fail("expected ':'") }
                r.i += 1
                r.skipSpace()
                entries.append(Node.Entry(key, try r.value(depth: 1)))
                if try !r.another(before: UInt8(ascii: "}")) { break }
            }
        }
        r.skipSpace()
        if r.i != r.end { throw r.fail("unexpected text after the JSON value") }
        return entries
    }

    public static func parseEntries(_ text: String) throws -> [Node.Entry]? {
        var text = text
        return try text.withUTF8 { try parseEntries($0) }
    }

    let b: UnsafeBufferPointer<UInt8>
    var i: Int
    let end: Int
    /// Where `b` starts in the whole input, for the byte offsets of errors (a streamed input is
    /// read through a window, JSONStreamReader.swift).
    var origin: Int64 = 0
    /// For the lines and columns of errors: the streamed reader's window, which starts at or
    /// before `b` (nil: `b` itself), and the lines counted before it.
    var window: UnsafePointer<UInt8>? = nil
    var linesBeforeWindow = TextLines()
    var commaBeforeWindow: CommaBefore? = nil

    init(_ b: UnsafeBufferPointer<UInt8>) {
        self.b = b
        i = 0
        end = b.count
    }

    func fail(_ what: String) -> RTDBError {
        guard let start = b.baseAddress else {
            return JSONSyntaxError.make(what, text: nil, count: 0, index: 0, textOrigin: origin, linesBefore: linesBeforeWindow)
        }
        let text = window ?? UnsafePointer(start)
        let skipped = UnsafePointer(start) - text   // bytes of the window before `b`
        return JSONSyntaxError.make(what, text: text, count: skipped + end, index: skipped + i,
                                    textOrigin: origin - Int64(skipped), linesBefore: linesBeforeWindow,
                                    commaBefore: commaBeforeWindow)
    }

    @inline(__always) func peek() -> UInt8 { i < end ? b[i] : 0 }

    /// After a member or an element: true at a `,` (another follows), false at `close` (`}` or
    /// `]`, the end); either is read. Anything else is a syntax error.
    mutating func another(before close: UInt8) throws -> Bool {
        skipSpace()
        let c = peek()
        if c == UInt8(ascii: ",") { i += 1; return true }
        if c == close { i += 1; return false }
        throw fail(close == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
    }

    @inline(__always) mutating func skipSpace() {
        while i < end {
            let c = b[i]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 } else { return }
        }
    }

    mutating func value(depth: Int) throws -> Node {
        guard i < end else { throw fail("unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail(b[i] < 0x80 ? "unexpected character \(Limits.quote(String(UnicodeScalar(b[i]))))"
                                         : "unexpected byte \(Limits.hexByte(b[i]))")
        }
    }

    mutating func literal(_ word: StaticString) throws {
        let n = word.utf8CodeUnitCount
        guard end - i >= n else { throw fail("unexpected end of input") }
        let p = word.utf8Start
        for k in 0..<n where b[i + k] != p[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func object(depth: Int) throws -> Node {
        if depth > JSONReader.maxNesting { throw RTDBError(.tooDeep, "JSON nested more than \(JSONReader.maxNesting) levels") }
        i += 1
        var entries: [Node.Entry] = []
        var valueEntry: Node? = nil
        var priorityEntry: Node? = nil
        var hasPlainKeys = false
        skipSpace()
        if peek() == UInt8(ascii: "}") { i += 1; return .null }
        while true {
            skipSpace()
            guard peek() == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try string()
            skipSpace()
            guard peek() == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            let v = try value(depth: depth)
            if key.utf8.first == UInt8(ascii: "."), key == ".value" {
                valueEntry = v
            } else if key.utf8.first == UInt8(ascii: "."), key == ".priority" {
                switch v {
                case .null, .int, .double, .string: priorityEntry = v
                case .object where ServerValues.isPlaceholder(v): priorityEntry = v
                default:
                    throw RTDBError(.invalidData, "a \".priority\" must be a string, a number or null")
                }
            } else {
                hasPlainKeys = true
                entries.append(Node.Entry(key, v))
            }
            if try !another(before: UInt8(ascii: "}")) { break }
        }
        if let v = valueEntry {
            if hasPlainKeys {
                throw RTDBError(.invalidData, "an object with \".value\" cannot have other children")
            }
            // Only the outer priority counts, as in Firebase.
            return priorityEntry.map { v.withPriority($0) } ?? v.unprioritized
        }
        let object = Node.object(normalizing: entries)
        return priorityEntry.map { object.withPriority($0) } ?? object
    }

    mutating func array(depth: Int) throws -> Node {
        if depth > JSONReader.maxNesting { throw RTDBError(.tooDeep, "JSON nested more than \(JSONReader.maxNesting) levels") }
        i += 1
        var entries: [Node.Entry] = []
        var index = 0
        skipSpace()
        if peek() == UInt8(ascii: "]") { i += 1; return .null }
        while true {
            skipSpace()
            let v = try value(depth: depth)
            if !v.isNull { entries.append(Node.Entry(String(index), v)) }
            index += 1
            if try !another(before: UInt8(ascii: "]")) { break }
        }
        return entries.isEmpty ? .null : .object(entries)
    }

    mutating func number() throws -> Node {
        let start = i
        var negative = false
        if b[i] == UInt8(ascii: "-") { negative = true; i += 1 }
        guard i < end, b[i] >= 48, b[i] <= 57 else { throw fail("invalid number") }
        var isInteger = true
        if b[i] == 48 {
            i += 1
            if i < end, b[i] >= 48, b[i] <= 57 { throw fail("invalid number: leading zero") }
        } else {
            while i < end, b[i] >= 48, b[i] <= 57 { i += 1 }
        }
        if i < end, b[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard i < end, b[i] >= 48, b[i] <= 57 else { throw fail("invalid number: digit expected after '.'") }
            while i < end, b[i] >= 48, b[i] <= 57 { i += 1 }
        }
        if i < end, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < end, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < end, b[i] >= 48, b[i] <= 57 else { throw fail("invalid number: digit expected in exponent") }
            while i < end, b[i] >= 48, b[i] <= 57 { i += 1 }
        }
        if isInteger {
            // Accumulate negatively so Int64.min fits.
            var v: Int64 = 0
            var ok = true
            var k = negative ? start + 1 : start
            while k < i {
                let d = Int64(b[k] - 48)
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.subtractingReportingOverflow(d)
                if o1 || o2 { ok = false; break }
                v = s
                k += 1
            }
            if ok {
                if negative { return .int(v) }
                if v != Int64.min { return .int(-v) }
            }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            // The number is input: an answer shows a short cut of it, never all of it.
            let shown = i - start <= 32 ? text : String(text.prefix(24)) + "… (\(i - start) characters)"
            throw RTDBError(.invalidData, "number \(shown) is out of range")
        }
        return .double(d)
    }

    mutating func string() throws -> String {
        let start = i + 1
        if let (run, ascii) = try stringRun() {
            if !ascii && !UTF8Check.isValid(run) {
                i = start
                throw fail("string is not valid UTF-8")
            }
            return String(decoding: run, as: UTF8.self)
        }
        var out: [UInt8] = Array(UnsafeBufferPointer(rebasing: b[start..<i]))
        try unescapeRest(into: &out)
        guard out.withUnsafeBufferPointer({ UTF8Check.isValid($0) }) else { throw fail("string is not valid UTF-8") }
        return String(decoding: out, as: UTF8.self)
    }

    /// `string()` without making a `String`: appends the string's decoded bytes to `out` and
    /// returns where they are in it (the same checks, the same errors).
    mutating func string(appendingTo out: inout [UInt8]) throws -> Range<Int> {
        let from = out.count
        let start = i + 1
        if let (run, ascii) = try stringRun() {
            if !ascii && !UTF8Check.isValid(run) {
                i = start
                throw fail("string is not valid UTF-8")
            }
            out.append(contentsOf: run)
            return from..<out.count
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: b[start..<i]))
        try unescapeRest(into: &out)
        guard out.withUnsafeBufferPointer({ UTF8Check.isValid(UnsafeBufferPointer(rebasing: $0[from...])) }) else {
            throw fail("string is not valid UTF-8")
        }
        return from..<out.count
    }

    /// Steps into the string whose opening quote is at the reading position, over its bytes up
    /// to the closing quote (then past it, returning the bytes between the quotes and whether
    /// they are all ASCII) or up to its first backslash (returning nil, the reading position at
    /// the backslash). Most strings hold no escape and are used where they lie in the input.
    @inline(__always)
    mutating func stringRun() throws -> (UnsafeBufferPointer<UInt8>, ascii: Bool)? {
        i += 1
        let start = i
        var ascii = true
        while i < end {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: b[start..<i])
                i += 1
                return (run, ascii)
            }
            if c == UInt8(ascii: "\\") { return nil }
            if c < 0x20 { throw fail("control character in string") }
            if c >= 0x80 { ascii = false }
            i += 1
        }
        throw fail("unterminated string")
    }

    /// After `stringRun` stopped at a backslash: decodes the rest of the string, escapes and the
    /// bytes between them, onto `out`, and steps past the closing quote. `out` is checked as
    /// UTF-8 by the caller.
    mutating func unescapeRest(into out: inout [UInt8]) throws {
        while i < end {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return
            }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") {
                // The bytes up to the next quote, backslash or control character, at once.
                let run = i
                i += 1
                while i < end, b[i] != UInt8(ascii: "\""), b[i] != UInt8(ascii: "\\"), b[i] >= 0x20 { i += 1 }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: b[run..<i]))
                continue
            }
            i += 1
            guard i < end else { throw fail("unterminated string") }
            let e = b[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    guard end - i >= 6, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate in \\u escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low <= 0xDFFF else { throw fail("unpaired surrogate in \\u escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                    throw fail("unpaired surrogate in \\u escape")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                if let units = UTF8.encode(u) { out.append(contentsOf: units) }
            default:
                guard let control = JSONReader.controlEscape(e) else {
                    i -= 1
                    throw fail("invalid escape")
                }
                out.append(control)
            }
        }
        throw fail("unterminated string")
    }

    /// The byte a backslash and `letter` stand for among the control escapes JSON shares with
    /// JavaScript, and so with the rules language (`\b \f \n \r \t`); nil for any other letter.
    @inline(__always)
    public static func controlEscape(_ letter: UInt8) -> UInt8? {
        switch letter {
        case UInt8(ascii: "b"): return 0x08
        case UInt8(ascii: "f"): return 0x0C
        case UInt8(ascii: "n"): return 0x0A
        case UInt8(ascii: "r"): return 0x0D
        case UInt8(ascii: "t"): return 0x09
        default: return nil
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard end - i >= 4 else { throw fail("invalid \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            let d: UInt32
            switch c {
            case 48...57: d = UInt32(c - 48)
            case 65...70: d = UInt32(c - 55)
            case 97...102: d = UInt32(c - 87)
            default: throw fail("invalid \\u escape")
            }
            v = v * 16 + d
            i += 1
        }
        return v
    }
}
