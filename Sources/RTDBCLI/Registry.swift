import RTDBCore
import RTDBEngine

/// What kind of value an option or argument takes; completions use it to offer candidates.
public enum ValueKind: String, Sendable {
    case none, path, file, directory, number, json, text, key, child, command
}

/// One option, declared once: parsing, help, the man page and completions all read it.
public struct OptionSpec: Sendable {
    public let long: String
    public let short: String?
    public let value: String?
    public let kind: ValueKind
    public let help: String
    public let choices: [String]
    /// How many words the option takes (1, or 2 for `--on-disconnect-set PATH VALUE`).
    public let arity: Int
    /// How many more words it takes when they are there: the words that follow, up to the next
    /// option or `--` (`--presence P [VALUE]`).
    public let optionalWords: Int
    /// The option may be given more than once; `Invocation.occurrences(of:)` keeps the order.
    public let repeatable: Bool

    public init(_ long: String, short: String? = nil, value: String? = nil, kind: ValueKind = .none,
                choices: [String] = [], arity: Int = 1, optionalWords: Int = 0, repeatable: Bool = false, _ help: String) {
        self.long = long
        self.short = short
        self.value = value
        self.kind = value == nil ? .none : kind
        self.help = help
        self.choices = choices
        self.arity = value == nil ? 0 : arity
        self.optionalWords = value == nil ? 0 : optionalWords
        self.repeatable = repeatable
    }

    public var takesValue: Bool { value != nil }
}

/// One command, declared once, with its run function.
public struct CommandSpec: Sendable {
    public let name: String
    public let summary: String
    public let usage: String
    public let arguments: [(name: String, kind: ValueKind, help: String)]
    public let options: [OptionSpec]
    /// Options of this command that cannot be given together (the parser checks them). A
    /// function, so that the list is built only for a command line that gives two options or
    /// more: building it costs start-up time that most command lines need not pay.
    let exclusions: @Sendable () -> [Exclusion]
    public let description: String
    public let examples: [String]
    public let hidden: Bool
    let run: @Sendable (Invocation) throws -> Void

    init(name: String, summary: String, usage: String,
         arguments: [(name: String, kind: ValueKind, help: String)] = [],
         options: [OptionSpec] = [], exclusions: @escaping @Sendable () -> [Exclusion] = { [] }, description: String, examples: [String],
         hidden: Bool = false, run: @escaping @Sendable (Invocation) throws -> Void) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.arguments = arguments
        self.options = options
        self.exclusions = exclusions
        self.description = description
        self.examples = examples
        self.hidden = hidden
        self.run = run
    }
}

/// The registry: every command of `rtdb` (the global and shared options are in SharedOptions.swift).
public enum Registry {
    public static let version = "0.4.0"
    /// What `rtdb --version` prints: the release and the schema of the files it writes, which
    /// the README's "Data rules and limits" names too.
    public static var versionLine: String { "rtdb \(version) (database schema \(schemaVersion))" }
    /// The schema version of the database files this release writes.
    public static var schemaVersion: Int64 { EmbeddedDatabase.schemaVersion }

    public static let commands: [CommandSpec] = [
        GetCommand.spec, SetCommand.spec, UpdateCommand.spec, PushCommand.spec, RemoveCommand.spec,
        QueryCommand.spec, IncrementCommand.spec, TxCommand.spec, WatchCommand.spec, SessionCommand.spec, OnDisconnectCommand.spec, QueueCommand.spec, SyncCommand.spec, KeepCommand.spec, CacheCommand.spec, IndexCommand.spec, ServeCommand.spec, RulesCommand.spec, HelpCommand.spec,
        CompleteCommand.spec, TetherCommand.spec, KeptStreamCommand.spec,
    ]

    /// The command called `name`. Builds that one spec only, not the whole `commands` list:
    /// every run starts here, and building all thirteen specs (their option arrays and argument
    /// tuples) is a measurable part of start-up. `RegistryLookupTests` keeps it in step with
    /// `commands`.
    public static func command(named name: String) -> CommandSpec? {
        switch name {
        case "get": return GetCommand.spec
        case "set": return SetCommand.spec
        case "update": return UpdateCommand.spec
        case "push": return PushCommand.spec
        case "remove": return RemoveCommand.spec
        case "query": return QueryCommand.spec
        case "increment": return IncrementCommand.spec
        case "tx": return TxCommand.spec
        case "watch": return WatchCommand.spec
        case "session": return SessionCommand.spec
        case "on-disconnect": return OnDisconnectCommand.spec
        case "queue": return QueueCommand.spec
        case "sync": return SyncCommand.spec
        case "keep": return KeepCommand.spec
        case "cache": return CacheCommand.spec
        case "index": return IndexCommand.spec
        case "serve": return ServeCommand.spec
        case "rules": return RulesCommand.spec
        case "help": return HelpCommand.spec
        case "__complete": return CompleteCommand.spec
        case "__tether": return TetherCommand.spec
        case "__kept-stream": return KeptStreamCommand.spec
        default: return nil
        }
    }

    /// The visible commands, in help order.
    public static var visibleCommands: [CommandSpec] { commands.filter { !$0.hidden } }
}
