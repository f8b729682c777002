import RTDBCore

/// The static types of rule expressions. `anyObject` is `auth` and its members (any member name);
/// `anyPrimitive` is a value only known at run time (`val()`, query bounds, mixed ternaries).
enum StaticType: Equatable, Sendable {
    case bool, number, string, null, regex, snapshot, query, array, anyObject, anyPrimitive

    var isUnknown: Bool { self == .anyObject || self == .anyPrimitive }
    var isStringLike: Bool { self == .string || isUnknown }
    var isNumberLike: Bool { self == .number || isUnknown }
    var isComparable: Bool { !(self == .snapshot || self == .query || self == .regex || self == .array) }
}

enum SnapshotMethod: String, Sendable {
    case val, child, parent, hasChild, hasChildren, exists, getPriority, isNumber, isString, isBoolean
}

enum StringMethod: String, Sendable {
    case contains, beginsWith, endsWith, replace, toLowerCase, toUpperCase, matches
}

/// The order comparisons (numbers with numbers, strings with strings).
enum Comparison: String, Sendable {
    case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
}

/// The arithmetic operators; `+` also joins strings.
enum Arithmetic: String, Sendable {
    case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%"
}

enum QueryField: String, Sendable {
    case orderByKey, orderByValue, orderByPriority, orderByChild, startAt, endAt, equalTo, limitToFirst, limitToLast
}

/// A checked expression, ready to evaluate: every name and method is resolved.
indirect enum Code: Sendable {
    case constant(RuleValue)
    case auth
    case now
    case root
    case data
    case newData
    case query(QueryField)
    /// A `$` variable, by its position among those bound at and above the rule's location
    /// (outermost first: the order a check binds them in as it walks down).
    case wildcard(Int)
    /// A member of an object (`auth.x`, `auth[$k]`), or `length` of a string.
    case member(Code, Code)
    case snapshot(Code, SnapshotMethod, [Code])
    case hasChildrenList(Code, [Code])
    /// A literal argument of `child()`, `hasChild()` or `hasChildren()`, with its keys split
    /// and checked when the rules load (nil: an invalid key, an error where it is used).
    case childKeys(String, [String]?)
    case string(Code, StringMethod, [Code])
    case matches(Code, RuleRegex)
    case not(Code)
    case negate(Code)
    case arithmetic(Arithmetic, Code, Code)
    case equal(Code, Code, negated: Bool)
    case compare(Comparison, Code, Code)
    /// A chain of three or more operands of one precedence level, applied left to right
    /// (`a + b - c` is `(a + b) - c`); two operands are one of the three cases above.
    case fold(Code, [(Operation, Code)])
    /// Every operand true, evaluated in order up to the first false one: a whole `&&` chain.
    case and([Code])
    /// Some operand true, evaluated in order up to the first true one: a whole `||` chain.
    case or([Code])
    case conditional(Code, Code, Code)
    /// Subexpression `Int` of the rule (`RuleSet.Rule.expressions`), reported to an observer.
    /// Only in a rule's `traced` code: the code checks run unobserved has none.
    case mark(Int, Code)
}

/// A binary operator other than `&&` and `||`, as a step of a `Code.fold`.
enum Operation: Sendable {
    case arithmetic(Arithmetic)
    case equal(negated: Bool)
    case compare(Comparison)
}

/// Which rule an expression belongs to: reads cannot see `newData`.
public enum RuleKind: String, Sendable {
    case read = ".read", write = ".write", validate = ".validate"
}

/// Type-checks syntax into `Code`. Every failure is an `ExpressionError` at the
/// offending token, which rejects the whole rules document.
struct Compiler {
    let kind: RuleKind
    /// `$` variables bound at or above the rule's node, outermost first.
    let wildcards: [String]
    /// Where marked code records its subexpressions; nil: no marks.
    var marks: MarkTable? = nil

    func compileRule(_ s: Syntax) throws -> Code {
        let (code, type) = try compile(s)
        guard type == .bool else { throw ExpressionError(s.offset, "Expression must evaluate to a boolean.") }
        return code
    }

