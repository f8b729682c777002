/// A JSON value read as the leaves and priorities it stores, in the order of its text, without
/// a tree of `Node`s: what a streamed import writes for every value that needs nothing of
/// normal form but dropping nulls and empty nodes (`JSONReader.flatValue` says which do).
///
/// Invariants, which the reader keeps: `enter` and `leave` pair up; every node entered holds
/// at least one leaf (empty ones are left out); no node is entered twice under one parent (a
/// repeated key is not flat); every key is valid and within the depth limit, every string
/// within the length limit. So storing the leaves and priorities stores exactly what
/// `JSONReader.parse` and `Limits.validate` make of the same text.
public struct FlatValue {
    /// A leaf or a priority: strings are bytes of `bytes`, checked as UTF-8. (Ranges of
    /// 32-bit offsets keep a token in 24 bytes: a value is read whole only up to the window.)
    public enum Scalar: Equatable {
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case string(Range<Int32>)
    }

    public enum Token: Equatable {
        /// The child of the current node with this key (bytes of `bytes`) becomes current.
        case enter(Range<Int32>)
        /// Its parent becomes current again.
        case leave
        /// The current node is this leaf.
        case leaf(Scalar)
        /// The child of the current node with this key is this leaf (what `enter`, `leaf` and
        /// `leave` say in one token: most leaves are members of an object).
        case child(Range<Int32>, Scalar)
        /// The current node, which holds data, has this priority (after its data).
        case priority(Scalar)
    }

    public internal(set) var tokens: [Token] = []
    /// The bytes of keys and strings.
    public internal(set) var bytes: [UInt8] = []
    /// The member keys of the objects being read, for finding a repeated key (reader's scratch).
    var members: [Range<Int32>] = []

    public init() {}

    /// Empties the value, keeping its storage for the next one.
    mutating func clear() {
        tokens.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        members.removeAll(keepingCapacity: true)
    }

    /// The value as a tree (for tests and checks; the import never builds it).
    public var node: Node {
        var stack: [(key: String, entries: [Node.Entry], priority: Node)] = [("", [], .null)]
        var leaf: Node = .null
        func text(_ r: Range<Int32>) -> String { String(decoding: bytes[Int(r.lowerBound)..<Int(r.upperBound)], as: UTF8.self) }
        func scalar(_ s: Scalar) -> Node {
            switch s {
            case .int(let v): return .int(v)
            case .double(let v): return .double(v)
            case .bool(let v): return .bool(v)
            case .string(let r): return .string(text(r))
            }
        }
        func finish(_ level: (key: String, entries: [Node.Entry], priority: Node), leaf: Node) -> Node {
            let base = level.entries.isEmpty ? leaf : Node.object(normalizing: level.entries)
            return base.withPriority(level.priority)
        }
        for t in tokens {
            switch t {
            case .enter(let r):
                stack.append((text(r), [], .null))
                leaf = .null
            case .leave:
                guard stack.count > 1, let level = stack.popLast() else { continue }
                let child = finish(level, leaf: leaf)
                stack[stack.count - 1].entries.append(Node.Entry(level.key, child))
                leaf = .null
            case .leaf(let s):
                leaf = scalar(s)
            case .child(let r, let s):
                stack[stack.count - 1].entries.append(Node.Entry(text(r), scalar(s)))
            case .priority(let s):
                stack[stack.count - 1].priority = scalar(s)
            }
        }
        return finish(stack[0], leaf: leaf)
    }
}
