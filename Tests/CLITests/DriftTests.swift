import Foundation
import RTDBCLI
import Testing

// The registry (Sources/RTDBCLI/Registry.swift) is the single source of truth for commands and
// options. These tests fail when the man page or a completion script drifts from it.

/// Every spelling of an option: its long form and its short form, if any.
private func spellings(_ o: OptionSpec) -> [String] { [o.long] + (o.short.map { [$0] } ?? []) }

/// Every option a visible command accepts, with the commands that own it ("global" for globals).
private var allOptions: [(owner: String, option: OptionSpec)] {
    Registry.globalOptions.map { ("global", $0) }
        + Registry.visibleCommands.flatMap { c in c.options.map { (c.name, $0) } }
}

/// True when `pattern` (an ICU regular expression) matches somewhere in `text`.
private func matches(_ pattern: String, _ text: String) -> Bool {
    guard let re = try? NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines]) else { return false }
    return re.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
}

/// The lines of `text` from the first line matching `start` up to the next line matching `end`.
private func block(_ text: String, from start: String, to end: String) -> String {
    var out: [Substring] = []
    var inside = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let l = String(line)
        if inside && matches(end, l) { break }
        if !inside && matches(start, l) { inside = true }
        if inside { out.append(line) }
    }
    return out.joined(separator: "\n")
}

/// `matches`, for expectations: a failure then prints the message, not the whole file.
private func found(_ pattern: String, _ text: String) -> Bool { matches(pattern, text) }

private func escaped(_ s: String) -> String { NSRegularExpression.escapedPattern(for: s) }

@Suite("registry drift")
struct DriftTests {
    // MARK: man page

