import Foundation
import Testing

/// Options for remote targets are refused like --url until remote targets exist, from the
/// command line or the environment: never silently ignored.
extension GlobalOptionTests {
    @Test(arguments: [["--auth", "secret"], ["--access-token", "ya29.token"], ["--auth=secret"], ["--access-token="]])
    func credentialOptionsAreUnsupported(option: [String]) throws {
        let sb = Sandbox()
        for args in [["get", "/x"], ["set", "/x", "1"], ["query", "/"], ["watch", "/x"], ["increment", "/n"],
                     ["push", "/l", "1"], ["update", "/", "{\"a\":1}"], ["remove", "/x"], ["tx", "/x", "--", "cat"]] {
            let r = sb.rtdb(option + args)
            expectError(r, status: 7, code: "unsupported")
            let name = String(option[0].prefix { $0 != "=" })
            #expect(r.error?.message.contains(name) == true, "the message names \(name): \(r)")
            #expect(r.error?.message.contains("secret") == false, "a credential must not be echoed: \(r)")
        }
        expectError(sb.rtdb(["get", "/x"] + option), status: 7, code: "unsupported")
        #expect(!sb.exists(sb.db), "a refused command must not touch the embedded file")
    }

    @Test(arguments: ["RTDB_AUTH", "RTDB_ACCESS_TOKEN"])
    func credentialVariablesAreUnsupported(variable: String) throws {
        let sb = Sandbox()
        for args in [["get", "/x"], ["set", "/x", "1"], ["watch", "/x"]] {
            let r = sb.rtdb(args, env: [variable: "s3cret"])
            expectError(r, status: 7, code: "unsupported")
            let message = try #require(r.error?.message)
            #expect(message.contains("\(variable) is set"), "the message names the variable: \(message)")
            #expect(message.contains("unset it"), "the message says how to go on: \(message)")
            #expect(!message.contains("s3cret"), "a credential must not be echoed: \(message)")
        }
        #expect(!sb.exists(sb.db))
        // An empty variable counts as unset, so `VAR= rtdb …` runs one command on the file.
        expectOK(sb.rtdb("set", "/x", "1", env: [variable: ""]), "{\"path\":\"/x\",\"value\":1}\n")
        // Help and --version need no target.
        #expect(sb.rtdb("help", "get", env: [variable: "s3cret"]).status == 0)
        #expect(sb.rtdb("--version", env: [variable: "s3cret"]).status == 0)
    }

    @Test func urlVariableNamesItselfInTheError() throws {
        let sb = Sandbox()
        let r = sb.rtdb("get", "/x", env: ["RTDB_URL": "https://demo.firebaseio.com"])
        expectError(r, status: 7, code: "unsupported")
        #expect(r.error?.message.contains("RTDB_URL is set (https://demo.firebaseio.com)") == true, "\(r)")
    }

    /// FIREBASE_DATABASE_EMULATOR_HOST only redirects a --url; without one it changes nothing.
    @Test func emulatorHostAloneIsNotARemoteTarget() {
        let sb = Sandbox()
        expectOK(sb.rtdb("set", "/x", "1", env: ["FIREBASE_DATABASE_EMULATOR_HOST": "127.0.0.1:9000"]), "{\"path\":\"/x\",\"value\":1}\n")
    }
}