    /// One node: a dispatch to the function for its kind, so the frame that recurses once per
    /// level of the tree stays small (`Nesting.expressionLimit` counts on it).
    func compile(_ s: Syntax) throws -> (Code, StaticType) {
        let compiled: (Code, StaticType)
        switch s.kind {
        case .number(let v): return (.constant(.number(v)), .number)
        case .string(let v): return (.constant(.string(v)), .string)
        case .bool(let v): return (.constant(.bool(v)), .bool)
        case .null: return (.constant(.null), .null)
        case .regex:
            throw ExpressionError(s.offset, "A regular expression may only be the argument of matches().")
        case .array:
            throw ExpressionError(s.offset, "An array may only be the argument of hasChildren().")
        case .identifier(let name):
            compiled = try identifier(name, s.offset)
        case .member(let base, let name):
            compiled = try member(base, name, s.offset)
        case .index(let base, let index):
            compiled = try computedIndex(base, index, s.offset)
        case .call(let callee, let args):
            compiled = try call(callee, args, s.offset)
        case .unary(let op, let operand):
            compiled = try unary(op, operand, s.offset)
        case .chain(let first, let links):
            compiled = try chain(first, links)
        case .ternary(let c, let a, let b):
            compiled = try ternary(c, a, b)
        }
        guard let marks else { return compiled }
        return (marks.mark(compiled.0, s), compiled.1)
    }

    func computedIndex(_ base: Syntax, _ index: Syntax, _ offset: Int) throws -> (Code, StaticType) {
        let (b, bt) = try compile(base)
        if bt == .anyObject {
            let (i, it) = try compile(index)
            guard it.isStringLike else { throw ExpressionError(index.offset, "Invalid index: not a string.") }
            return (.member(b, i), .anyObject)
        }
        if case .string(let name) = index.kind, bt == .string || bt == .anyPrimitive || bt == .query {
            return try member(base, name, offset)
        }
        throw ExpressionError(offset, "Invalid [] expression: only auth members take a computed index.")
    }

    func unary(_ op: String, _ operand: Syntax, _ offset: Int) throws -> (Code, StaticType) {
        let (c, t) = try compile(operand)
        if op == "!" {
            guard t == .bool else { throw ExpressionError(offset, "! only operates on booleans.") }
            return (.not(c), .bool)
        }
        guard t.isNumberLike else { throw ExpressionError(offset, "- only operates on numbers.") }
        return (.negate(c), .number)
    }

    func ternary(_ c: Syntax, _ a: Syntax, _ b: Syntax) throws -> (Code, StaticType) {
        let (cc, ct) = try compile(c)
        guard ct == .bool else { throw ExpressionError(c.offset, "Ternary condition must be a boolean.") }
        let (ac, at) = try compile(a)
        let (bc, bt) = try compile(b)
        for (t, o) in [(at, a.offset), (bt, b.offset)] where !t.isComparable {
            throw ExpressionError(o, "Ternary branches must be numbers, booleans, strings or null.")
        }
        return (.conditional(cc, ac, bc), at == bt ? at : .anyPrimitive)
    }

    func identifier(_ name: String, _ offset: Int) throws -> (Code, StaticType) {
        switch name {
        case "auth": return (.auth, .anyObject)
        case "now": return (.now, .number)
        case "root": return (.root, .snapshot)
        case "data": return (.data, .snapshot)
        case "newData" where kind != .read: return (.newData, .snapshot)
        case "query": return (.constant(.null), .query)
        default:
            if name.hasPrefix("$"), let position = wildcards.lastIndex(where: { KeyOrder.same($0, name) }) {
                return (.wildcard(position), .string)
            }
            throw ExpressionError(offset, "Unknown variable '\(Limits.cut(name))'.")
        }
    }

    func member(_ base: Syntax, _ name: String, _ offset: Int) throws -> (Code, StaticType) {
        let (b, bt) = try compile(base)
        switch bt {
        case .anyObject:
            return (.member(b, .constant(.string(name))), .anyObject)
        case .string, .anyPrimitive:
            if name == "length" { return (.member(b, .constant(.string(name))), .number) }
        case .query:
            if let f = QueryField(rawValue: name) {
                switch f {
                case .orderByKey, .orderByValue, .orderByPriority: return (.query(f), .bool)
                case .limitToFirst, .limitToLast: return (.query(f), .anyPrimitive)
                default: return (.query(f), .anyPrimitive)
                }
            }
        default: break
        }
        throw ExpressionError(offset, "No such method/property '\(Limits.cut(name))'.")
    }

