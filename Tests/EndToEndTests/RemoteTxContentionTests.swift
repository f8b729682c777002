import Foundation
import Testing

/// Remote transactions under contention: processes that run `tx` on one path of a server at
/// once all commit within Firebase's 25 attempts, because each waits a random, growing moment
/// after a stale attempt (TransactionBackoff) instead of retrying in lockstep.
@Suite struct RemoteTxContentionTests {
    /// Runs 8 processes of 10 `tx /counter -- CMD…` each against a fresh server and checks that
    /// all 80 committed.
    func eightByTen(_ command: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sb = Sandbox()
        sb.seed("/counter", "0")
        let server = try #require(ServeProcess(sb), sourceLocation: sourceLocation)
        let url = server.url + "?ns=test"
        // Each process runs its transactions one after the other; a failed one says so.
        let script = """
            for p in 1 2 3 4 5 6 7 8; do
              ( for i in 1 2 3 4 5 6 7 8 9 10; do
                  "$RTDB" --url "$URL" tx /counter -- \(command) || echo "tx failed with status $?" >&2
                done ) &
            done
            wait
            """
        let r = sb.program(["sh", "-c", script], env: ["URL": url], timeout: 300)
        #expect(r.status == 0, "\(r)", sourceLocation: sourceLocation)
        #expect(!r.stderr.contains("not_committed") && !r.stderr.contains("failed"), "\(r.stderr)", sourceLocation: sourceLocation)
        let records = lines(r.stdout)
        #expect(records.count == 80, sourceLocation: sourceLocation)
        #expect(records.allSatisfy { $0["committed"] as? Bool == true }, "\(r.stdout)", sourceLocation: sourceLocation)
        #expect(sb.get("/counter") == "80", sourceLocation: sourceLocation)
    }

    @Test(.enabled(if: Binary.onPath("jq") != nil, "jq is needed"))
    func eightProcessesOfTenJqIncrementsEndAtEighty() throws {
        try eightByTen("jq '.+1'")
    }

    /// A command that takes a while (0.2 s) widens each attempt: retried within a few
    /// milliseconds, 5 of these 80 transactions gave up after 25 attempts.
    @Test func eightProcessesOfTenSlowIncrementsEndAtEighty() throws {
        try eightByTen("sh -c 'read n; sleep 0.2; echo $((n + 1))'")
    }
}