    @Test("the man page lists every command, each with its own options")
    func manPageCommands() throws {
        let man = try Package.text("man/rtdb.1")
        let commands = block(man, from: #"^\.Sh COMMANDS"#, to: #"^\.Sh "#)
        for c in Registry.visibleCommands {
            #expect(found(#"^\.It Cm \#(escaped(c.name))(\s|$)"#, commands), "man/rtdb.1: COMMANDS has no `.It Cm \(c.name)`")
            let item = block(commands, from: #"^\.It Cm \#(escaped(c.name))(\s|$)"#, to: #"^(\.It Cm |\.Ss |\.Sh )"#)
            for o in c.options where !Registry.queryOptions.contains(where: { $0.long == o.long }) {
                for s in spellings(o) {
                    #expect(found(#"Fl \#(escaped(String(s.dropFirst())))(?![\w-])"#, item),
                            "man/rtdb.1: `\(c.name)` does not describe its option \(s) (expected `Fl \(s.dropFirst())`)")
                }
            }
            if c.options.contains(where: { o in Registry.queryOptions.contains { $0.long == o.long } }) {
                let points = item.contains("Sx Query options")
                #expect(points, "man/rtdb.1: `\(c.name)` takes the query options but does not point to them")
            }
        }
        for c in Registry.commands where c.hidden {
            #expect(!found(#"Cm \#(escaped(c.name))"#, man), "man/rtdb.1 documents the hidden command \(c.name)")
        }
    }

    @Test("the man page describes every option")
    func manPageOptions() throws {
        let man = try Package.text("man/rtdb.1")
        let query = block(man, from: #"^\.Ss Query options"#, to: #"^\.S[hs] "#)
        let globals = block(man, from: #"^\.Sh GLOBAL OPTIONS"#, to: #"^\.Sh "#)
        for o in Registry.queryOptions {
            #expect(found(#"^\.It Fl \#(escaped(String(o.long.dropFirst())))(?![\w-])"#, query),
                    "man/rtdb.1: Query options has no `.It Fl \(o.long.dropFirst())`")
        }
        for o in Registry.globalOptions {
            for s in spellings(o) {
                #expect(found(#"^\.It .*Fl \#(escaped(String(s.dropFirst())))(?![\w-])"#, globals),
                        "man/rtdb.1: GLOBAL OPTIONS has no item for \(s)")
            }
        }
        for (owner, o) in allOptions {
            for s in spellings(o) {
                #expect(found(#"Fl \#(escaped(String(s.dropFirst())))(?![\w-])"#, man), "man/rtdb.1 never mentions \(s) (\(owner))")
            }
            for choice in o.choices {
                let mentioned = man.contains(choice)
                #expect(mentioned, "man/rtdb.1 never mentions \(choice), a value of \(o.long)")
            }
        }
    }

    @Test("the man page lists the environment variables the options name")
    func manPageEnvironment() throws {
        let man = try Package.text("man/rtdb.1")
        let environment = block(man, from: #"^\.Sh ENVIRONMENT"#, to: #"^\.Sh "#)
        // The registry's help text names the variables: "(env RTDB_DB; default $XDG_DATA_HOME/…)".
        var names = Set(["XDG_DATA_HOME", "FIREBASE_DATABASE_EMULATOR_HOST"])
        let re = try NSRegularExpression(pattern: #"(?:env |\$)([A-Z][A-Z0-9_]+)"#)
        for o in Registry.globalOptions {
            for m in re.matches(in: o.help, range: NSRange(o.help.startIndex..., in: o.help)) {
                if let r = Range(m.range(at: 1), in: o.help) { names.insert(String(o.help[r])) }
            }
        }
        #expect(names.isSuperset(of: ["RTDB_DB", "RTDB_URL", "RTDB_AUTH", "RTDB_ACCESS_TOKEN", "RTDB_TIMEOUT"]))
        for name in names.sorted() {
            #expect(found(#"^\.It Ev \#(name)$"#, environment), "man/rtdb.1: ENVIRONMENT has no `.It Ev \(name)`")
        }
    }

    @Test("mandoc -Tlint finds nothing in the man page")
    func manPageLint() throws {
        let mandoc = try requireTool("mandoc")
        let r = try run(mandoc, ["-Tlint", Package.file("man/rtdb.1").path])
        #expect(r.status == 0, "mandoc -Tlint exited with \(r.status)")
        #expect(r.stdout.isEmpty && r.stderr.isEmpty, "mandoc -Tlint:\n\(r.stdout)\(r.stderr)")
    }

    // MARK: completion scripts

    /// How each script spells a command candidate and an option.
    static let scripts: [(file: String, command: @Sendable (String) -> String, option: @Sendable (String) -> String, valueOptions: String)] = [
        ("completions/rtdb.bash",
         { #"^_rtdb_commands="([^"]* )?\#(escaped($0))( [^"]*)?"$"# },
         { #"(?<![\w-])\#(escaped($0))(?![\w-])"# },
         #"^_rtdb_value_options="([^"]*)""#),
        ("completions/_rtdb",
         { #"^\s*'\#(escaped($0)):[^']*'$"# },
         { #"(?<![\w-])\#(escaped($0))(?![\w-])"# },
         #"^\s*value_options=\(([^)]*)\)"#),
        ("completions/rtdb.fish",
         { #"^complete -c rtdb -n __rtdb_needs_command -a \#(escaped($0)) "# },
         { $0.hasPrefix("--") ? #"^complete .* -l \#(escaped(String($0.dropFirst(2))))(?![\w-])"# : #"^complete .* -s \#(escaped(String($0.dropFirst())))(?![\w-])"# },
         #"set -l value_options ((?:[^\n]*\\\n)*[^\n]*)"#),
    ]

    @Test("every completion script offers every visible command and no hidden one")
    func scriptCommands() throws {
        for s in Self.scripts {
            let text = try Package.text(s.file)
            for c in Registry.visibleCommands {
                #expect(found(s.command(c.name), text), "\(s.file) does not offer the command \(c.name)")
            }
            for c in Registry.commands where c.hidden {
                #expect(!found(s.command(c.name), text), "\(s.file) offers the hidden command \(c.name)")
            }
        }
    }

    @Test("every completion script knows every option, and which take a value")
    func scriptOptions() throws {
        var takesValue = Set<String>()
        for (_, o) in allOptions where o.takesValue { takesValue.formUnion(spellings(o)) }
        for s in Self.scripts {
            let text = try Package.text(s.file)
            for (owner, o) in allOptions {
                for spelling in spellings(o) {
                    #expect(found(s.option(spelling), text), "\(s.file) does not know \(spelling) (\(owner))")
                }
                for choice in o.choices {
                    let offered = text.contains(choice)
                    #expect(offered, "\(s.file) does not offer \(choice), a value of \(o.long)")
                }
            }
            // The words after these options are values, not commands or paths.
            let re = try NSRegularExpression(pattern: s.valueOptions, options: [.anchorsMatchLines])
            guard let m = re.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                  let r = Range(m.range(at: 1), in: text) else {
                Issue.record("\(s.file) has no list of options that take a value")
                continue
            }
            let listed = Set(text[r].split(whereSeparator: { " \t\n\\".contains($0) }).map(String.init))
            #expect(listed == takesValue,
                    "\(s.file): options taking a value are \(takesValue.sorted()), the script lists \(listed.sorted())")
        }
    }

    // MARK: help

    @Test("`rtdb help CMD` and `rtdb CMD --help` print the same, with status 0")
    func helpAgrees() throws {
        let rtdb = try Package.rtdb()
        for c in Registry.visibleCommands {
            let viaHelp = try run(rtdb, ["help", c.name])
            let viaFlag = try run(rtdb, [c.name, "--help"])
            #expect(viaHelp.status == 0, "rtdb help \(c.name) exited with \(viaHelp.status): \(viaHelp.stderr)")
            #expect(viaFlag.status == 0, "rtdb \(c.name) --help exited with \(viaFlag.status): \(viaFlag.stderr)")
            #expect(!viaHelp.stdout.isEmpty, "rtdb help \(c.name) printed nothing")
            let same = viaHelp.stdout == viaFlag.stdout
            #expect(same, """
                rtdb help \(c.name) and rtdb \(c.name) --help differ: the first prints \
                \(viaHelp.stdout.prefix(60).debugDescription)…, the second \(viaFlag.stdout.prefix(60).debugDescription)…
                """)
        }
    }
}
