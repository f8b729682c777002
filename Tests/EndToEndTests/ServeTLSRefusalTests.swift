import Foundation
import Testing
import RTDBCore
@testable import RTDBRemote

extension ServeTLSTests {
    /// The error of a realtime connection over https, nil when it connects.
    func connectError(_ url: String, caFile: String?, timeoutSeconds: Double = 10) throws -> Error? {
        let client = RealtimeClient(target: try RemoteTarget.parse(url), credential: .none, timeoutSeconds: timeoutSeconds, caFile: caFile)
        defer { client.close() }
        do {
            try client.connect()
            return nil
        } catch {
            return error
        }
    }

    /// A certificate that does not verify is a fact of the error the realtime client throws
    /// (which ends a session rather than retrying); a server that never answers the TLS
    /// handshake (plain http waits for a request) fails without it.
    @Test func aCertificateThatDoesNotVerifyIsAFactOfTheError() throws {
        let s = Sandbox()
        let dir = pki(s)
        let server = try #require(serve(s, dir))
        let url = localhost(server.url) + "?ns=demo"
        let refused = try connectError(url, caFile: nil) as? RTDBError
        #expect(refused?.fact == .certificateRefused, "\(String(describing: refused))")
        #expect(refused?.message == "cannot reach localhost over https: certificate verify failed: unable to get local issuer certificate")
        #expect(try connectError(url, caFile: dir + "/ca.pem") == nil)

        let plain = try #require(ServeProcess(s, name: "plain"))
        let noTLS = try connectError(plain.url.replacingOccurrences(of: "http://", with: "https://") + "?ns=demo", caFile: nil,
                                     timeoutSeconds: 1)
        #expect(noTLS != nil, "connected over https to a plain http server")
        #expect((noTLS as? RTDBError)?.fact == nil, "\(String(describing: noTLS))")
    }
}
