import RTDBNet

/// Help text, rendered from the registry (`rtdb help`, `rtdb help CMD`, `rtdb CMD --help`,
/// `rtdb help options`), wrapped to a width: the terminal's when stdout is one, else 80 columns
/// (`width`), so it reads the same in a pager, a file or a narrow window.
enum Help {
    /// Columns of help text: the terminal's (at least 40, where a two-column table still fits)
    /// or 80 when stdout is not a terminal.
    static var width: Int { max(terminalColumns(1) ?? 80, 40) }

    /// The word `rtdb help` takes for the global options.
    static let optionsTopic = "options"
    /// The word `rtdb help` takes for the Firebase guides' calls as commands (Guide.swift).
    static let guideTopic = "guide"

    static func overview(width: Int = Help.width) -> String {
        var s = wrap("rtdb \(Registry.version): the Firebase Realtime Database model from the command line", width: width) + "\n\n"
        s += wrap("rtdb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]", width: width, lead: "usage: ", indent: 7) + "\n"
        s += wrap("rtdb help [COMMAND | options | guide] | rtdb COMMAND --help | rtdb --version",
                  width: width, lead: "       ", indent: 7) + "\n\n"
        s += "Commands:\n"
        s += table(Registry.visibleCommands.map { ($0.name, $0.summary) }, width: width)
        s += "\n" + wrap("Global options (before or after the command):", width: width) + "\n"
        s += options(Registry.globalOptions, width: width)
        s += "\n" + wrap("Output is JSON lines on stdout; errors are one JSON line on stderr (a sentence on a terminal).", width: width) + "\n"
        s += wrap("Exit status: 0 ok, 1 internal/io, 2 usage, 3 invalid input, 4 permission, 5 not committed, "
                  + "6 unavailable/timeout, 7 unsupported, 8 not an rtdb database, 9 committed but not printed, "
                  + "10 incomplete (an offline cache that holds only part of the answer, with --partial), "
                  + "11 nothing there (get --exists), "
                  + "130/143 ended by SIGINT/SIGTERM (watch, tx, serve).", width: width) + "\n"
        s += "\nExamples:\n"
        s += "  rtdb set /users/alice '{\"name\":\"Alice\",\"age\":30}'\n"
        s += "  rtdb get /users/alice\n"
        s += "  rtdb watch /posts --child-events | jq .\n"
        s += "\n" + wrap("Coming from the Firebase SDKs: 'rtdb help guide' gives each call of the guides as a command.", width: width) + "\n"
        s += wrap("See 'rtdb help COMMAND' for one command, and 'man rtdb' for everything (after 'make install'; "
                          + "before it, 'man ./man/rtdb.1' in the source folder).", width: width) + "\n"
        return s
    }

    /// `rtdb help options`: the global options, which every command takes.
    static func globalOptions(width: Int = Help.width) -> String {
        var s = wrap("rtdb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]", width: width, lead: "usage: ", indent: 7) + "\n\n"
        s += wrap("Global options, taken by every command, before or after it:", width: width) + "\n"
        s += options(Registry.globalOptions, width: width)
        s += "\n" + wrap("An option beats its environment variable. --auth, --access-token, --credentials and --cacert "
                          + "are for a remote database (--url): without one they are a usage error.", width: width) + "\n"
        return s
    }

    /// One command's help: its own options first, then what it does; the global options are
    /// named, not repeated (`rtdb help options` explains them).
    static func command(_ c: CommandSpec) -> String { command(c, width: width) }

    static func command(_ c: CommandSpec, width: Int) -> String {
        var s = wrap(c.usage, width: width, lead: "usage: ", indent: 7) + "\n\n"
        s += wrap(c.summary.prefix(1).uppercased() + c.summary.dropFirst() + ".", width: width) + "\n"
        if !c.options.isEmpty { s += "\nOptions:\n" + options(c.options, width: width) }
        if !c.arguments.isEmpty {
            s += "\nArguments:\n" + table(c.arguments.map { ($0.name, $0.help) }, width: width)
        }
        if !c.description.isEmpty { s += "\n" + wrap(c.description, width: width) + "\n" }
        if !c.examples.isEmpty {
            s += "\nExamples:\n"
            for e in c.examples { s += "  " + e + "\n" }
        }
        s += "\n" + wrap("Global options (" + Registry.globalOptions.map { $0.short ?? $0.long }.joined(separator: ", ")
                          + "): see 'rtdb help \(optionsTopic)'.", width: width) + "\n"
        return s
    }

    /// `text` broken into lines of at most `width` characters at spaces, after `lead` on the
    /// first line; later lines start with `indent` spaces. A word longer than a line (a URL, a
    /// long option) stands alone on its line.
    static func wrap(_ text: String, width: Int, lead: String = "", indent: Int = 0) -> String {
        var lines: [String] = []
        var line = lead
        var wordless = true
        for word in text.split(separator: " ") {
            if !wordless && line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                wordless = true
            }
            line += (wordless ? "" : " ") + word
            wordless = false
        }
        if !wordless || !lead.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    /// Two columns, "  name  text", the text wrapped beside the names. When the names are so
    /// wide that fewer than half the columns would be left for the text, each text starts on
    /// its own line, indented, below its name.
    static func table(_ rows: [(String, String)], width: Int) -> String {
        let names = rows.map(\.0.count).max() ?? 0
        let textColumn = 2 + names + 2
        let beside = width - textColumn >= width / 2
        return rows.map { name, text in
            if beside {
                let lead = "  " + name + String(repeating: " ", count: textColumn - 2 - name.count)
                return wrap(text, width: width, lead: lead, indent: textColumn) + "\n"
            }
            return "  " + name + "\n" + wrap(text, width: width, lead: String(repeating: " ", count: 8), indent: 8) + "\n"
        }.joined()
    }

    static func label(_ o: OptionSpec) -> String {
        var l = o.short.map { "\($0), " } ?? ""
        l += o.long
        if let v = o.value { l += " " + v }
        return l
    }

    static func options(_ list: [OptionSpec], width: Int) -> String {
        table(list.map { (label($0), $0.help) }, width: width)
    }
}
