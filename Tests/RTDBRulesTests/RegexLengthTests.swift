import Testing
@testable import RTDBRules

/// A rule's regular expression over a long string (a `.validate` on what a client writes):
/// repeated scalars are matched by loops, so the length of the text costs no stack; repeated
/// groups are bounded and fail as too expensive. Run on an 8 MB stack, as every thread that
/// checks rules has (the main thread, and the detached writes' threads).
@Suite struct RegexLengthTests {
    enum Outcome: Equatable, Sendable { case matched(Bool), tooExpensive }

    func outcome(_ pattern: String, _ text: String) -> Outcome? {
        onStack(of: 8 << 20) {
            do {
                let r = try RuleRegex(body: pattern, flags: "")
                return .matched(try r.matches(text))
            } catch {
                return .tooExpensive
            }
        }
    }

    @Test func aRepeatedScalarOverALongTextNeedsNoStack() {
        let long = String(repeating: "a", count: 60_000)
        #expect(outcome("^[a-z]*$", long) == .matched(true))
        #expect(outcome("^a+b$", long + "b") == .matched(true))
        #expect(outcome("^a+b$", String(repeating: "a", count: 20_000)) == .matched(false))
        // Past the step budget the match is a rule error, as before: still no crash.
        #expect(outcome("^a+b$", long) == .tooExpensive)
        #expect(outcome("^.{0,100000}$", long) == .matched(true))
        #expect(outcome("^\\d*$", long) == .matched(false))
    }

    @Test func greedyRepetitionStillBacksOff() {
        // The run of a's gives back what the rest of the pattern needs.
        #expect(outcome("^a*ab$", "aaaab") == .matched(true))
        #expect(outcome("^a{2,3}a$", "aaaa") == .matched(true))
        #expect(outcome("^a{2,3}$", "aaaa") == .matched(false))
        #expect(outcome("^x[0-9]+y", "x123y") == .matched(true))
        #expect(outcome("b.*c", "aabxxcdd") == .matched(true))
    }

    @Test func aRepeatedGroupIsBoundedNotACrash() {
        let most = Matcher.maxNesting - 1
        #expect(outcome("^(ab)*$", String(repeating: "ab", count: most)) == .matched(true))
        #expect(outcome("^(a|b)+c$", String(repeating: "ab", count: most / 2) + "c") == .matched(true))
        #expect(outcome("^(ab)*$", String(repeating: "ab", count: 50_000)) == .tooExpensive)
    }
}
