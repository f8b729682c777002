import Foundation
import RTDBCLI
import Testing

/// A command's help shows its own options first and names the global ones, which
/// `rtdb help options` explains; the overview's exit statuses include 10.
@Suite("help text")
struct HelpTests {
    @Test("every command's help: its options before the description, the global options named, not repeated")
    func commandHelp() throws {
        let rtdb = try Package.rtdb()
        for c in Registry.visibleCommands {
            let r = try run(rtdb, [c.name, "--help"])
            #expect(r.status == 0, "\(c.name): \(r.stderr)")
            let text = r.stdout
            #expect(HelpTests.words(text).contains("see 'rtdb help options'"), "rtdb \(c.name) --help does not point to rtdb help options")
            // No global option is described: none starts a line of its own.
            for o in Registry.globalOptions {
                let described = text.split(separator: "\n").contains { $0.hasPrefix("  " + (o.short.map { "\($0), " } ?? "") + o.long) }
                #expect(!described, "rtdb \(c.name) --help repeats the global option \(o.long)")
                #expect(text.contains(o.short ?? o.long), "rtdb \(c.name) --help does not name the global option \(o.long)")
            }
            guard let first = c.options.first else { continue }
            #expect(text.contains("\nOptions:\n"), "rtdb \(c.name) --help has no Options section")
            #expect(text.contains("  " + (first.short.map { "\($0), " } ?? "") + first.long), "\(c.name)")
            let description = String(c.description.split(separator: " ").prefix(3).joined(separator: " "))
            let flat = HelpTests.words(text)
            if !description.isEmpty, let d = flat.range(of: description), let o = flat.range(of: "Options:") {
                #expect(o.lowerBound < d.lowerBound, "rtdb \(c.name) --help shows its description before its options")
            }
        }
    }

    @Test("rtdb help options explains every global option")
    func globalOptions() throws {
        let r = try run(try Package.rtdb(), ["help", "options"])
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r.stderr)")
        let entries = HelpTests.entries(r.stdout)
        for o in Registry.globalOptions {
            let line = "  " + (o.short.map { "\($0), " } ?? "") + o.long
            #expect(entries.contains { $0.hasPrefix(line) && $0.contains(o.help) }, "rtdb help options lacks \(o.long)")
        }
    }

    /// The entries of a two-column table, each with its wrapped lines joined again: a line
    /// starting with two spaces and a non-space starts an entry, deeper-indented ones go on it.
    static func entries(_ text: String) -> [String] {
        var entries: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("   "), let last = entries.popLast() {
                entries.append(last + " " + line.drop { $0 == " " })
            } else {
                entries.append(String(line))
            }
        }
        return entries
    }

    /// `text` with every run of spaces and newlines made one space: what wrapping leaves alone.
    static func words(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    /// Every text `rtdb` prints as help.
    static let helpCommands: [[String]] = [["help"], ["help", "options"], ["help", "guide"]]
        + Registry.visibleCommands.map { [$0.name, "--help"] }

    /// The lines wrapped to the width. Not these: examples and the guide's command lines are
    /// commands to copy, never broken, and a single word longer than a line (a URL, a JSON
    /// shape) stands alone on its line.
    static func wrappedLines(_ text: String) -> [Substring] {
        var lines: [Substring] = []
        var inExamples = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasSuffix(":") && !line.hasPrefix(" ") { inExamples = line == "Examples:" }
            if line.isEmpty { inExamples = false }
            let command = line.hasPrefix("      ") && !line.hasPrefix("       ")
                && ["rtdb ", "key=", "post="].contains { line.dropFirst(6).hasPrefix($0) }
            let oneWord = !line.drop { $0 == " " }.contains(" ")
            if !inExamples && !command && !oneWord { lines.append(line) }
        }
        return lines
    }

    @Test("help is wrapped to 80 columns when stdout is not a terminal")
    func eightyColumnsOffATerminal() throws {
        let rtdb = try Package.rtdb()
        for args in HelpTests.helpCommands {
            let r = try run(rtdb, args, environment: ["COLUMNS": "200"])
            #expect(r.status == 0, "\(args): \(r.stderr)")
            for line in HelpTests.wrappedLines(r.stdout) {
                #expect(line.count <= 80, "rtdb \(args.joined(separator: " ")): \(line.count) columns: \(line)")
            }
        }
    }

    @Test("help is wrapped to the terminal's width, and says the same at any width")
    func terminalWidth() throws {
        let script = try requireTool("script")
        var environment = ProcessInfo.processInfo.environment
        environment["SHELL"] = "/bin/sh"
        let rtdb = try Package.rtdb()
        for args in [["help"], ["help", "options"], ["get", "--help"], ["watch", "--help"]] {
            var words: [Int: [Substring]] = [:]
            for columns in [50, 80, 132] {
                let quoted = args.map { "'\($0)'" }.joined(separator: " ")
                let r = try run(script, ["-qec", "stty cols \(columns); '\(rtdb)' \(quoted)", "/dev/null"], environment: environment)
                #expect(r.status == 0, "\(r.stderr)")
                let text = r.stdout.replacingOccurrences(of: "\r\n", with: "\n")
                for line in HelpTests.wrappedLines(text) {
                    #expect(line.count <= columns, "rtdb \(quoted) at \(columns) columns: \(line)")
                }
                words[columns] = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
            }
            #expect(words[50] == words[80] && words[80] == words[132], "rtdb \(args): the words differ with the width")
            #expect(words[50]?.isEmpty == false)
        }
    }

    @Test("the overview lists exit status 10, incomplete")
    func overviewExitStatuses() throws {
        let r = try run(try Package.rtdb(), ["help"])
        #expect(r.status == 0)
        let words = HelpTests.words(r.stdout)
        #expect(words.contains("10 incomplete"), "\(r.stdout)")
        for status in ["0 ok", "2 usage", "9 committed but not printed", "11 nothing there (get --exists)", "130/143"] {
            #expect(words.contains(status), "rtdb help lacks \(status)")
        }
    }
}
