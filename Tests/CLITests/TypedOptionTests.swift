import Foundation
import RTDBCore
import Testing
@testable import RTDBCLI

/// A command of its own, so the parser's handling of each kind of option is tested apart from
/// the real commands' declarations.
private enum Sample {
    static let verbose = Flag("--verbose", short: "-v", "say more")
    static let level = Valued<Int>("--level", value: "N", kind: .number, environment: "RTDB_TYPED_OPTION_TEST_LEVEL", "how much") { text, source in
        try OptionValue.whole(text, source, needs: "a whole number ≥ 1") { $0 >= 1 }
    }
    static let pair = Words("--pair", value: "A B", kind: .text, arity: 2, repeatable: true, "two words, as often as needed")
    static let one = Words("--one", value: "A", kind: .text, repeatable: true, "one word, as often as needed")
    static let left = Flag("--left", "go left")
    static let right = Flag("--right", "go right")
    enum Speed: String, CaseIterable, Sendable { case fast, slow }
    static let speed = Valued<Speed>("--speed", value: "HOW", "fast or slow")

    static let spec = CommandSpec(
        name: "sample", summary: "a command for tests", usage: "rtdb sample",
        options: [verbose.spec, level.spec, pair.spec, one.spec, left.spec, right.spec, speed.spec],
        exclusions: { [.pair(left, right)] },
        description: "", examples: [], run: { _ in })
}

private func parsed(_ args: [String]) throws -> Parser.Parsed {
    var command: CommandSpec? = nil
    return try Parser.parse(args, command: &command) { $0 == "sample" ? Sample.spec : Registry.command(named: $0) }
}

private func invocation(_ args: [String]) throws -> Invocation {
    guard case .run(let inv) = try parsed(args) else { throw RTDBError(.internal, "\(args) did not parse to a run") }
    return inv
}

/// The usage error `body` throws, as its message ("" when it throws none or another kind).
private func usageMessage(_ body: () throws -> Void) -> String {
    do {
        try body()
        return ""
    } catch let e as RTDBError {
        return e.code == .usage ? e.message : "\(e.code): \(e.message)"
    } catch {
        return "\(error)"
    }
}

@Suite struct TypedOptionTests {
    @Test func aFlagReadsAsWhetherItWasGiven() throws {
        let inv = try invocation(["sample", "-v", "/a"])
        #expect(inv.has(Sample.verbose))
        #expect(!inv.has(Sample.left))
        #expect(inv.positionals == ["/a"])
        #expect(!(try invocation(["sample"])).has(Sample.verbose))
        #expect(usageMessage { _ = try invocation(["sample", "--verbose=yes"]) } == "option --verbose takes no value")
    }

    @Test func aValuedOptionReadsAsItsType() throws {
        #expect(try invocation(["sample", "--level", "3"]).value(Sample.level) == 3)
        #expect(try invocation(["sample", "--level=4"]).value(Sample.level) == 4)
        #expect(try invocation(["sample"]).value(Sample.level) == nil)
        // The value is read when the command asks for it, with the option's own message.
        let bad = try invocation(["sample", "--level", "0"])
        #expect(usageMessage { _ = try bad.value(Sample.level) } == "--level needs a whole number ≥ 1, not \"0\"")
        #expect(usageMessage { _ = try invocation(["sample", "--level"]) } == "option --level needs a value (N)")
        #expect(usageMessage { _ = try invocation(["sample", "--level", "1", "--level", "2"]) } == "option --level given more than once")
    }

    @Test func aChoiceReadsAsItsCase() throws {
        #expect(Sample.speed.spec.choices == ["fast", "slow"])
        #expect(try invocation(["sample", "--speed", "slow"]).value(Sample.speed) == .slow)
        let bad = try invocation(["sample", "--speed", "warp"])
        #expect(usageMessage { _ = try bad.value(Sample.speed) } == "--speed needs fast or slow, not \"warp\"")
    }

    @Test func aSettingFallsBackToItsVariableAndNamesIt() throws {
        // The variable belongs to this test alone.
        setenv("RTDB_TYPED_OPTION_TEST_LEVEL", "0", 1)
        defer { unsetenv("RTDB_TYPED_OPTION_TEST_LEVEL") }
        let inv = try invocation(["sample"])
        #expect(try inv.value(Sample.level) == nil, "value reads the command line only")
        #expect(usageMessage { _ = try inv.setting(Sample.level) } == "RTDB_TYPED_OPTION_TEST_LEVEL needs a whole number ≥ 1, not \"0\"")
        #expect(try invocation(["sample", "--level", "2"]).setting(Sample.level) == 2, "the option beats the variable")
    }

