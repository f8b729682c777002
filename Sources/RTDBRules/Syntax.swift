import RTDBCore

/// The syntax of one rule expression as the parser reads it, before any
/// name or type is checked. `offset` is the UTF-8 offset of the node's first token in the
/// expression text (of a chain, its last operator's: where the left-nested tree the chain
/// stands for has its root). `height` is how many levels the tree has below this node, which
/// every walk of it recurses through (`Nesting.expressionLimit` bounds it). `start..<end` is
/// the UTF-8 range of the whole node's text (a parenthesised operand's without its
/// parentheses): where a trace or a coverage report marks it.
struct Syntax {
    indirect enum Kind {
        case number(Double)
        case string(String)
        case bool(Bool)
        case null
        case regex(body: String, flags: String)
        case identifier(String)
        case member(Syntax, String)
        case index(Syntax, Syntax)
        case call(Syntax, [Syntax])
        case unary(String, Syntax)
        /// Operands of one precedence level joined left to right (`a || b || c`, `a + b - c`),
        /// as a list: a long flat chain adds one level, not one per operator.
        case chain(Syntax, [Link])
        case ternary(Syntax, Syntax, Syntax)
        case array([Syntax])
    }
    var kind: Kind
    var offset: Int
    var height = 0
    var start = 0
    var end = 0

    /// One operator of a chain and the operand to its right.
    struct Link {
        var op: String
        var offset: Int
        var operand: Syntax
    }
}

/// A parse or check failure at a byte offset of the expression.
struct ExpressionError: Error {
    var offset: Int
    var message: String
    init(_ offset: Int, _ message: String) {
        self.offset = offset
        self.message = message
    }
}

struct Token {
    enum Kind: Equatable {
        case number(Double)
        case string(String)
        case identifier(String)
        case punct(String)
        case regex(body: String, flags: String)
        case end
    }
    var kind: Kind
    var offset: Int
    /// Just past the token's last byte.
    var end = 0
}

/// Splits an expression into tokens. A `/` starts a regular expression literal where an operand
/// is expected and is division elsewhere (the JavaScript rule).
struct Lexer {
    let b: [UInt8]
    var i = 0

    init(_ text: String) { b = Array(text.utf8) }

    static let punctuators: [String] = ["===", "!==", "==", "!=", "<=", ">=", "&&", "||",
                                        "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", ".", ",", "(", ")", "[", "]"]
    /// Operators the language does not have: refused as a parse error rather than misread.
    static let refused: [String] = ["**", "++", "--", "<<", ">>", "=>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="]

