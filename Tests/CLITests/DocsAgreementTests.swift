import Foundation
import RTDBCLI
import RTDBCore
import Testing

/// The README and the man page tell the same exit statuses, with the codes the program uses.
@Suite("docs agree")
struct DocsAgreementTests {
    /// status → error codes, from the README's table (`| 3 | `a`, `b` | when |`).
    static func readmeStatuses() throws -> [Int: Set<String>] {
        let readme = try Package.text("README.md")
        guard let start = readme.range(of: "## Exit status\n") else { throw Failure("README.md has no Exit status section") }
        var table: [Int: Set<String>] = [:]
        for line in readme[start.upperBound...].split(separator: "\n").prefix(while: { !$0.hasPrefix("## ") }) {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, let status = Int(cells[1]) else { continue }
            table[status] = Set(cells[2].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) })
        }
        return table
    }

    /// status → error codes, from the man page's EXIT STATUS list (`.It 3` then `.Li a , b :`).
    static func manStatuses() throws -> [Int: Set<String>] {
        let man = try Package.text("man/rtdb.1")
        guard let start = man.range(of: "\n.Sh EXIT STATUS\n") else { throw Failure("man/rtdb.1 has no EXIT STATUS section") }
        var table: [Int: Set<String>] = [:]
        var current: Int? = nil
        var inCodes = false
        for line in man[start.upperBound...].split(separator: "\n").prefix(while: { !$0.hasPrefix(".Sh ") }) {
            if line.hasPrefix(".It "), let status = Int(line.dropFirst(4)) {
                current = status
                table[status] = []
                inCodes = true
            } else if let status = current, inCodes, line.hasPrefix(".Li ") {
                let words = line.dropFirst(4).split(separator: " ").map(String.init)
                table[status, default: []].formUnion(words.filter { $0 != "," && $0 != ":" })
                inCodes = !line.hasSuffix(" :")
            } else {
                inCodes = false
            }
        }
        return table
    }

    @Test("README and man page list the same statuses and codes, as the program maps them")
    func exitStatusesAgree() throws {
        let readme = try Self.readmeStatuses()
        let man = try Self.manStatuses()
        #expect(Set(readme.keys) == Set(man.keys), "README statuses \(readme.keys.sorted()), man page \(man.keys.sorted())")
        #expect(Set(readme.keys).isSuperset(of: [0, 1, 2, 3, 4, 5, 6, 7, 130, 143]))
        for status in readme.keys.sorted() {
            #expect(readme[status] == man[status], "status \(status): README \(readme[status] ?? []), man page \(man[status] ?? [])")
        }
        var program: [Int: Set<String>] = [:]
        for code in RTDBError.Code.allCases { program[Int(code.exitStatus), default: []].insert(code.rawValue) }
        for (status, codes) in program {
            #expect(readme[status] == codes, "status \(status): the program uses \(codes.sorted()), README lists \(readme[status] ?? [])")
        }
    }

    @Test("status 4 means the same in README and man page")
    func status4() throws {
        let readme = try Package.text("README.md")
        let man = try Package.text("man/rtdb.1").replacingOccurrences(of: "\n", with: " ")
        let row = readme.split(separator: "\n").first { $0.hasPrefix("| 4 |") }.map(String.init) ?? ""
        for phrase in ["a file cannot be read or written", "the database file, its folder, an input file",
                       "a remote database refused the credentials, or its rules refused the operation"] {
            #expect(row.contains(phrase), "README status 4 lacks: \(phrase)")
            #expect(man.contains(phrase.replacingOccurrences(of: "(", with: "")), "man page status 4 lacks: \(phrase)")
        }
    }

    @Test("rtdb --version, the README and the man page name the same release and schema")
    func versionAgrees() throws {
        let r = try run(try Package.rtdb(), ["--version"])
        #expect(r.status == 0)
        let line = r.stdout.trimmingCharacters(in: .newlines)
        #expect(line == "rtdb \(Registry.version) (database schema \(Registry.schemaVersion))", "\(line)")
        let readme = try Package.text("README.md").replacingOccurrences(of: "\n", with: " ")
        let quoted = readme.contains("`rtdb --version` prints `\(line)`")
        #expect(quoted, "the README does not quote \(line)")
        let schema = readme.contains("schema version \(Registry.schemaVersion)")
        #expect(schema, "the README does not name schema version \(Registry.schemaVersion)")
        let man = try Package.text("man/rtdb.1")
        let inMan = man.contains(".Ql \(line) .")
        #expect(inMan, "the man page does not quote \(line)")
    }

    @Test("the README says where `man rtdb` works")
    func manLine() throws {
        let readme = try Package.text("README.md").replacingOccurrences(of: "\n", with: " ")
        #expect(readme.contains("`man rtdb` once `make install` has put it in place, `man ./man/rtdb.1` before that"))
    }

    /// The rows of `rtdb help guide`: each SDK call (its line and deeper-indented continuation
    /// lines) with the command line below it.
    static func guideRows(_ text: String) -> [(call: String, command: String)] {
        var rows: [(call: String, command: String)] = []
        var call: String? = nil
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "Idioms:" { break }
            if line.hasPrefix("      ") {
                if let c = call { rows.append((c, line.trimmingCharacters(in: .whitespaces))); call = nil }
            } else if line.hasPrefix("    "), let c = call {
                call = c + " " + line.trimmingCharacters(in: .whitespaces)
            } else if line.hasPrefix("  ") {
                call = line.trimmingCharacters(in: .whitespaces)
            }
        }
        return rows
    }

    @Test("the README's guide table has every row of rtdb help guide, call and command alike")
    func guideTable() throws {
        let r = try run(try Package.rtdb(), ["help", "guide"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = DocsAgreementTests.guideRows(r.stdout)
        #expect(rows.count >= 15, "\(rows)")
        for required in ["setValue", "updateChildValues", "childByAutoId", "getData", "observeSingleEvent",
                         "observe(.childAdded)", "removeAllObservers", "runTransactionBlock", "ServerValue.increment",
                         "ServerValue.timestamp", "queryOrdered", "keepSynced", "isPersistenceEnabled", "onDisconnect",
                         ".info/connected", ".info/serverTimeOffset"] {
            #expect(rows.contains { $0.call.contains(required) }, "rtdb help guide lacks \(required)")
        }
        let readme = try Package.text("README.md")
        let section = try #require(readme.range(of: "## Coming from the Firebase guides\n"), "README has no guide section")
        let rest = readme[section.upperBound...]
        let body = rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        for row in rows {
            let escaped = row.command.replacingOccurrences(of: "|", with: "\\|")
            #expect(body.contains("| `\(row.call)` | `\(escaped)` |"), "README's guide table lacks \(row.call) → \(row.command)")
        }
    }
}
