import RTDBCore

/// Hand-rolled argument parsing over the registry. Global options may stand before or after
/// the command; `--` ends option parsing; `-` and negative numbers are arguments; an option's
/// value is the next word whatever it looks like (or follows `=`).
enum Parser {
    enum Parsed {
        case run(Invocation)
        case help(CommandSpec?)
        /// `rtdb help options`.
        case globalOptions
        /// `rtdb help guide`.
        case guide
        case version
    }

    /// `invalid` holds the indices of arguments that were not valid UTF-8 (they arrive
    /// repaired, so they must not be used as data). `command` is set as soon as it is known,
    /// so a failure can show that command's usage line. `lookup` finds a command by name.
    static func parse(_ args: [String], invalid: Set<Int> = [], command: inout CommandSpec?,
                      lookup: (String) -> CommandSpec? = Registry.command(named:)) throws -> Parsed {
        command = nil
        var positionals: [String] = []
        var beforeDashDash: Int? = nil
        var options: [(spec: OptionSpec, value: String)] = []
        var i = 0
        while i < args.count {
            let arg = args[i]
            i += 1
            if invalid.contains(i - 1), let command {
                throw notUTF8(command, slot: beforeDashDash == nil ? positionals.count : nil)
            }
            if beforeDashDash != nil { positionals.append(arg); continue }
            if arg == "--" { beforeDashDash = positionals.count; continue }
            if isOption(arg) {
                var name = arg
                var inline: String? = nil
                if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                    name = String(arg[..<eq])
                    inline = String(arg[arg.index(after: eq)...])
                }
                let candidates = Registry.globalOptions + (command?.options ?? [])
                guard let spec = candidates.first(where: { $0.long == name || $0.short == name }) else {
                    if command == nil, Registry.commands.contains(where: { $0.options.contains { $0.long == name || $0.short == name } }) {
                        throw RTDBError(.usage, "option \(name) must follow the command it belongs to")
                    }
                    throw RTDBError(.usage, "unknown option \(name)" + (command.map { " for \($0.name)" } ?? "")
                        + argumentHint(arg, command: command))
                }
                var value = ""
                if spec.takesValue {
                    var words: [String] = []
                    if let inline { words.append(inline) }
                    while words.count < spec.arity {
                        guard i < args.count else {
                            throw RTDBError(.usage, "option \(spec.long) needs " + (spec.arity > 1 ? "\(spec.arity) values" : "a value")
                                            + " (\(spec.value ?? "VALUE"))")
                        }
                        if invalid.contains(i) { throw notUTF8(option: spec) }
                        words.append(args[i])
                        i += 1
                    }
                    // Optional words: what follows, up to the next option or `--`.
                    var extra = 0
                    while extra < spec.optionalWords, i < args.count, args[i] != "--", !isOption(args[i]) {
                        if invalid.contains(i) { throw notUTF8(option: spec) }
                        words.append(args[i])
                        i += 1
                        extra += 1
                    }
                    // Words of a command line never hold NUL: it separates the words of one option.
                    // (A single word is kept as it is: the generic `joined` costs a conformance
                    // look-up at start-up, ~100,000 instructions, for nothing.)
                    value = words.count == 1 ? words[0] : words.joined(separator: "\u{0}")
                } else if inline != nil {
                    throw RTDBError(.usage, "option \(spec.long) takes no value")
                }
                if !spec.repeatable && options.contains(where: { $0.spec.long == spec.long }) {
                    throw RTDBError(.usage, "option \(spec.long) given more than once")
                }
                options.append((spec, value))
                continue
            }
            if command == nil {
                guard let c = lookup(arg) else {
                    throw RTDBError(.usage, "unknown command \(Limits.quote(arg)); see 'rtdb help'")
                }
                command = c
                continue
            }
            positionals.append(arg)
        }
        if options.contains(where: { $0.spec.long == Global.help.long }) {
            return .help(command)
        }
        if options.contains(where: { $0.spec.long == Global.version.long }) { return .version }
        guard let command else {
            throw RTDBError(.usage, "no command given; see 'rtdb help'")
        }
        if command.name == "help" {
            if positionals.count > 1 { throw RTDBError(.usage, "help: unexpected argument \(Limits.quote(positionals[1]))") }
            if let name = positionals.first {
                if name == Help.optionsTopic { return .globalOptions }
                if name == Help.guideTopic { return .guide }
                guard let c = lookup(name) else {
                    throw RTDBError(.usage, "unknown command \(Limits.quote(name)); see 'rtdb help'")
                }
                return .help(c)
            }
            return .help(nil)
        }
        // (Most command lines give one option or none: nothing to exclude, nothing to build.)
        if options.count > 1 {
            for exclusion in command.exclusions() + Registry.globalExclusions {
                if let message = exclusion.violation({ long in options.contains { $0.spec.long == long } }) {
                    throw RTDBError(.usage, message)
                }
            }
        }
        return .run(Invocation(command: command, positionals: positionals, beforeDashDash: beforeDashDash, options: options))
    }

    /// The error for an argument that is not valid UTF-8, by what the argument was for.
    static func notUTF8(_ command: CommandSpec, slot: Int?) -> RTDBError {
        let kind = slot.flatMap { command.arguments.isEmpty ? nil : command.arguments[min($0, command.arguments.count - 1)].kind }
        switch kind {
        case .path?: return RTDBError(.invalidPath, "\(command.name): the path argument is not valid UTF-8")
        case .json?, .number?: return RTDBError(.invalidJSON, "\(command.name): the value argument is not valid UTF-8")
        default: return RTDBError(.usage, "\(command.name): an argument is not valid UTF-8")
        }
    }

    static func notUTF8(option: OptionSpec) -> RTDBError {
        switch option.kind {
        case .json, .key, .child: return RTDBError(.invalidQuery, "the value of \(option.long) is not valid UTF-8")
        case .text: return RTDBError(.invalidData, "the value of \(option.long) is not valid UTF-8")
        default: return RTDBError(.usage, "the value of \(option.long) is not valid UTF-8")
        }
    }

    /// For an unknown option that looks like an argument (a push ID such as `-P74-Dhh…`, a key
    /// starting with `-`), how to pass it as one; empty for words shaped like long options.
    static func argumentHint(_ arg: String, command: CommandSpec?) -> String {
        let name = arg.utf8.dropFirst(2)
        let longShaped = arg.hasPrefix("--") && !name.isEmpty
            && name.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x3D }
        if longShaped { return "" }
        // Another command's option (`set /a 1 -r`) is a misplaced option, not an argument.
        if Registry.commands.contains(where: { $0.options.contains { $0.long == arg || $0.short == arg } }) { return "" }
        if let command {
            guard command.arguments.first?.kind == .path else { return "" }
            return "; if it is a path or key, write -- before it or give it a leading / (/\(arg))"
        }
        return "; if it is an argument, write it after the command and --"
    }

    /// Words that start with `-` are options, except `-` itself and negative numbers.
    static func isOption(_ arg: String) -> Bool {
        guard arg.hasPrefix("-"), arg.count > 1 else { return false }
        let second = arg.utf8.dropFirst().first ?? 0
        if (second >= 48 && second <= 57) || second == UInt8(ascii: ".") { return false }
        return true
    }
}
