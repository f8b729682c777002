/// Reads rule expressions (JavaScript precedence). Only what truly nests recurses: parentheses,
/// brackets, arguments and the branches of `?:`. A chain of binary operators is read by a loop
/// over a stack of open chains, and prefix operators by a loop, so a rule of 100,000 `||` terms
/// costs no stack. Both the parser's own recursion and the height of the tree it builds are held
/// to `Nesting.expressionLimit`: past it the expression is refused at the token where it goes past.
struct Parser {
    var tokens: [Token]
    var k = 0
    /// Levels of brackets, arguments and branches open now: the parser's own recursion.
    var depth = 0

    static func parse(_ text: String) throws -> Syntax {
        var lexer = Lexer(text)
        var p = Parser(tokens: try lexer.tokens())
        let e = try p.conditional()
        guard case .end = p.current.kind else { throw ExpressionError(p.current.offset, "Parse error.") }
        return e
    }

    var current: Token { tokens[min(k, tokens.count - 1)] }

    func isPunct(_ p: String) -> Bool {
        if case .punct(let q) = current.kind, q == p { return true }
        return false
    }

    mutating func expect(_ p: String) throws {
        guard isPunct(p) else { throw ExpressionError(current.offset, "Parse error.") }
        k += 1
    }

    /// A node whose tree is `height` levels tall, refused past the limit at its own token.
    /// Its text is `start..<end`.
    func node(_ kind: Syntax.Kind, _ offset: Int, height: Int, _ start: Int, _ end: Int) throws -> Syntax {
        guard height <= Nesting.expressionLimit else { throw ExpressionError(offset, Nesting.expressionTooDeep) }
        return Syntax(kind: kind, offset: offset, height: height, start: start, end: end)
    }

    /// The end of the token read last.
    var consumedEnd: Int { k > 0 ? tokens[min(k, tokens.count) - 1].end : 0 }

    mutating func conditional() throws -> Syntax {
        let c = try binary()
        guard isPunct("?") else { return c }
        let question = current.offset
        k += 1
        let a = try nested(at: question)
        let colon = current.offset
        try expect(":")
        let b = try nested(at: colon)
        return try node(.ternary(c, a, b), c.offset, height: max(c.height, a.height, b.height) + 1, c.start, b.end)
    }

    /// An expression one level further in (in brackets, an argument, a branch of `?:`), refused
    /// past the limit at `offset`, the token that opens the level.
    mutating func nested(at offset: Int) throws -> Syntax {
        guard depth < Nesting.expressionLimit else { throw ExpressionError(offset, Nesting.expressionTooDeep) }
        depth += 1
        defer { depth -= 1 }
        return try conditional()
    }

    /// The binary operators, loosest first; each level is left-associative.
    static let levels: [[String]] = [["||"], ["&&"], ["==", "===", "!=", "!=="], ["<", "<=", ">", ">="], ["+", "-"], ["*", "/", "%"]]

    /// The precedence level of a binary operator token; nil for any other token.
    static func level(of token: Token.Kind) -> (Int, String)? {
        guard case .punct(let p) = token, let level = levels.firstIndex(where: { $0.contains(p) }) else { return nil }
        return (level, p)
    }

    /// A chain being read: its first operand, the links so far, and the operator whose right
    /// operand is still to come.
    struct OpenChain {
        let level: Int
        let first: Syntax
        var links: [Syntax.Link] = []
        var op: String
        var at: Int
    }

    /// Operands joined by binary operators. The open chains on the stack have strictly rising
    /// levels; an operator of a looser level ends the tighter chains above it, each becoming
    /// the right operand of the one below (what `a + b * c == d` means).
    mutating func binary() throws -> Syntax {
        var open: [OpenChain] = []
        var operand = try unary()
        while let (level, op) = Parser.level(of: current.kind) {
            operand = try shift(&open, operand, level, op)
        }
        while let top = open.popLast() { operand = try close(top, operand) }
        return operand
    }

    /// Takes the binary operator `op` of `level` after `operand`: ends the tighter chains,
    /// extends or opens the chain of its level, and reads the next operand.
    mutating func shift(_ open: inout [OpenChain], _ operand: Syntax, _ level: Int, _ op: String) throws -> Syntax {
        let at = current.offset
        k += 1
        var left = operand
        while let top = open.last, top.level > level {
            open.removeLast()
            left = try close(top, left)
        }
        if let n = open.indices.last, open[n].level == level {
            // Appended in place, with no copy of the chain held meanwhile: a copy of a long
            // chain's links per operator would be quadratic.
            let link = Syntax.Link(op: open[n].op, offset: open[n].at, operand: left)
            open[n].links.append(link)
            open[n].op = op
            open[n].at = at
        } else {
            open.append(OpenChain(level: level, first: left, op: op, at: at))
        }
        return try unary()
    }

