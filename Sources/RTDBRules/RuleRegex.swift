import RTDBCore

/// The regular-expression subset of rules, parsed and matched here (no
/// Foundation): literal characters, `\` escapes, `.`, `\s \w \d \S \W \D`, sets `[…]` / `[^…]`
/// with ranges, groups, alternation, `* + ? {n} {n,} {n,m}`; `^` only first and `$` only last
/// in the whole pattern; no empty alternatives; the only flag is `i`. Matching is a search
/// over Unicode scalars (unanchored unless `^` / `$`), by backtracking with a step budget.
public struct RuleRegex: Sendable {
    indirect enum Node: Sendable {
        case char(Unicode.Scalar)
        case any
        case set([SetItem], negated: Bool)
        case group([[Node]])               // alternatives, each a sequence
        case `repeat`(Node, min: Int, max: Int?)

        /// Matches exactly one scalar (a character, `.` or a set).
        var isSingleScalar: Bool {
            switch self {
            case .char, .any, .set: return true
            case .group, .repeat: return false
            }
        }
    }

    enum SetItem: Sendable {
        case scalar(Unicode.Scalar)
        case range(Unicode.Scalar, Unicode.Scalar)
        case cls(Character)   // d w s D W S
    }

    let alternatives: [[Node]]
    let anchoredStart: Bool
    let anchoredEnd: Bool
    let caseInsensitive: Bool

    /// Why `body`/`flags` is not a valid rules regex: nil when it is.
    public init(body: String, flags: String) throws(RegexProblem) {
        if !flags.isEmpty && flags != "i" {
            throw RegexProblem("Invalid regular expression flags '\(Limits.cut(flags))': only 'i' is supported.")
        }
        caseInsensitive = flags == "i"
        var scalars = Array(body.unicodeScalars)
        var start = false, end = false
        if scalars.first == "^" { start = true; scalars.removeFirst() }
        if let last = scalars.last, last == "$", !RuleRegex.isEscaped(scalars, scalars.count - 1) {
            end = true
            scalars.removeLast()
        }
        anchoredStart = start
        anchoredEnd = end
        var p = PatternParser(s: scalars)
        alternatives = try p.alternation(depth: 0)
        if p.i < scalars.count { throw RegexProblem("Invalid regular expression: unmatched ')'.") }
    }

    static func isEscaped(_ s: [Unicode.Scalar], _ at: Int) -> Bool {
        var n = 0
        var k = at - 1
        while k >= 0, s[k] == "\\" { n += 1; k -= 1 }
        return n % 2 == 1
    }

    /// True when the pattern matches somewhere in `text` (honouring the anchors).
    /// Throws when the search exceeds its step budget.
    public func matches(_ text: String) throws(RegexProblem) -> Bool {
        let s = Array(text.unicodeScalars)
        let m = Matcher(s: s, ci: caseInsensitive, anchoredEnd: anchoredEnd)
        let lastStart = anchoredStart ? 0 : s.count
        var i = 0
        while i <= lastStart {
            if try m.alternatives(alternatives, i, { pos in !self.anchoredEnd || pos == s.count }) { return true }
            i += 1
        }
        return false
    }
}

public struct RegexProblem: Error, Sendable {
    public var message: String
    init(_ message: String) { self.message = message }
}

struct PatternParser {
    let s: [Unicode.Scalar]
    var i = 0

    mutating func alternation(depth: Int) throws(RegexProblem) -> [[RuleRegex.Node]] {
        if depth > 50 { throw RegexProblem("Invalid regular expression: groups nested too deeply.") }
        var alts: [[RuleRegex.Node]] = []
        while true {
            let seq = try sequence(depth: depth)
            if seq.isEmpty { throw RegexProblem("Invalid regular expression: empty alternative.") }
            alts.append(seq)
            if i < s.count, s[i] == "|" { i += 1; continue }
            return alts
        }
    }

    mutating func sequence(depth: Int) throws(RegexProblem) -> [RuleRegex.Node] {
        var out: [RuleRegex.Node] = []
        while i < s.count, s[i] != "|", s[i] != ")" {
            var atom = try self.atom(depth: depth)
            // One quantifier at most, as in JavaScript: a second one (`a**`, `a{2}{3}`) is where
            // an atom is expected and has nothing to repeat. Stacked quantifiers would also nest
            // the pattern without bound.
            if i < s.count {
                let c = s[i]
                if c == "*" { i += 1; atom = .repeat(atom, min: 0, max: nil) }
                else if c == "+" { i += 1; atom = .repeat(atom, min: 1, max: nil) }
                else if c == "?" { i += 1; atom = .repeat(atom, min: 0, max: 1) }
                else if c == "{", let (lo, hi) = try braces() { atom = .repeat(atom, min: lo, max: hi) }
            }
            out.append(atom)
        }
        return out
    }