    func call(_ callee: Syntax, _ args: [Syntax], _ offset: Int) throws -> (Code, StaticType) {
        let base: Syntax
        let name: String
        switch callee.kind {
        case .member(let b, let n): base = b; name = n
        case .index(let b, let i):
            guard case .string(let n) = i.kind else {
                throw ExpressionError(i.offset, "Invalid method name: a computed method name must be a string literal.")
            }
            base = b; name = n
        default:
            throw ExpressionError(callee.offset, "Type error: not a function.")
        }
        let (b, bt) = try compile(base)
        switch bt {
        case .snapshot:
            guard let m = SnapshotMethod(rawValue: name) else { throw ExpressionError(callee.offset, "No such method/property '\(Limits.cut(name))'.") }
            return try snapshotCall(b, m, args, offset)
        case .string, .anyObject, .anyPrimitive:
            guard let m = StringMethod(rawValue: name) else { throw ExpressionError(callee.offset, "No such method/property '\(Limits.cut(name))'.") }
            return try stringCall(b, m, args, offset)
        default:
            throw ExpressionError(callee.offset, "No such method/property '\(Limits.cut(name))'.")
        }
    }

    func arity(_ args: [Syntax], _ n: Int, _ name: String, _ offset: Int) throws {
        guard args.count == n else {
            throw ExpressionError(offset, "\(name)() takes \(n) argument\(n == 1 ? "" : "s"), not \(args.count).")
        }
    }

    func stringArgument(_ s: Syntax, _ method: String) throws -> Code {
        let (c, t) = try compile(s)
        guard t.isStringLike else { throw ExpressionError(s.offset, "Invalid argument to \(method)(): expected a string.") }
        return c
    }

    /// A path argument: a literal's keys are split and checked once, here, not on every use.
    func childArgument(_ s: Syntax, _ method: String) throws -> Code {
        let code = try stringArgument(s, method)
        if case .constant(.string(let text)) = code { return .childKeys(text, Evaluator.keys(text)) }
        return code
    }

    func snapshotCall(_ b: Code, _ m: SnapshotMethod, _ args: [Syntax], _ offset: Int) throws -> (Code, StaticType) {
        switch m {
        case .val, .getPriority:
            try arity(args, 0, m.rawValue, offset)
            return (.snapshot(b, m, []), .anyPrimitive)
        case .parent:
            try arity(args, 0, m.rawValue, offset)
            return (.snapshot(b, m, []), .snapshot)
        case .exists, .isNumber, .isString, .isBoolean:
            try arity(args, 0, m.rawValue, offset)
            return (.snapshot(b, m, []), .bool)
        case .child:
            try arity(args, 1, m.rawValue, offset)
            return (.snapshot(b, m, [try childArgument(args[0], m.rawValue)]), .snapshot)
        case .hasChild:
            try arity(args, 1, m.rawValue, offset)
            return (.snapshot(b, m, [try childArgument(args[0], m.rawValue)]), .bool)
        case .hasChildren:
            if args.isEmpty { return (.snapshot(b, m, []), .bool) }
            try arity(args, 1, m.rawValue, offset)
            guard case .array(let items) = args[0].kind else {
                throw ExpressionError(args[0].offset, "Invalid argument to hasChildren(): expected an array of strings.")
            }
            if items.isEmpty { throw ExpressionError(args[0].offset, "Invalid argument to hasChildren(): the array is empty.") }
            return (.hasChildrenList(b, try items.map { try childArgument($0, "hasChildren") }), .bool)
        }
    }

    func stringCall(_ b: Code, _ m: StringMethod, _ args: [Syntax], _ offset: Int) throws -> (Code, StaticType) {
        switch m {
        case .contains, .beginsWith, .endsWith:
            try arity(args, 1, m.rawValue, offset)
            return (.string(b, m, [try stringArgument(args[0], m.rawValue)]), .bool)
        case .replace:
            try arity(args, 2, m.rawValue, offset)
            return (.string(b, m, [try stringArgument(args[0], m.rawValue), try stringArgument(args[1], m.rawValue)]), .string)
        case .toLowerCase, .toUpperCase:
            try arity(args, 0, m.rawValue, offset)
            return (.string(b, m, []), .string)
        case .matches:
            try arity(args, 1, m.rawValue, offset)
            guard case .regex(let body, let flags) = args[0].kind else {
                throw ExpressionError(args[0].offset, "Invalid argument to matches(): expected a regular expression literal.")
            }
            do {
                return (.matches(b, try RuleRegex(body: body, flags: flags)), .bool)
            } catch {
                throw ExpressionError(args[0].offset, error.message)
            }
        }
    }

