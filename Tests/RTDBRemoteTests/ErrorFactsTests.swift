import RTDBCore
import RTDBNet
import RTDBWire
@testable import RTDBRemote
import Testing

/// The facts the remote client decides on travel with its errors, set where the failure is
/// known; the words of a message never decide anything.
@Suite struct ErrorFactsTests {
    let key = "dGhlIHNhbXBsZSBub25jZQ=="

    /// The error `checkUpgrade` throws for `head`, nil when it accepts it.
    func upgradeError(_ head: String) -> RTDBError? {
        do {
            try WebSocketConnection.checkUpgrade(head, key: key, host: "h")
            return nil
        } catch {
            return error as? RTDBError
        }
    }

    @Test func anUpgradeAnsweredWithAnotherStatusIsARefusal() throws {
        let refused = try #require(upgradeError("HTTP/1.1 404 Not Found\r\nContent-Length: 0"))
        #expect(refused.fact == .upgradeRefused)
        #expect(refused == RTDBError(.unavailable, "h refused the realtime connection (HTTP 404)", fact: .upgradeRefused))
        #expect(RealtimeClient.isUpgradeRefusal(refused))
        // A 101 that is not a proper WebSocket answer, or no HTTP at all: broken, not a refusal.
        for head in ["HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket", "SSH-2.0-OpenSSH"] {
            let broken = try #require(upgradeError(head))
            #expect(broken.fact == nil, "\(head)")
            #expect(!RealtimeClient.isUpgradeRefusal(broken), "\(head)")
        }
    }

    @Test func anUpgradeRefusalIsDecidedByItsFactNotItsWords() {
        let words = RTDBError(.unavailable, "h refused the realtime connection (HTTP 404)")
        #expect(!RealtimeClient.isUpgradeRefusal(words))
        #expect(RealtimeClient.isUpgradeRefusal(RTDBError(.unavailable, "anything", fact: .upgradeRefused)))
    }

    @Test func onlyACertificateThatDidNotVerifyIsACertificateRefusal() {
        let refused = TLSHook.connectionError(.verification("certificate verify failed: self-signed certificate"), host: "h")
        #expect(refused == RTDBError(.unavailable, "cannot reach h over https: certificate verify failed: self-signed certificate",
                                     fact: .certificateRefused))
        #expect(TLSHook.isCertificateRefusal(refused))
        for other: TLSError in [.protocolFailure("TLS handshake with h failed: certificate verify failed: x"),
                                .unavailable("certificate verify failed: x"), .configuration("CA file x holds nothing")] {
            let e = TLSHook.connectionError(other, host: "h")
            #expect(e.code == .unavailable && e.fact == nil, "\(other)")
            #expect(!TLSHook.isCertificateRefusal(e), "\(other)")
        }
    }

    @Test func aCertificateRefusalIsDecidedByItsFactNotItsWords() {
        let words = RTDBError(.unavailable, "cannot reach h over https: certificate verify failed: self-signed certificate")
        #expect(!TLSHook.isCertificateRefusal(words))
        #expect(TLSHook.isCertificateRefusal(RTDBError(.unavailable, "anything", fact: .certificateRefused)))
    }

    /// The URL's errors name where it came from, so no caller rewrites their words.
    @Test func urlErrorsNameTheOptionOrVariableThatGaveTheURL() {
        func message(_ url: String, _ source: RemoteTarget.URLSource?) -> String {
            do {
                _ = try source.map { try RemoteTarget.parse(url, from: $0) } ?? RemoteTarget.parse(url)
                return "parsed"
            } catch {
                return (error as? RTDBError)?.message ?? "\(error)"
            }
        }
        let expected = ": not an http or https URL; expected https://NAME.firebaseio.com, "
            + "https://NAME.REGION.firebasedatabase.app or http://HOST:PORT[?ns=NAME]"
        #expect(message("ftp://x", .environment) == "RTDB_URL \"ftp://x\"" + expected)
        #expect(message("ftp://x", .option) == "--url \"ftp://x\"" + expected)
        #expect(message("ftp://x", nil) == "--url \"ftp://x\"" + expected)
    }
}
