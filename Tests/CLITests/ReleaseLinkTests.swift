import Foundation
import Testing

/// What the release binary may link. A release build on Linux carries the Swift runtime itself
/// and nothing of Foundation (Package.swift: -static-stdlib, no Foundation libraries, no ICU),
/// so a source of the binary that imports Foundation links in debug builds, where the tests run,
/// and fails only in `swift build -c release`, the README's first command. The C library is
/// imported as Glibc or Darwin instead.
@Suite struct ReleaseLinkTests {
    @Test func noSourceOfTheBinaryImportsFoundation() throws {
        let sources = Package.root.appendingPathComponent("Sources")
        let walker = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var offenders: [String] = []
        var count = 0
        for case let url as URL in walker where url.pathExtension == "swift" {
            count += 1
            let text = try String(contentsOf: url, encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("import Foundation") || line.hasPrefix("@_exported import Foundation") {
                offenders.append(url.path.replacingOccurrences(of: Package.root.path + "/", with: "") + ": " + line)
            }
        }
        #expect(count > 100, "found only \(count) sources under \(sources.path)")
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }
}
