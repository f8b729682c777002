import RTDBCore

/// Where a command's VALUE comes from: a JSON argument, `-` (stdin), `--string`, `--file`, or
/// (for set) `--server-timestamp`. Exactly one source is allowed.
enum ValueInput {
    static let string = Valued<String>("--string", short: "-s", value: "TEXT", kind: .text, "write TEXT as a JSON string")
    static let file = Valued<String>("--file", value: "FILE", kind: .file, "read the JSON value from FILE (- reads stdin)")

    /// Where the value comes from, after checking that exactly one source was given.
    /// `args` are the positionals after PATH; `string`, `file` and `serverTimestamp` are the
    /// command's options for the other sources (nil: it has none).
    static func source(_ inv: Invocation, args: ArraySlice<String>, string: Valued<String>? = ValueInput.string,
                       file: Valued<String> = ValueInput.file, serverTimestamp: Flag? = nil) throws -> ValueSource {
        var sources: [ValueSource] = []
        if let text = args.first { sources.append(text == "-" ? .stdin : .json(text)) }
        if args.count > 1 {
            throw inv.usageError("\(inv.command.name): unexpected argument \(Limits.quote(args[args.startIndex + 1]))")
        }
        if let string, let s = try inv.value(string) { sources.append(.string(s)) }
        // `--file -` is stdin, as in curl and jq; a file named "-" is `--file ./-`.
        if let f = try inv.value(file) { sources.append(f == "-" ? .stdin : .file(f)) }
        if let serverTimestamp, inv.has(serverTimestamp) { sources.append(.serverTimestamp) }
        if sources.isEmpty { throw inv.usageError("\(inv.command.name): missing VALUE (JSON, -, --string TEXT or --file FILE)") }
        if sources.count > 1 {
            throw inv.usageError("\(inv.command.name): give the value one way only (JSON, -, --string, --file\(serverTimestamp != nil ? ", --server-timestamp" : ""))")
        }
        return sources[0]
    }

    enum ValueSource {
        case json(String)
        case stdin
        case file(String)
        case string(String)
        case serverTimestamp

        /// Raw JSON text bytes (nil for the sources that are not JSON text).
        func jsonBytes() throws -> [UInt8]? {
            switch self {
            case .json(let t):
                if t.utf8.count > Limits.maxWriteBytes { throw RTDBError(.tooLarge, "the value is larger than the write limit") }
                return Array(t.utf8)
            case .stdin: return try readAll(fd: 0, limit: Limits.maxWriteBytes, what: "stdin")
            case .file(let f): return try readFile(f, limit: Limits.maxWriteBytes)
            case .string, .serverTimestamp: return nil
            }
        }

        /// The value as a normalised node.
        func node() throws -> Node {
            switch self {
            case .string(let s): return .string(s)
            case .serverTimestamp: return .object([Node.Entry(".sv", .string("timestamp"))])
            default:
                return try node(from: jsonBytes() ?? [])
            }
        }

        /// The value of JSON text read from this source.
        func node(from bytes: [UInt8]) throws -> Node {
            switch self {
            case .string, .serverTimestamp:
                return try node()
            default:
                do {
                    return try bytes.withUnsafeBufferPointer { try JSONReader.parse($0) }
                } catch let e as RTDBError {
                    guard case .json(let text) = self, e.code == .invalidJSON, ValueSource.looksLikeText(text) else { throw e }
                    throw RTDBError(e.code, e.message + "; to write it as a string, use --string \(Limits.quote(text))")
                }
            }
        }

        /// True for an argument that is plainly meant as text (`hello`, `two words`), not
        /// broken JSON (`{"a":1`, `[1,`, `"unterminated`): the --string hint fits only the former.
        static func looksLikeText(_ text: String) -> Bool {
            guard let first = text.utf8.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else { return false }
            return !"{[\"".utf8.contains(first)
        }
    }
}
