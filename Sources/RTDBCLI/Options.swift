import RTDBCore

/// An option as the code names it: a declared constant holding the `OptionSpec` that parsing,
/// help, the man page and the completions read. Commands look options up through these
/// constants (`inv.has(GetCommand.shallow)`, `try inv.value(TxCommand.maxRetries)`), never by
/// spelling, so a misspelt option does not compile.
protocol DeclaredOption: Sendable {
    var spec: OptionSpec { get }
}

extension DeclaredOption {
    var long: String { spec.long }
}

/// Lists of specs (`Registry.queryOptions`) can be asked about as they are.
extension OptionSpec: DeclaredOption {
    var spec: OptionSpec { self }
}

/// An option without a value: given or not.
struct Flag: DeclaredOption {
    let spec: OptionSpec

    init(_ long: String, short: String? = nil, _ help: String) {
        spec = OptionSpec(long, short: short, help)
    }
}

/// An option with a value, read as `Value`. `read` turns the text into the value or throws
/// the usage error for it; `source` names where the text came from (the option, or the
/// environment variable standing in for it), as the message says. Values are read when the
/// command asks for them, so a command line with several problems reports the one the
/// command meets first.
struct Valued<Value>: DeclaredOption {
    let spec: OptionSpec
    /// The variable `Invocation.setting` reads when the option is not given.
    let environment: String?
    let read: @Sendable (_ text: String, _ source: String) throws -> Value

    init(_ long: String, short: String? = nil, value: String, kind: ValueKind, choices: [String] = [],
         environment: String? = nil, _ help: String, read: @escaping @Sendable (_ text: String, _ source: String) throws -> Value) {
        spec = OptionSpec(long, short: short, value: value, kind: kind, choices: choices, help)
        self.environment = environment
        self.read = read
    }
}

extension Valued where Value == String {
    /// An option whose value is its text.
    init(_ long: String, short: String? = nil, value: String, kind: ValueKind, environment: String? = nil, _ help: String) {
        self.init(long, short: short, value: value, kind: kind, environment: environment, help) { text, _ in text }
    }
}

/// Choices as a message says them: "a, b or c".
func spokenChoices(_ names: [String]) -> String {
    names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "") : names.joined()
}

extension Valued where Value: RawRepresentable & CaseIterable & Sendable, Value.RawValue == String {
    /// An option whose value is one of `Value`'s cases; they are the choices help and the
    /// completions offer.
    init(_ long: String, value: String, _ help: String) {
        let names = Value.allCases.map(\.rawValue)
        self.init(long, value: value, kind: .text, choices: names, help) { text, source in
            guard let v = Value(rawValue: text) else {
                throw RTDBError(.usage, "\(source) needs \(spokenChoices(names)), not \(Limits.quote(text))")
            }
            return v
        }
    }
}

/// An option read as its words in command-line order, one entry per occurrence (two words for
/// `--on-disconnect-set PATH VALUE`, one or two for `--presence P [VALUE]`); see
/// `Invocation.occurrences`.
struct Words: DeclaredOption {
    let spec: OptionSpec

    init(_ long: String, value: String, kind: ValueKind, arity: Int = 1, optionalWords: Int = 0, repeatable: Bool = false, _ help: String) {
        spec = OptionSpec(long, value: value, kind: kind, arity: arity, optionalWords: optionalWords, repeatable: repeatable, help)
    }
}

/// The checks that the values of several options share; each throws the usage error
/// "SOURCE needs WHAT, not 'TEXT'".
enum OptionValue {
    /// A finite number of seconds that `accept` takes.
    static func seconds(_ text: String, _ source: String, needs what: String, _ accept: (Double) -> Bool) throws -> Double {
        guard let t = Double(text), t.isFinite, accept(t) else { throw refused(text, source, what) }
        return t
    }

    /// A whole number that `accept` takes.
    static func whole(_ text: String, _ source: String, needs what: String, _ accept: (Int) -> Bool) throws -> Int {
        guard let n = Int(text), accept(n) else { throw refused(text, source, what) }
        return n
    }

    /// A whole number in `range`, which the message names ("a number of bytes from 1 to 10").
    static func whole(_ text: String, _ source: String, in range: ClosedRange<Int>, of unit: String? = nil) throws -> Int {
        let what = "a number " + (unit.map { "of \($0) " } ?? "") + "from \(range.lowerBound) to \(range.upperBound)"
        return try whole(text, source, needs: what) { range.contains($0) }
    }

    /// A whole number no smaller than `least`.
    static func whole(_ text: String, _ source: String, atLeast least: Int) throws -> Int {
        try whole(text, source, needs: "a whole number ≥ \(least)") { $0 >= least }
    }

    /// A file name, which must not be empty ("" would mean something else to the callee).
    static func fileName(_ text: String, _ source: String) throws -> String {
        if text.isEmpty { throw RTDBError(.usage, "\(source) needs a file name") }
        return text
    }

    static func refused(_ text: String, _ source: String, _ what: String) -> RTDBError {
        RTDBError(.usage, "\(source) needs \(what), not \(Limits.quote(text))")
    }
}

/// Options that cannot be given together, declared beside them (a command's `exclusions`,
/// `Registry.globalExclusions`). The parser checks them, in the order declared, once the
/// command line is read and before the command runs.
struct Exclusion: Sendable {
    private enum Rule: Sendable {
        /// "A and B exclude each other".
        case pair
        /// "give one NOUN at most (A, B)", naming the ones given.
        case atMostOne(noun: String)
        /// "A excludes B", naming the first of the others given.
        case first
    }

    private let rule: Rule
    /// The long names of the options, in the order the rule reads them.
    let options: [String]

    static func pair(_ a: some DeclaredOption, _ b: some DeclaredOption) -> Exclusion {
        Exclusion(rule: .pair, options: [a.long, b.long])
    }

    static func atMostOne(_ noun: String, of options: [any DeclaredOption]) -> Exclusion {
        Exclusion(rule: .atMostOne(noun: noun), options: options.map(\.long))
    }

    /// `option` excludes each of `others`.
    static func first(_ option: some DeclaredOption, excludes others: [any DeclaredOption]) -> Exclusion {
        Exclusion(rule: .first, options: [option.long] + others.map(\.long))
    }

    /// The message for a command line that gives the options `given` says are given, or nil.
    func violation(_ given: (String) -> Bool) -> String? {
        switch rule {
        case .pair:
            return options.allSatisfy(given) ? "\(options[0]) and \(options[1]) exclude each other" : nil
        case .atMostOne(let noun):
            let present = options.filter(given)
            return present.count > 1 ? "give one \(noun) at most (\(present.joined(separator: ", ")))" : nil
        case .first:
            guard given(options[0]), let other = options.dropFirst().first(where: given) else { return nil }
            return "\(options[0]) excludes \(other)"
        }
    }
}