    @Test func anOptionOfArityTwoTakesTwoWords() throws {
        let inv = try invocation(["sample", "--pair", "a", "-b"])
        #expect(inv.occurrences(of: [Sample.pair]).map(\.words) == [["a", "-b"]], "the second word is taken whatever it looks like")
        #expect(try invocation(["sample", "--pair=a", "b"]).occurrences(of: [Sample.pair]).map(\.words) == [["a", "b"]])
        #expect(usageMessage { _ = try invocation(["sample", "--pair", "a"]) } == "option --pair needs 2 values (A B)")
    }

    @Test func repeatableOptionsKeepTheirOrderAcrossOptions() throws {
        let inv = try invocation(["sample", "--pair", "a", "b", "--one", "x", "-v", "--pair", "c", "d", "--one", "y"])
        let seen = inv.occurrences(of: [Sample.pair, Sample.one]).map { "\($0.option.long) \($0.words.joined(separator: " "))" }
        #expect(seen == ["--pair a b", "--one x", "--pair c d", "--one y"])
        #expect(inv.occurrences(of: [Sample.one]).map(\.words) == [["x"], ["y"]])
    }

    @Test func aDeclaredExclusionIsRefusedWithItsMessage() throws {
        #expect(usageMessage { _ = try invocation(["sample", "--left", "--right"]) } == "--left and --right exclude each other")
        #expect(usageMessage { _ = try invocation(["sample", "--left"]) } == "")
        // Help still wins over a conflict.
        guard case .help = try parsed(["sample", "--left", "--right", "--help"]) else {
            Issue.record("--help did not win")
            return
        }
    }

    @Test func theCommandsExclusionsKeepTheirMessagesAndOrder() {
        let cases: [([String], String)] = [
            (["get", "/x", "--shallow", "--export"], "--shallow and --export exclude each other"),
            (["get", "/x", "-r", "--export"], "--raw and --export exclude each other"),
            (["--db", "a.db", "--url", "http://h?ns=a", "get", "/x"], "--db and --url exclude each other"),
            (["--offline", "--online", "get", "/x"], "--offline and --online exclude each other"),
            (["query", "/x", "--limit-to-first", "1", "--limit-to-last", "1"], "--limit-to-first and --limit-to-last exclude each other"),
            (["query", "/x", "--order-by-value", "--order-by-key"], "give one order option at most (--order-by-key, --order-by-value)"),
            (["watch", "/x", "--equal-to", "1", "--end-at", "2", "--start-after", "0"], "--equal-to excludes --start-after"),
            (["keep", "add", "/x", "--start-at", "1", "--start-after", "2"], "--start-at and --start-after exclude each other"),
            (["query", "/x", "--end-at", "1", "--end-before", "2"], "--end-at and --end-before exclude each other"),
            // Several at once: the command's own first, in the order declared, then the global ones.
            (["query", "/x", "--order-by-value", "--order-by-priority", "--limit-to-first", "1", "--limit-to-last", "1"],
             "give one order option at most (--order-by-value, --order-by-priority)"),
            (["--offline", "--online", "--db", "a.db", "--url", "u", "get", "/x", "--shallow", "--export"],
             "--shallow and --export exclude each other"),
            (["--db", "a.db", "--url", "u", "--offline", "--online", "get", "/x"], "--offline and --online exclude each other"),
        ]
        for (args, message) in cases {
            #expect(usageMessage { _ = try invocation(args) } == message, "\(args)")
        }
    }

    @Test func anUnknownOptionIsAUsageError() {
        #expect(usageMessage { _ = try invocation(["sample", "--nope"]) } == "unknown option --nope for sample")
        #expect(usageMessage { _ = try invocation(["--nope", "sample"]) } == "unknown option --nope")
        // Another command's option before the command, and on the wrong command.
        #expect(usageMessage { _ = try invocation(["--shallow", "get", "/x"]) } == "option --shallow must follow the command it belongs to")
        #expect(usageMessage { _ = try invocation(["sample", "--shallow"]) } == "unknown option --shallow for sample")
    }

    @Test func everyOptionIsDeclaredOnceAndEveryExclusionNamesDeclaredOptions() {
        let globals = Registry.globalOptions.map(\.long)
        #expect(Set(globals).count == globals.count)
        for c in Registry.commands {
            let own = c.options.map(\.long)
            #expect(Set(own).count == own.count, "\(c.name) declares an option twice")
            #expect(Set(own).isDisjoint(with: globals), "\(c.name) declares a global option")
            for e in c.exclusions() {
                #expect(Set(e.options).isSubset(of: own), "\(c.name): \(e.options) are not all its options")
            }
        }
        for e in Registry.globalExclusions {
            #expect(Set(e.options).isSubset(of: globals), "\(e.options) are not all global options")
        }
    }
}