    /// A chain, checked and built left to right as the left-nested tree it stands for
    /// (`((a op b) op c) …`) would be, with the same errors at the same places; but an `&&` or
    /// `||` chain becomes one list and a longer chain of another level one fold, so no walk of
    /// it recurses per operator.
    func chain(_ first: Syntax, _ links: [Syntax.Link]) throws -> (Code, StaticType) {
        var (code, type) = try compile(first)
        // Where an error about the left operand points: the first operand, then the node the
        // previous operator roots.
        var leftOffset = first.offset
        var operands: [Code] = [code]
        var steps: [(Operation, Code)] = []
        var logical: String? = nil
        for link in links {
            let (rc, rt) = try compile(link.operand)
            let (operation, t) = try Compiler.check(link.op, type, leftOffset, rt, link.operand.offset, link.offset)
            if let operation {
                steps.append((operation, rc))
                if steps.count == 1 { code = Compiler.pair(operation, code, rc) }
            } else {
                logical = link.op
                operands.append(rc)
            }
            type = t
            leftOffset = link.offset
        }
        if let logical { return (logical == "&&" ? .and(operands) : .or(operands), .bool) }
        if steps.count > 1 { return (.fold(operands[0], steps), type) }
        return (code, type)
    }

    /// The code of `l op r` for one operator.
    static func pair(_ operation: Operation, _ l: Code, _ r: Code) -> Code {
        switch operation {
        case .arithmetic(let a): return .arithmetic(a, l, r)
        case .equal(let negated): return .equal(l, r, negated: negated)
        case .compare(let c): return .compare(c, l, r)
        }
    }

    /// The type check of `left op right` (offsets: the left operand's, the right operand's,
    /// the operator's): its operation (nil for `&&` and `||`) and result type.
    static func check(_ op: String, _ lt: StaticType, _ leftOffset: Int, _ rt: StaticType, _ rightOffset: Int,
                      _ offset: Int) throws -> (Operation?, StaticType) {
        switch op {
        case "&&", "||":
            guard lt == .bool else { throw ExpressionError(leftOffset, "\(op) only operates on booleans.") }
            guard rt == .bool else { throw ExpressionError(rightOffset, "\(op) only operates on booleans.") }
            return (nil, .bool)
        case "==", "===", "!=", "!==":
            guard lt.isComparable else {
                throw ExpressionError(offset, "Invalid \(op) expression: left operand is not a number, boolean, string, or null.")
            }
            guard rt.isComparable else {
                throw ExpressionError(offset, "Invalid \(op) expression: right operand is not a number, boolean, string, or null.")
            }
            return (.equal(negated: op.hasPrefix("!")), .bool)
        case "<", "<=", ">", ">=":
            for (t, side) in [(lt, "left"), (rt, "right")] where !t.isComparable || t == .bool {
                throw ExpressionError(offset, "Invalid \(op) expression: \(side) operand is not a number or string.")
            }
            guard let comparison = Comparison(rawValue: op) else { throw ExpressionError(offset, "Parse error.") }
            return (.compare(comparison), .bool)
        case "+":
            for (t, side) in [(lt, "left"), (rt, "right")] where !(t == .number || t == .string || t.isUnknown) {
                throw ExpressionError(offset, "Invalid + expression: \(side) operand is not a number or string.")
            }
            let type: StaticType = (lt == .string || rt == .string) ? .string : (lt == .number && rt == .number ? .number : .anyPrimitive)
            return (.arithmetic(.add), type)
        default:   // - * / %
            for (t, side) in [(lt, "left"), (rt, "right")] where !t.isNumberLike {
                throw ExpressionError(offset, "Invalid \(op) expression: \(side) operand is not a number.")
            }
            guard let arithmetic = Arithmetic(rawValue: op) else { throw ExpressionError(offset, "Parse error.") }
            return (.arithmetic(arithmetic), .number)
        }
    }
}