    /// `{n}`, `{n,}`, `{n,m}`; nil (and no input consumed) when the brace starts no quantifier.
    mutating func braces() throws(RegexProblem) -> (Int, Int?)? {
        var k = i + 1
        func digits() -> Int? {
            var v = 0, n = 0
            while k < s.count, let d = Int(String(s[k])), s[k].isASCII, n < 6 { v = v * 10 + d; k += 1; n += 1 }
            return n == 0 ? nil : v
        }
        guard let lo = digits() else { return nil }
        var hi: Int? = lo
        if k < s.count, s[k] == "," {
            k += 1
            hi = digits()
        }
        guard k < s.count, s[k] == "}" else { return nil }
        if let h = hi, h < lo { throw RegexProblem("Invalid regular expression: numbers out of order in {} quantifier.") }
        i = k + 1
        return (lo, hi)
    }

    mutating func atom(depth: Int) throws(RegexProblem) -> RuleRegex.Node {
        let c = s[i]
        switch c {
        case "(":
            i += 1
            // Non-capturing groups are accepted; other `(?` forms are not in the subset.
            if i + 1 < s.count, s[i] == "?" {
                guard s[i + 1] == ":" else { throw RegexProblem("Invalid regular expression: unsupported group.") }
                i += 2
            }
            let alts = try alternation(depth: depth + 1)
            guard i < s.count, s[i] == ")" else { throw RegexProblem("Invalid regular expression: missing ')'.") }
            i += 1
            return .group(alts)
        case "[":
            return try set()
        case ".":
            i += 1
            return .any
        case "\\":
            i += 1
            guard i < s.count else { throw RegexProblem("Invalid regular expression: \\ at end of pattern.") }
            let e = s[i]
            i += 1
            switch e {
            case "d", "w", "s", "D", "W", "S": return .set([.cls(Character(e))], negated: false)
            case "n": return .char("\n")
            case "t": return .char("\t")
            case "r": return .char("\r")
            default: return .char(e)
            }
        case "^", "$":
            throw RegexProblem("Invalid regular expression: '\(c)' may only start ('^') or end ('$') the pattern.")
        case "*", "+", "?":
            throw RegexProblem("Invalid regular expression: nothing to repeat.")
        case "{":
            if try braces() != nil { throw RegexProblem("Invalid regular expression: nothing to repeat.") }
            i += 1
            return .char(c)
        default:
            i += 1
            return .char(c)
        }
    }

    mutating func set() throws(RegexProblem) -> RuleRegex.Node {
        i += 1
        var negated = false
        if i < s.count, s[i] == "^" { negated = true; i += 1 }
        var items: [RuleRegex.SetItem] = []
        var first = true
        while true {
            guard i < s.count else { throw RegexProblem("Invalid regular expression: missing ']'.") }
            var c = s[i]
            if c == "]" && !first { i += 1; break }
            first = false
            i += 1
            if c == "\\" {
                guard i < s.count else { throw RegexProblem("Invalid regular expression: \\ at end of pattern.") }
                let e = s[i]
                i += 1
                switch e {
                case "d", "w", "s", "D", "W", "S": items.append(.cls(Character(e))); continue
                case "n": c = "\n"
                case "t": c = "\t"
                case "r": c = "\r"
                default: c = e
                }
            }
            if i + 1 < s.count, s[i] == "-", s[i + 1] != "]" {
                var hi = s[i + 1]
                i += 2
                if hi == "\\", i < s.count { hi = s[i]; i += 1 }
                if hi.value < c.value { throw RegexProblem("Invalid regular expression: range out of order in character class.") }
                items.append(.range(c, hi))
            } else {
                items.append(.scalar(c))
            }
        }
        return .set(items, negated: negated)
    }
}

/// Backtracking matcher in continuation-passing style; every step counts against a budget so a
/// pathological pattern fails (as a rule error) instead of hanging the server.
final class Matcher {
    let s: [Unicode.Scalar]
    let ci: Bool
    let anchoredEnd: Bool
    var steps = 0
    /// Repetitions of groups in progress (each holds a few stack frames).
    var nesting = 0
    /// At most this many: a repetition of a group takes about ten frames (5-10 KB in a debug
    /// build), and this many fit the 8 MB stack of every thread that checks rules (the main
    /// thread, and `startDetachedThread`'s) with room for the rest of the evaluation.
    static let maxNesting = 500
    init(s: [Unicode.Scalar], ci: Bool, anchoredEnd: Bool) {
        self.s = s
        self.ci = ci
        self.anchoredEnd = anchoredEnd
    }
    static let budget = 200_000

    func tick() throws(RegexProblem) {
        steps += 1
        if steps > Matcher.budget { throw RegexProblem("regular expression too expensive") }
    }

    func alternatives(_ alts: [[RuleRegex.Node]], _ pos: Int, _ k: (Int) throws(RegexProblem) -> Bool) throws(RegexProblem) -> Bool {
        for seq in alts {
            if try sequence(seq[...], pos, k) { return true }
        }
        return false
    }

