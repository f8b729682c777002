/// Help text, rendered from the registry (`rtdb help`, `rtdb help CMD`, `rtdb CMD --help`,
/// `rtdb help options`).
enum Help {
    /// The word `rtdb help` takes for the global options.
    static let optionsTopic = "options"

    static func overview() -> String {
        var s = "rtdb \(Registry.version): the Firebase Realtime Database model from the command line\n\n"
        s += "usage: rtdb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n"
        s += "       rtdb help [COMMAND | options] | rtdb COMMAND --help | rtdb --version\n\n"
        s += "Commands:\n"
        let width = Registry.visibleCommands.map(\.name.count).max() ?? 0
        for c in Registry.visibleCommands {
            s += "  " + c.name + String(repeating: " ", count: width - c.name.count + 2) + c.summary + "\n"
        }
        s += "\nGlobal options (before or after the command):\n" + options(Registry.globalOptions)
        s += "\nOutput is JSON lines on stdout; errors are one JSON line on stderr (a sentence on a terminal).\n"
        s += "Exit status: 0 ok, 1 internal/io, 2 usage, 3 invalid input, 4 permission, 5 not committed,\n"
        s += "6 unavailable/timeout, 7 unsupported, 8 not an rtdb database, 9 committed but not printed,\n"
        s += "10 incomplete (an offline cache that holds only part of the answer, with --partial),\n"
        s += "130/143 ended by SIGINT/SIGTERM (watch, tx, serve).\n"
        s += "\nExamples:\n"
        s += "  rtdb set /users/alice '{\"name\":\"Alice\",\"age\":30}'\n"
        s += "  rtdb get /users/alice\n"
        s += "  rtdb watch /posts --child-events | jq .\n"
        s += "\nSee 'rtdb help COMMAND' for one command, and 'man rtdb' for everything (after 'make install';\n"
        s += "before it, 'man ./man/rtdb.1' in the source folder).\n"
        return s
    }

    /// `rtdb help options`: the global options, which every command takes.
    static func globalOptions() -> String {
        var s = "usage: rtdb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n\n"
        s += "Global options, taken by every command, before or after it:\n" + options(Registry.globalOptions)
        s += "\nAn option beats its environment variable. --auth, --access-token, --credentials and --cacert\n"
        s += "are for a remote database (--url): without one they are a usage error.\n"
        return s
    }

    /// One command's help: its own options first, then what it does; the global options are
    /// named, not repeated (`rtdb help options` explains them).
    static func command(_ c: CommandSpec) -> String {
        var s = "usage: \(c.usage)\n\n\(c.summary.prefix(1).uppercased() + c.summary.dropFirst()).\n"
        if !c.options.isEmpty { s += "\nOptions:\n" + options(c.options) }
        if !c.arguments.isEmpty {
            s += "\nArguments:\n"
            let width = c.arguments.map(\.name.count).max() ?? 0
            for a in c.arguments {
                s += "  " + a.name + String(repeating: " ", count: width - a.name.count + 2) + a.help + "\n"
            }
        }
        if !c.description.isEmpty { s += "\n" + wrap(c.description, width: 90) + "\n" }
        if !c.examples.isEmpty {
            s += "\nExamples:\n"
            for e in c.examples { s += "  " + e + "\n" }
        }
        s += "\n" + wrap("Global options (" + Registry.globalOptions.map { $0.short ?? $0.long }.joined(separator: ", ")
                          + "): see 'rtdb help \(optionsTopic)'.", width: 90) + "\n"
        return s
    }

    /// `text` broken into lines of at most `width` characters at spaces.
    static func wrap(_ text: String, width: Int) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    static func label(_ o: OptionSpec) -> String {
        var l = o.short.map { "\($0), " } ?? ""
        l += o.long
        if let v = o.value { l += " " + v }
        return l
    }

    static func options(_ list: [OptionSpec]) -> String {
        let width = list.map { label($0).count }.max() ?? 0
        return list.map { o in
            let l = label(o)
            return "  " + l + String(repeating: " ", count: width - l.count + 2) + o.help + "\n"
        }.joined()
    }
}
