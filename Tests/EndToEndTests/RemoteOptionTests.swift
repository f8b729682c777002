import Foundation
import Testing

/// Credential options are for remote targets: without --url they are a usage error, never
/// silently dropped; their environment variables apply to remote targets only.
extension GlobalOptionTests {
    @Test(arguments: [["--auth", "secret"], ["--access-token", "ya29.token"], ["--auth=secret"], ["--access-token="],
                      ["--credentials", "key.json"], ["--cacert", "ca.pem"]])
    func credentialOptionsWithoutAURLAreUsageErrors(option: [String]) throws {
        let sb = Sandbox()
        for args in [["get", "/x"], ["set", "/x", "1"], ["query", "/"], ["watch", "/x"], ["increment", "/n"],
                     ["push", "/l", "1"], ["update", "/", "{\"a\":1}"], ["remove", "/x"], ["tx", "/x", "--", "cat"]] {
            let r = sb.rtdb(option + args)
            expectError(r, status: 2, code: "usage")
            let name = String(option[0].prefix { $0 != "=" })
            #expect(r.error?.message.contains(name) == true, "the message names \(name): \(r)")
            #expect(r.error?.message.contains("--url") == true, "the message says what is missing: \(r)")
            #expect(r.error?.message.contains("secret") == false, "a credential must not be echoed: \(r)")
        }
        expectError(sb.rtdb(["get", "/x"] + option), status: 2, code: "usage")
        #expect(!sb.exists(sb.db), "a refused command must not touch the embedded file")
    }

    @Test(arguments: ["RTDB_AUTH", "RTDB_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "RTDB_CACERT"])
    func credentialVariablesApplyToRemoteTargetsOnly(variable: String) throws {
        let sb = Sandbox()
        // A shell that exports a credential for remote work still runs local commands.
        expectOK(sb.rtdb("set", "/x", "1", env: [variable: "s3cret"]), "{\"path\":\"/x\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "/x", env: [variable: "s3cret"]), "1\n")
        #expect(sb.rtdb("help", "get", env: [variable: "s3cret"]).status == 0)
    }

    @Test func aURLVariableMakesTheRemoteDatabaseTheTarget() throws {
        let sb = Sandbox()
        // Nothing listens on port 1: the remote target is used (and unreachable), not the file.
        let r = sb.rtdb("get", "/x", env: ["RTDB_URL": "http://127.0.0.1:1?ns=demo", "RTDB_TIMEOUT": "5"])
        expectError(r, status: 6, code: "unavailable")
        #expect(!sb.exists(sb.db))
    }

    /// FIREBASE_DATABASE_EMULATOR_HOST only redirects a --url; without one it changes nothing.
    @Test func emulatorHostAloneIsNotARemoteTarget() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/x", "1", env: ["FIREBASE_DATABASE_EMULATOR_HOST": "127.0.0.1:9000"]), "{\"path\":\"/x\",\"value\":1}\n")
    }
}