    /// The chain `open` with `last` as the right operand of its pending operator.
    func close(_ open: OpenChain, _ last: Syntax) throws -> Syntax {
        var links = open.links
        links.append(Syntax.Link(op: open.op, offset: open.at, operand: last))
        var height = open.first.height
        for link in links { height = max(height, link.operand.height) }
        return try node(.chain(open.first, links), open.at, height: height + 1, open.first.start, last.end)
    }

    /// Prefix operators, read by a loop, then applied innermost first.
    mutating func unary() throws -> Syntax {
        var prefixes: [(op: String, at: Int)] = []
        while case .punct(let p) = current.kind, p == "!" || p == "-" {
            prefixes.append((p, current.offset))
            k += 1
        }
        var e = try postfix()
        for p in prefixes.reversed() { e = try node(.unary(p.op, e), p.at, height: e.height + 1, p.at, e.end) }
        return e
    }

    mutating func postfix() throws -> Syntax {
        var e = try primary()
        while true {
            if isPunct(".") {
                e = try member(e)
            } else if isPunct("[") {
                e = try index(e)
            } else if isPunct("(") {
                e = try call(e)
            } else {
                return e
            }
        }
    }

    // The postfix operators, each in a function of its own: the frames the parser's recursion
    // stacks stay small (`Nesting.expressionLimit` counts on it).

    mutating func member(_ base: Syntax) throws -> Syntax {
        k += 1
        guard case .identifier(let name) = current.kind else { throw ExpressionError(current.offset, "Parse error.") }
        let at = current.offset
        k += 1
        return try node(.member(base, name), at, height: base.height + 1, base.start, consumedEnd)
    }

    mutating func index(_ base: Syntax) throws -> Syntax {
        let at = current.offset
        k += 1
        let index = try nested(at: at)
        try expect("]")
        return try node(.index(base, index), at, height: max(base.height, index.height) + 1, base.start, consumedEnd)
    }

    mutating func call(_ callee: Syntax) throws -> Syntax {
        let at = current.offset
        k += 1
        let args = try list(until: ")", openedAt: at)
        var height = callee.height
        for a in args { height = max(height, a.height) }
        return try node(.call(callee, args), at, height: height + 1, callee.start, consumedEnd)
    }

    /// Comma-separated expressions up to and including `close`, opened at `offset`.
    mutating func list(until close: String, openedAt offset: Int) throws -> [Syntax] {
        var items: [Syntax] = []
        if !isPunct(close) {
            items.append(try nested(at: offset))
            while isPunct(",") { k += 1; items.append(try nested(at: offset)) }
        }
        try expect(close)
        return items
    }

    mutating func primary() throws -> Syntax {
        if isPunct("(") {
            let at = current.offset
            k += 1
            var e = try nested(at: at)
            try expect(")")
            // Its text takes the parentheses in: an enclosing expression's ends at the `)`.
            e.start = at
            e.end = consumedEnd
            return e
        }
        if isPunct("[") { return try array() }
        return try literal()
    }

    mutating func array() throws -> Syntax {
        let at = current.offset
        k += 1
        let items = try list(until: "]", openedAt: at)
        var height = 0
        for i in items { height = max(height, i.height) }
        return try node(.array(items), at, height: height + 1, at, consumedEnd)
    }

    /// A literal or a name: the operands that nest nothing.
    mutating func literal() throws -> Syntax {
        let t = current
        func leaf(_ kind: Syntax.Kind) -> Syntax { Syntax(kind: kind, offset: t.offset, start: t.offset, end: t.end) }
        switch t.kind {
        case .number(let v): k += 1; return leaf(.number(v))
        case .string(let s): k += 1; return leaf(.string(s))
        case .regex(let body, let flags): k += 1; return leaf(.regex(body: body, flags: flags))
        case .identifier(let name):
            k += 1
            switch name {
            case "true": return leaf(.bool(true))
            case "false": return leaf(.bool(false))
            case "null": return leaf(.null)
            case "var", "let", "const", "new", "typeof", "in", "instanceof", "function", "this", "delete", "void":
                throw ExpressionError(t.offset, "Parse error.")
            default: return leaf(.identifier(name))
            }
        default:
            throw ExpressionError(t.offset, "Parse error.")
        }
    }
}
