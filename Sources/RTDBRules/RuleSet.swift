import RTDBCore

/// A loaded rules document: the source as given, and the rule tree with every
/// expression compiled. Loading either succeeds completely or reports every problem found, each
/// with its line and column in the file. Immutable once loaded, so one instance is shared by
/// every thread that checks requests.
public final class RuleSet: Sendable {
    /// One `.read`, `.write` or `.validate` of the document.
    public final class Rule: Sendable {
        /// What checks evaluate.
        let code: Code
        /// The same with each reported subexpression marked: what an observed check evaluates.
        let traced: Code
        /// The expression as written (`true`/`false` for a boolean).
        public let text: String
        public let kind: RuleKind
        /// Its place in the rules: `rules/users/$uid/.write`.
        public let label: String
        /// Where the expression lies in the file (a boolean's literal; a string's text
        /// inside its quotes).
        public let range: SourceRange
        /// The subexpressions an observer is told about, by the index it is told.
        public let expressions: [RuleExpression]
        /// What `Coverage.counter` counts for it.
        let counters: RuleCounters

        init(code: Code, traced: Code, text: String, kind: RuleKind, label: String, range: SourceRange,
             expressions: [RuleExpression] = []) {
            self.code = code
            self.kind = kind
            self.traced = traced
            self.text = text
            self.label = label
            self.range = range
            self.expressions = expressions
            counters = RuleCounters(expressions: expressions.count)
        }
    }

    /// One location of the rule tree. Built once when the rules load and never changed (constants:
    /// checks read them without exclusivity bookkeeping).
    final class TreeNode: Sendable {
        let read: Rule?
        let write: Rule?
        let validate: Rule?
        let indexOn: [String]
        let children: [(key: String, node: TreeNode)]
        let wildcard: (name: String, node: TreeNode)?
        /// True when no rule node lies below this one.
        let isLeaf: Bool

        init(read: Rule? = nil, write: Rule? = nil, validate: Rule? = nil, indexOn: [String] = [],
             children: [(key: String, node: TreeNode)] = [], wildcard: (name: String, node: TreeNode)? = nil) {
            self.read = read
            self.write = write
            self.validate = validate
            self.indexOn = indexOn
            self.children = children
            self.wildcard = wildcard
            isLeaf = children.isEmpty && wildcard == nil
        }

        func literal(_ key: String) -> TreeNode? {
            for c in children where KeyOrder.same(c.key, key) { return c.node }
            return nil
        }

        /// The child rule node for `key`: a literal child, else the wildcard's, which binds
        /// its variable to `key` (`binds`).
        func match(_ key: String) -> (node: TreeNode, binds: Bool)? {
            if let n = literal(key) { return (n, false) }
            if let w = wildcard { return (w.node, true) }
            return nil
        }

        var isEmpty: Bool {
            read == nil && write == nil && validate == nil && indexOn.isEmpty && children.isEmpty && wildcard == nil
        }
    }

    /// The text the document was loaded from, comments kept.
    public let source: String
    /// The parsed document.
    public let document: RulesJSON
    let root: TreeNode

