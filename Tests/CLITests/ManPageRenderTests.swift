import Foundation
import RTDBCLI
import Testing

/// The man page must read well with both formatters people have: mandoc (BSD, macOS, Alpine)
/// and groff (most Linux distributions), at 80 columns.
@Suite("man page rendering")
struct ManPageRenderTests {
    /// The page as each formatter renders it at 80 columns, without overstriking or colour.
    static let formatters: [(tool: String, arguments: [String])] = [
        ("mandoc", ["-Tutf8", "-O", "width=80"]),
        ("groff", ["-man", "-Tutf8", "-rLL=80n", "-ww", "-P-cbou"]),
    ]

    /// Text without backspace overstriking (`X\bX` bold, `_\bX` underline), tabs expanded.
    static func plain(_ text: String) -> [String] {
        var out = ""
        for ch in text {
            if ch == "\u{8}" { if !out.isEmpty { out.removeLast() } } else { out.append(ch) }
        }
        return out.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var expanded = ""
            for ch in line {
                if ch == "\t" {
                    repeat { expanded.append(" ") } while expanded.count % 8 != 0
                } else {
                    expanded.append(ch)
                }
            }
            return expanded
        }
    }

    @Test("renders without warnings and fits 80 columns", arguments: formatters.map(\.tool))
    func fits80Columns(tool: String) throws {
        let path = try requireTool(tool)
        let args = Self.formatters.first { $0.tool == tool }?.arguments ?? []
        let r = try run(path, args + [Package.file("man/rtdb.1").path])
        #expect(r.status == 0, "\(tool) exited with \(r.status): \(r.stderr)")
        #expect(r.stderr.isEmpty, "\(tool) warned:\n\(r.stderr)")
        let lines = Self.plain(r.stdout)
        #expect(lines.count > 100, "\(tool) rendered almost nothing:\n\(r.stdout)")
        for line in lines where line.count > 80 {
            Issue.record("\(tool): a line of \(line.count) columns:\n\(line)")
        }
    }

    /// Each status of the EXIT STATUS list starts its own entry, its text beside it.
    @Test("the EXIT STATUS list renders one entry per status", arguments: formatters.map(\.tool))
    func exitStatusList(tool: String) throws {
        let path = try requireTool(tool)
        let args = Self.formatters.first { $0.tool == tool }?.arguments ?? []
        let r = try run(path, args + [Package.file("man/rtdb.1").path])
        let lines = Self.plain(r.stdout)
        guard let start = lines.firstIndex(of: "EXIT STATUS") else {
            Issue.record("\(tool): no EXIT STATUS section")
            return
        }
        let section = lines[(start + 1)...].prefix { !$0.hasPrefix("EXAMPLES") }
        let entries: [(status: String, text: String)] = [
            ("0", "Success"), ("1", "internal, io_error:"), ("2", "usage:"), ("3", "invalid_json,"),
            ("4", "permission_denied,"), ("5", "not_committed:"), ("6", "unavailable, timeout:"),
            ("7", "unsupported:"), ("130", "Ended by SIGINT"), ("143", "Ended by SIGTERM"),
        ]
        for e in entries {
            let found = section.contains { line in
                let words = line.split(separator: " ", maxSplits: 1)
                return words.count == 2 && words[0] == e.status && words[1].drop { $0 == " " }.hasPrefix(e.text)
            }
            #expect(found, "\(tool): EXIT STATUS has no entry `\(e.status)  \(e.text)…`:\n\(section.joined(separator: "\n"))")
        }
    }
}