    mutating func tokens() throws -> [Token] {
        var out: [Token] = []
        var operandExpected = true
        while true {
            while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
            guard i < b.count else { out.append(Token(kind: .end, offset: i, end: i)); return out }
            let start = i
            let c = b[i]
            if isIdentStart(c) {
                while i < b.count, isIdentPart(b[i]) { i += 1 }
                let name = String(decoding: b[start..<i], as: UTF8.self)
                out.append(Token(kind: .identifier(name), offset: start, end: i))
                operandExpected = false
                continue
            }
            if isDigit(c) || (c == UInt8(ascii: ".") && i + 1 < b.count && isDigit(b[i + 1])) {
                let v = try number()
                out.append(Token(kind: .number(v), offset: start, end: i))
                operandExpected = false
                continue
            }
            if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") {
                let v = try string(quote: c)
                out.append(Token(kind: .string(v), offset: start, end: i))
                operandExpected = false
                continue
            }
            if c == UInt8(ascii: "/") && operandExpected {
                let v = try regex()
                out.append(Token(kind: v, offset: start, end: i))
                operandExpected = false
                continue
            }
            if c >= 0x80 { throw ExpressionError(start, "Parse error.") }
            for r in Lexer.refused where matches(r) { throw ExpressionError(start, "Parse error.") }
            guard let p = Lexer.punctuators.first(where: { matches($0) }) else {
                throw ExpressionError(start, "Parse error.")
            }
            // A lone `=` (assignment), `&`, `|`, `;`, `{`, `` ` `` and friends fall through here.
            i += p.utf8.count
            out.append(Token(kind: .punct(p), offset: start, end: i))
            operandExpected = !(p == ")" || p == "]")
        }
    }

    func matches(_ p: String) -> Bool {
        let u = Array(p.utf8)
        guard i + u.count <= b.count else { return false }
        for k in 0..<u.count where b[i + k] != u[k] { return false }
        return true
    }

    func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    func isIdentStart(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_") || c == UInt8(ascii: "$")
    }
    func isIdentPart(_ c: UInt8) -> Bool { isIdentStart(c) || isDigit(c) }

    mutating func number() throws -> Double {
        let start = i
        if b[i] == UInt8(ascii: "0"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "x") || b[i + 1] == UInt8(ascii: "X") {
            i += 2
            let hs = i
            while i < b.count, isHex(b[i]) { i += 1 }
            guard i > hs, let v = UInt64(String(decoding: b[hs..<i], as: UTF8.self), radix: 16) else {
                throw ExpressionError(start, "Parse error.")
            }
            if i < b.count, isIdentPart(b[i]) { throw ExpressionError(start, "Parse error.") }
            return Double(v)
        }
        while i < b.count, isDigit(b[i]) { i += 1 }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            let ds = i
            while i < b.count, isDigit(b[i]) { i += 1 }
            if i == ds { throw ExpressionError(start, "Parse error.") }
        }
        if i < b.count, isIdentPart(b[i]) { throw ExpressionError(start, "Parse error.") }
        guard let v = Double(String(decoding: b[start..<i], as: UTF8.self)) else { throw ExpressionError(start, "Parse error.") }
        return v
    }

    func isHex(_ c: UInt8) -> Bool { isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66) }

    /// A quoted string with JavaScript escapes.
    mutating func string(quote: UInt8) throws -> String {
        let start = i
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < b.count else { throw ExpressionError(start, "Parse error.") }
            let c = b[i]
            if c == quote { i += 1; break }
            if c == 0x0A || c == 0x0D { throw ExpressionError(start, "Parse error.") }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < b.count else { throw ExpressionError(start, "Parse error.") }
            let e = b[i]
            i += 1
            if let control = JSONReader.controlEscape(e) { out.append(control); continue }
            switch e {
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "0"): out.append(0x00)
            case UInt8(ascii: "x"), UInt8(ascii: "u"):
                let n = e == UInt8(ascii: "x") ? 2 : 4
                guard i + n <= b.count, let v = UInt32(String(decoding: b[i..<(i + n)], as: UTF8.self), radix: 16),
                      let u = Unicode.Scalar(v) else { throw ExpressionError(i - 2, "Parse error.") }
                i += n
                out += Array(String(Character(u)).utf8)
            default: out.append(e)   // \' \" \\ and any other character stand for themselves
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw ExpressionError(start, "Parse error.") }
        return s
    }

    /// `/body/flags`: the body runs to the first unescaped `/` outside a character class.
    mutating func regex() throws -> Token.Kind {
        let start = i
        i += 1
        var inClass = false
        let bodyStart = i
        while true {
            guard i < b.count, b[i] != 0x0A else { throw ExpressionError(start, "Parse error.") }
            let c = b[i]
            if c == UInt8(ascii: "\\") { i += 2; continue }
            if c == UInt8(ascii: "[") { inClass = true } else if c == UInt8(ascii: "]") { inClass = false }
            else if c == UInt8(ascii: "/") && !inClass { break }
            i += 1
        }
        guard i <= b.count else { throw ExpressionError(start, "Parse error.") }
        let body = String(decoding: b[bodyStart..<i], as: UTF8.self)
        i += 1
        let fs = i
        while i < b.count, isIdentPart(b[i]) { i += 1 }
        return .regex(body: body, flags: String(decoding: b[fs..<i], as: UTF8.self))
    }
}