    func sequence(_ seq: ArraySlice<RuleRegex.Node>, _ pos: Int, _ k: (Int) throws(RegexProblem) -> Bool) throws(RegexProblem) -> Bool {
        try tick()
        guard let first = seq.first else { return try k(pos) }
        let rest = seq.dropFirst()
        return try node(first, pos) { (p: Int) throws(RegexProblem) -> Bool in try self.sequence(rest, p, k) }
    }

    func node(_ n: RuleRegex.Node, _ pos: Int, _ k: (Int) throws(RegexProblem) -> Bool) throws(RegexProblem) -> Bool {
        try tick()
        switch n {
        case .char, .any, .set:
            guard pos < s.count, single(n, s[pos]) else { return false }
            return try k(pos + 1)
        case .group(let alts):
            return try alternatives(alts, pos, k)
        case .repeat(let inner, let lo, let hi):
            return try repeated(inner, lo, hi, 0, pos, k)
        }
    }

    /// Greedy repetition: try one more (if allowed and progress is made), then stop here.
    /// A repeated single scalar (`a*`, `.+`, `[a-z]{2,}`) is matched by loops; a repeated group
    /// (`(ab)*`) nests a call per repetition, so its repetitions are bounded (`maxNesting`):
    /// past that the match fails as too expensive rather than running out of stack.
    func repeated(_ inner: RuleRegex.Node, _ lo: Int, _ hi: Int?, _ count: Int, _ pos: Int,
                           _ k: (Int) throws(RegexProblem) -> Bool) throws(RegexProblem) -> Bool {
        if count == 0, inner.isSingleScalar { return try repeatedScalar(inner, lo, hi, pos, k) }
        try tick()
        if hi.map({ count < $0 }) ?? true {
            nesting += 1
            defer { nesting -= 1 }
            if nesting > Matcher.maxNesting { throw RegexProblem("regular expression too expensive") }
            let more = try node(inner, pos) { (p: Int) throws(RegexProblem) -> Bool in
                if p == pos && count >= lo { return false }   // an empty iteration makes no progress
                return try self.repeated(inner, lo, hi, count + 1, p, k)
            }
            if more { return true }
        }
        return count >= lo ? try k(pos) : false
    }

    /// Repetitions of a single scalar, greedy, without recursion: as many as match (up to
    /// `hi`), then the rest of the pattern from the longest run to the shortest (at least `lo`):
    /// the order the recursive form tries them in, and no stack for a long text.
    func repeatedScalar(_ inner: RuleRegex.Node, _ lo: Int, _ hi: Int?, _ pos: Int,
                        _ k: (Int) throws(RegexProblem) -> Bool) throws(RegexProblem) -> Bool {
        var end = pos
        while hi.map({ end - pos < $0 }) ?? true, end < s.count, single(inner, s[end]) {
            try tick()
            end += 1
        }
        while end - pos >= lo {
            try tick()
            if try k(end) { return true }
            if end == pos { break }
            end -= 1
        }
        return false
    }

    func single(_ n: RuleRegex.Node, _ c: Unicode.Scalar) -> Bool {
        switch n {
        case .char(let x): return same(x, c)
        case .any: return c != "\n" && c != "\r" && c != "\u{2028}" && c != "\u{2029}"
        case .set(let items, let negated):
            let hit = items.contains { item in
                switch item {
                case .scalar(let x): return same(x, c)
                case .range(let lo, let hi):
                    if lo.value <= c.value && c.value <= hi.value { return true }
                    guard ci else { return false }
                    let alt = folded(c)
                    return alt.contains { lo.value <= $0.value && $0.value <= hi.value }
                case .cls(let k): return Matcher.inClass(k, c)
                }
            }
            return hit != negated
        default: return false
        }
    }

    func same(_ a: Unicode.Scalar, _ b: Unicode.Scalar) -> Bool {
        if a == b { return true }
        guard ci else { return false }
        return folded(a).contains { folded(b).contains($0) }
    }

    /// The scalar in lower and upper case (single-scalar mappings only).
    func folded(_ c: Unicode.Scalar) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = [c]
        let lower = c.properties.lowercaseMapping.unicodeScalars
        let upper = c.properties.uppercaseMapping.unicodeScalars
        if lower.count == 1, let l = lower.first { out.append(l) }
        if upper.count == 1, let u = upper.first { out.append(u) }
        return out
    }

    static func inClass(_ k: Character, _ c: Unicode.Scalar) -> Bool {
        let v = c.value
        switch k {
        case "d": return v >= 0x30 && v <= 0x39
        case "D": return !(v >= 0x30 && v <= 0x39)
        case "w": return isWord(v)
        case "W": return !isWord(v)
        case "s": return isSpace(c)
        case "S": return !isSpace(c)
        default: return false
        }
    }

    static func isWord(_ v: UInt32) -> Bool {
        (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
    }

    static func isSpace(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: return true
        default: return false
        }
    }
}
