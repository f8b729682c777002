/// The lenient JSON of a rules file: RFC 8259 plus `//` and `/* */` comments
/// wherever whitespace may be, and raw newlines and tabs inside strings (multi-line
/// expressions). Object members keep their order and their byte-exact keys (duplicates are
/// reported, not merged). Every value remembers where it starts; a string also remembers where
/// each byte of its unescaped text came from, so an error inside an expression can be reported
/// at its line and column in the file.
public indirect enum RulesJSON: Sendable {
    case null(Position)
    case bool(Bool, Position)
    case number(Double, Position)
    case string(RulesString)
    case array([RulesJSON], Position)
    case object([Member], Position)

    public struct Member: Sendable {
        public var key: RulesString
        public var value: RulesJSON
    }

    public var position: Position {
        switch self {
        case .null(let p), .bool(_, let p), .number(_, let p), .array(_, let p), .object(_, let p): return p
        case .string(let s): return s.position
        }
    }
}

/// A 1-based line and column (columns count Unicode scalars).
public struct Position: Sendable, Equatable {
    public var line: Int
    public var column: Int
}

/// A JSON string with the file position of its opening quote and, for each UTF-8 byte of the
/// unescaped text, the position of the source character it came from.
public struct RulesString: Sendable {
    public var text: String
    public var position: Position
    var sources: [Position]
    /// Where the closing quote is.
    var closing: Position? = nil

    /// Where byte `offset` of the unescaped text came from (past the end: the closing quote).
    public func position(ofByte offset: Int) -> Position {
        if offset < sources.count { return sources[offset] }
        if let last = sources.last { return Position(line: last.line, column: last.column + 1) }
        return Position(line: position.line, column: position.column + 1)
    }

    /// Where the text from byte `start` up to byte `end` (exclusive) lies in the file: `end` is
    /// the position just past its last character (an escape sequence counted whole).
    func range(_ start: Int, _ end: Int) -> SourceRange {
        let to = end < sources.count ? sources[end] : (closing ?? position(ofByte: end))
        return SourceRange(start: position(ofByte: start), end: to)
    }
}

/// A problem in a rules file, at a 1-based line and column: `L:C: message`.
public struct RulesProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var position: Position
    public var message: String
    public init(_ position: Position, _ message: String) {
        self.position = position
        self.message = message
    }
    public var description: String { "\(position.line):\(position.column): \(message)" }
}

struct RulesJSONReader {
    let b: [UInt8]
    var i = 0
    var line = 1
    var column = 1

    init(_ bytes: [UInt8]) { b = bytes }

    static func parse(_ bytes: [UInt8]) throws(RulesProblem) -> RulesJSON {
        var r = RulesJSONReader(bytes)
        // A UTF-8 byte order mark is not JSON, but editors write it.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { r.i = 3 }
        try r.skipSpace()
        let v = try r.value(depth: 0)
        try r.skipSpace()
        if r.i < r.b.count { throw r.problem("Parse error.") }
        return v
    }

    var here: Position { Position(line: line, column: column) }

    func problem(_ message: String) -> RulesProblem { RulesProblem(here, message) }

    mutating func advance() {
        guard i < b.count else { return }
        let c = b[i]
        i += 1
        if c == 0x0A {
            line += 1
            column = 1
        } else if c & 0xC0 != 0x80 {
            column += 1   // count scalars: continuation bytes do not move the column
        }
    }

    func peek(_ k: Int = 0) -> UInt8? { i + k < b.count ? b[i + k] : nil }

    mutating func skipSpace() throws(RulesProblem) {
        while let c = peek() {
            if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D {
                advance()
            } else if c == UInt8(ascii: "/") && peek(1) == UInt8(ascii: "/") {
                while let d = peek(), d != 0x0A { advance() }
            } else if c == UInt8(ascii: "/") && peek(1) == UInt8(ascii: "*") {
                let start = here
                advance(); advance()
                while true {
                    guard let d = peek() else { throw RulesProblem(start, "Parse error.") }
                    if d == UInt8(ascii: "*") && peek(1) == UInt8(ascii: "/") { advance(); advance(); break }
                    advance()
                }
            } else {
                return
            }
        }
    }

    /// The value here, `depth` containers inside the document. The reader, the load of the rule
    /// tree and the writer of `strictText` recurse once per container, so a container past
    /// `Nesting.documentLimit` is refused where it opens.
    mutating func value(depth: Int) throws(RulesProblem) -> RulesJSON {
        guard let c = peek() else { throw problem("Parse error.") }
        let start = here
        if (c == UInt8(ascii: "{") || c == UInt8(ascii: "[")) && depth >= Nesting.documentLimit {
            throw problem(Nesting.documentTooDeep)
        }
        // Containers in functions of their own: the frames this recursion stacks stay small.
        switch c {
        case UInt8(ascii: "{"): return try object(depth: depth, start)
        case UInt8(ascii: "["): return try array(depth: depth, start)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try word("true"); return .bool(true, start)
        case UInt8(ascii: "f"): try word("false"); return .bool(false, start)
        case UInt8(ascii: "n"): try word("null"); return .null(start)
        default: return .number(try number(), start)
        }
    }

    mutating func object(depth: Int, _ start: Position) throws(RulesProblem) -> RulesJSON {
        advance()
        var members: [RulesJSON.Member] = []
        try skipSpace()
        if peek() == UInt8(ascii: "}") { advance(); return .object(members, start) }
        while true {
            try skipSpace()
            guard peek() == UInt8(ascii: "\"") else { throw problem("Parse error.") }
            let key = try string()
            try skipSpace()
            guard peek() == UInt8(ascii: ":") else { throw problem("Parse error.") }
            advance()
            try skipSpace()
            members.append(RulesJSON.Member(key: key, value: try value(depth: depth + 1)))
            try skipSpace()
            if peek() == UInt8(ascii: ",") { advance(); continue }
            if peek() == UInt8(ascii: "}") { advance(); return .object(members, start) }
            throw problem("Parse error.")
        }
    }

