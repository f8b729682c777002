import Testing
@testable import RTDBCore

@Suite struct TransactionBackoffTests {
    @Test("the ceiling starts at the stale attempt's length and doubles with each further attempt")
    func ceilingDoubles() {
        #expect(TransactionBackoff.ceiling(before: 2, lastAttemptSeconds: 0.05) == 0.05)
        #expect(TransactionBackoff.ceiling(before: 3, lastAttemptSeconds: 0.05) == 0.1)
        #expect(TransactionBackoff.ceiling(before: 5, lastAttemptSeconds: 0.05) == 0.4)
    }

    @Test("the ceiling is never below a millisecond nor above two seconds")
    func ceilingIsBounded() {
        #expect(TransactionBackoff.ceiling(before: 2, lastAttemptSeconds: 0) == TransactionBackoff.minSeconds)
        #expect(TransactionBackoff.ceiling(before: 2, lastAttemptSeconds: -1) == TransactionBackoff.minSeconds)
        #expect(TransactionBackoff.ceiling(before: 25, lastAttemptSeconds: 0.05) == TransactionBackoff.maxSeconds)
        #expect(TransactionBackoff.ceiling(before: 2, lastAttemptSeconds: 60) == TransactionBackoff.maxSeconds)
        #expect(TransactionBackoff.ceiling(before: Int.max, lastAttemptSeconds: 1) == TransactionBackoff.maxSeconds)
    }

    @Test("the pause is a random share of the ceiling (full jitter)")
    func pauseIsJittered() {
        #expect(TransactionBackoff(random: { 0 }).pause(before: 4, lastAttemptSeconds: 0.1) == 0)
        #expect(TransactionBackoff(random: { 0.5 }).pause(before: 4, lastAttemptSeconds: 0.1) == 0.2)
        #expect(TransactionBackoff(random: { 1 }).pause(before: 4, lastAttemptSeconds: 0.1) == 0.4)
        // A generator out of range cannot make the pause negative or longer than the ceiling.
        #expect(TransactionBackoff(random: { 7 }).pause(before: 2, lastAttemptSeconds: 0.1) == 0.1)
    }
}
