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
            #expect(text.contains("see 'rtdb help options'"), "rtdb \(c.name) --help does not point to rtdb help options")
            // No global option is described: none starts a line of its own.
            for o in Registry.globalOptions {
                let described = text.split(separator: "\n").contains { $0.hasPrefix("  " + (o.short.map { "\($0), " } ?? "") + o.long) }
                #expect(!described, "rtdb \(c.name) --help repeats the global option \(o.long)")
                #expect(text.contains(o.short ?? o.long), "rtdb \(c.name) --help does not name the global option \(o.long)")
            }
            guard let first = c.options.first else { continue }
            let options = try #require(text.range(of: "\nOptions:\n"), "rtdb \(c.name) --help has no Options section")
            #expect(text.contains("  " + (first.short.map { "\($0), " } ?? "") + first.long), "\(c.name)")
            let description = String(c.description.split(separator: " ").prefix(3).joined(separator: " "))
            if !description.isEmpty, let d = text.range(of: description) {
                #expect(options.lowerBound < d.lowerBound, "rtdb \(c.name) --help shows its description before its options")
            }
        }
    }

    @Test("rtdb help options explains every global option")
    func globalOptions() throws {
        let r = try run(try Package.rtdb(), ["help", "options"])
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r.stderr)")
        for o in Registry.globalOptions {
            let line = "  " + (o.short.map { "\($0), " } ?? "") + o.long
            #expect(r.stdout.split(separator: "\n").contains { $0.hasPrefix(line) && $0.contains(o.help) }, "rtdb help options lacks \(o.long)")
        }
    }

    @Test("the overview lists exit status 10, incomplete")
    func overviewExitStatuses() throws {
        let r = try run(try Package.rtdb(), ["help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("10 incomplete"), "\(r.stdout)")
        for status in ["0 ok", "2 usage", "9 committed but not printed", "130/143"] {
            #expect(r.stdout.contains(status), "rtdb help lacks \(status)")
        }
    }
}