    mutating func array(depth: Int, _ start: Position) throws(RulesProblem) -> RulesJSON {
        advance()
        var items: [RulesJSON] = []
        try skipSpace()
        if peek() == UInt8(ascii: "]") { advance(); return .array(items, start) }
        while true {
            try skipSpace()
            items.append(try value(depth: depth + 1))
            try skipSpace()
            if peek() == UInt8(ascii: ",") { advance(); continue }
            if peek() == UInt8(ascii: "]") { advance(); return .array(items, start) }
            throw problem("Parse error.")
        }
    }

    mutating func word(_ w: String) throws(RulesProblem) {
        for u in w.utf8 {
            guard peek() == u else { throw problem("Parse error.") }
            advance()
        }
    }

    mutating func number() throws(RulesProblem) -> Double {
        let start = i
        let pos = here
        if peek() == UInt8(ascii: "-") { advance() }
        guard let d = peek(), d >= 0x30 && d <= 0x39 else { throw problem("Parse error.") }
        while let d = peek(), (d >= 0x30 && d <= 0x39) || d == UInt8(ascii: ".") || d == UInt8(ascii: "e")
                || d == UInt8(ascii: "E") || d == UInt8(ascii: "+") || d == UInt8(ascii: "-") { advance() }
        guard let v = Double(String(decoding: b[start..<i], as: UTF8.self)), v.isFinite else {
            throw RulesProblem(pos, "Parse error.")
        }
        return v
    }

    mutating func string() throws(RulesProblem) -> RulesString {
        let start = here
        advance()   // opening quote
        var out: [UInt8] = []
        var sources: [Position] = []
        while true {
            guard let c = peek() else { throw RulesProblem(start, "Parse error.") }
            let at = here
            if c == UInt8(ascii: "\"") { advance(); break }
            if c == UInt8(ascii: "\\") {
                advance()
                guard let e = peek() else { throw RulesProblem(start, "Parse error.") }
                advance()
                var scalar: UInt32
                switch e {
                case UInt8(ascii: "\""): scalar = 0x22
                case UInt8(ascii: "\\"): scalar = 0x5C
                case UInt8(ascii: "/"): scalar = 0x2F
                case UInt8(ascii: "b"): scalar = 0x08
                case UInt8(ascii: "f"): scalar = 0x0C
                case UInt8(ascii: "n"): scalar = 0x0A
                case UInt8(ascii: "r"): scalar = 0x0D
                case UInt8(ascii: "t"): scalar = 0x09
                case UInt8(ascii: "u"):
                    scalar = try hex4()
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        guard peek() == UInt8(ascii: "\\"), peek(1) == UInt8(ascii: "u") else { throw RulesProblem(at, "Parse error.") }
                        advance(); advance()
                        let low = try hex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw RulesProblem(at, "Parse error.") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar < 0xE000 {
                        throw RulesProblem(at, "Parse error.")
                    }
                default:
                    throw RulesProblem(at, "Parse error.")
                }
                guard let u = Unicode.Scalar(scalar) else { throw RulesProblem(at, "Parse error.") }
                let bytes = Array(String(Character(u)).utf8)
                out += bytes
                sources += Array(repeating: at, count: bytes.count)
                continue
            }
            if c < 0x20 && c != 0x0A && c != 0x09 && c != 0x0D { throw problem("Parse error.") }
            out.append(c)
            sources.append(at)
            advance()
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw RulesProblem(start, "Parse error.") }
        // `here` is past the closing quote, one column after it.
        return RulesString(text: text, position: start, sources: sources, closing: Position(line: here.line, column: here.column - 1))
    }

    mutating func hex4() throws(RulesProblem) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let c = peek() else { throw problem("Parse error.") }
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw problem("Parse error.")
            }
            v = v * 16 + d
            advance()
        }
        return v
    }
}

extension RulesJSON {
    /// Strict JSON of the document (no comments), members in their written order.
    public func strictText(pretty: Bool = true) -> String {
        var out: [UInt8] = []
        write(into: &out, indent: pretty ? 0 : nil)
        return String(decoding: out, as: UTF8.self)
    }

    func write(into out: inout [UInt8], indent: Int?) {
        func newline(_ level: Int) {
            guard indent != nil else { return }
            out.append(0x0A)
            out += Array(repeating: 0x20, count: level * 2)
        }
        let level = indent ?? 0
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let v, _): out += Array((v ? "true" : "false").utf8)
        case .number(let d, _): out += Array(RulesJSON.numberText(d).utf8)
        case .string(let s): RulesJSON.appendString(s.text, to: &out)
        case .array(let items, _):
            out.append(UInt8(ascii: "["))
            for (n, v) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                v.write(into: &out, indent: indent.map { _ in level + 1 })
            }
            if !items.isEmpty { newline(level) }
            out.append(UInt8(ascii: "]"))
        case .object(let members, _):
            out.append(UInt8(ascii: "{"))
            for (n, m) in members.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                RulesJSON.appendString(m.key.text, to: &out)
                out += Array((indent == nil ? ":" : ": ").utf8)
                m.value.write(into: &out, indent: indent.map { _ in level + 1 })
            }
            if !members.isEmpty { newline(level) }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        for c in s.utf8 {
            switch c {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 15)]]
            default: out.append(c)
            }
        }
        out.append(0x22)
    }

    /// Integral values print without a fraction; others with Swift's shortest round-trip text.
    static func numberText(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return "\(d)"
    }
}