    /// Everything allowed: what a server without rules runs under.
    public static let open: RuleSet = {
        // The literal below is valid; `try?` keeps the load path free of force-unwraps.
        (try? RuleSet(#"{"rules":{".read":true,".write":true}}"#)) ?? RuleSet(empty: ())
    }()

    /// Nothing allowed (to anyone but the admin): what a server enforces when the rules it
    /// should enforce cannot be read, failing closed rather than open.
    public static let closed = RuleSet(empty: ())

    private init(empty: ()) {
        source = "{\"rules\":{}}"
        document = .object([], Position(line: 1, column: 1))
        root = TreeNode()
    }

    /// Loads a rules document; throws `RulesError` listing every problem.
    public init(_ text: String) throws(RulesError) {
        source = text
        let doc: RulesJSON
        do { doc = try RulesJSONReader.parse(Array(text.utf8)) } catch { throw RulesError(problems: [error]) }
        document = doc
        var problems: [RulesProblem] = []
        guard case .object(let members, let pos) = doc else {
            throw RulesError(problems: [RulesProblem(doc.position, "Expected 'rules' property.")])
        }
        var tree: TreeNode?
        for m in members {
            if m.key.text == "rules" {
                if tree != nil { problems.append(RulesProblem(m.key.position, "Duplicate 'rules' property.")); continue }
                tree = RuleSet.load(m.value, path: [], wildcards: [], problems: &problems)
            } else {
                problems.append(RulesProblem(m.key.position, "Unexpected top-level property '\(Limits.cut(m.key.text))': only 'rules' is allowed."))
            }
        }
        guard let tree else {
            problems.append(RulesProblem(Position(line: pos.line, column: pos.column + 1), "Expected 'rules' property."))
            throw RulesError(problems: problems)
        }
        if !problems.isEmpty { throw RulesError(problems: problems.sorted { ($0.position.line, $0.position.column) < ($1.position.line, $1.position.column) }) }
        root = tree
    }

    /// The rule node `value` at `path` (its keys in the rules, wildcards as `$name`).
    static func load(_ value: RulesJSON, path: [String], wildcards: [String], problems: inout [RulesProblem]) -> TreeNode {
        guard case .object(let members, _) = value else {
            problems.append(RulesProblem(value.position, "Rules must be an object."))
            return TreeNode()
        }
        // The node's parts, gathered before it is built.
        var node = (read: Rule?.none, write: Rule?.none, validate: Rule?.none, indexOn: [String](),
                    children: [(key: String, node: TreeNode)](), wildcard: (name: String, node: TreeNode)?.none)
        var seen: [String] = []
        for m in members {
            let key = m.key.text
            if seen.contains(where: { KeyOrder.same($0, key) }) {
                problems.append(RulesProblem(m.key.position, "Duplicate key '\(Limits.cut(key))'."))
                continue
            }
            seen.append(key)
            switch key {
            case ".read", ".write", ".validate":
                let kind = RuleKind(rawValue: key) ?? .read
                guard let rule = compileRule(m.value, kind: kind, label: ((["rules"] + path + [key]).joined(separator: "/")),
                                              wildcards: wildcards, problems: &problems) else { continue }
                switch kind {
                case .read: node.read = rule
                case .write: node.write = rule
                case .validate: node.validate = rule
                }
            case ".indexOn":
                node.indexOn = indexOn(m.value, problems: &problems)
            default:
                if key.hasPrefix(".") {
                    problems.append(RulesProblem(m.key.position, "Invalid key '\(Limits.cut(key))': keys starting with '.' are reserved."))
                } else if key.hasPrefix("$") {
                    let name = key
                    let rest = String(name.dropFirst())
                    if rest.isEmpty || Limits.keyProblem(rest) != nil {
                        problems.append(RulesProblem(m.key.position, "Invalid wildcard name '\(Limits.cut(key))'."))
                    } else if node.wildcard != nil {
                        problems.append(RulesProblem(m.key.position, "Only one wildcard ('$' key) is allowed per location: '\(Limits.cut(key))'."))
                    } else if wildcards.contains(where: { KeyOrder.same($0, name) }) {
                        problems.append(RulesProblem(m.key.position, "Wildcard '\(Limits.cut(key))' is already bound above this location."))
                    } else {
                        node.wildcard = (name, load(m.value, path: path + [key], wildcards: wildcards + [name], problems: &problems))
                    }
                } else if Limits.keyProblem(key) != nil {
                    problems.append(RulesProblem(m.key.position,
                        "Key names can't contain \".\", \"#\", \"$\", \"/\", \"[\", or \"]\" (unbound names start with \"$\"): '\(Limits.cut(key))'."))
                } else {
                    node.children.append((key, load(m.value, path: path + [key], wildcards: wildcards, problems: &problems)))
                }
            }
        }
        return TreeNode(read: node.read, write: node.write, validate: node.validate, indexOn: node.indexOn,
                        children: node.children, wildcard: node.wildcard)
    }

    static func compileRule(_ value: RulesJSON, kind: RuleKind, label: String, wildcards: [String],
                            problems: inout [RulesProblem]) -> Rule? {
        switch value {
        case .bool(let b, let at):
            let text = b ? "true" : "false"
            let range = SourceRange(start: at, end: Position(line: at.line, column: at.column + text.count))
            return Rule(code: .constant(.bool(b)), traced: .constant(.bool(b)), text: text, kind: kind, label: label, range: range)
        case .string(let s):
            if s.text.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
                problems.append(RulesProblem(s.position, "\(kind.rawValue) rule is empty."))
                return nil
            }
            do {
                let syntax = try Parser.parse(s.text)
                let code = try Compiler(kind: kind, wildcards: wildcards).compileRule(syntax)
                // Compiled again with marks: the same checks pass, so this cannot throw.
                let marks = MarkTable()
                let traced = try Compiler(kind: kind, wildcards: wildcards, marks: marks).compileRule(syntax)
                let bytes = Array(s.text.utf8)
                let expressions = marks.ranges.map {
                    RuleExpression(range: s.range($0.start, $0.end), text: String(decoding: bytes[$0.start..<$0.end], as: UTF8.self))
                }
                return Rule(code: code, traced: traced, text: s.text, kind: kind, label: label, range: s.range(0, bytes.count),
                            expressions: expressions)
            } catch let e as ExpressionError {
                problems.append(RulesProblem(s.position(ofByte: e.offset), e.message))
            } catch {
                problems.append(RulesProblem(s.position, "Parse error."))
            }
            return nil
        default:
            problems.append(RulesProblem(value.position, "\(kind.rawValue) must be a boolean or an expression string."))
            return nil
        }
    }

    static func indexOn(_ value: RulesJSON, problems: inout [RulesProblem]) -> [String] {
        var out: [String] = []
        func one(_ v: RulesJSON) {
            guard case .string(let s) = v else {
                problems.append(RulesProblem(v.position, ".indexOn must be a string or an array of strings."))
                return
            }
            if s.text == ".value" { out.append(s.text); return }
            let keys = s.text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            if keys.isEmpty || keys.contains(where: { Limits.keyProblem($0) != nil }) {
                problems.append(RulesProblem(s.position, "Invalid .indexOn path '\(Limits.cut(s.text))'."))
                return
            }
            out.append(keys.joined(separator: "/"))
        }
        if case .array(let items, _) = value { items.forEach(one) } else { one(value) }
        return out
    }
}

/// A rules document that could not be loaded: one `line:column: message` per problem.
public struct RulesError: Error, Sendable, CustomStringConvertible {
    public var problems: [RulesProblem]
    /// Firebase's error text: each problem on its own line, newline-terminated.
    public var description: String { problems.map { $0.description + "\n" }.joined() }
}

extension RuleSet {
    /// Every `.indexOn` of the rules with the location it is declared at, wildcards spelled
    /// `$name` (the form `rtdb index add` takes), in the rules' order.
    public var indexDeclarations: [(location: String, children: [String])] {
        var out: [(location: String, children: [String])] = []
        func walk(_ node: TreeNode, _ path: [String]) {
            if !node.indexOn.isEmpty { out.append(("/" + path.joined(separator: "/"), node.indexOn)) }
            for c in node.children { walk(c.node, path + [c.key]) }
            if let w = node.wildcard { walk(w.node, path + [w.name.hasPrefix("$") ? w.name : "$" + w.name]) }
        }
        walk(root, [])
        return out
    }
}
