import Testing
import RTDBCore
@testable import RTDBRemote

/// `RemoteTarget.redacted` hides a credential in a URL however the URL spells it: names
/// percent-encoded once or more, in any case, in the fragment, or hidden inside another
/// parameter until decoded; what is no credential is shown as given.
@Suite struct URLRedactionTests {
    static let token = "TOKEN-4242"

    @Test func credentialsAreMaskedHoweverSpelt() {
        let t = URLRedactionTests.token
        let cases: [(url: String, shown: String)] = [
            ("http://h/?ns=a&au%74h=\(t)", "http://h/?ns=a&au%74h=***"),
            ("http://h/?ns=a&%41UTH=\(t)", "http://h/?ns=a&%41UTH=***"),
            ("http://h/?ns=a&au%2574h=\(t)", "http://h/?ns=a&au%2574h=***"),
            ("http://h/?acce%73s_token=\(t)&ns=a", "http://h/?acce%73s_token=***&ns=a"),
            ("http://h/?ns=a&auth+=\(t)", "http://h/?ns=a&auth+=***"),
            ("http://h/#auth=\(t)", "http://h/#auth=***"),
            ("http://h/?ns=a#auth=\(t)", "http://h/?ns=a#auth=***"),
            ("http://h/?ns=a#x&access_token=\(t)", "http://h/?ns=a#x&access_token=***"),
            ("http://h/?ns=a;auth=\(t)", "http://h/?ns=a;auth=***"),
            ("http://h/?ns=a%26auth=\(t)", "http://h/?ns=***"),
            ("http://h/?auth%3D\(t)", "http://h/?***"),
            ("http://h/?ns=a&id_token=\(t)&client_secret=\(t)", "http://h/?ns=a&id_token=***&client_secret=***"),
        ]
        for c in cases {
            let shown = RemoteTarget.redacted(c.url)
            #expect(shown == c.shown, "\(c.url)")
            #expect(!shown.contains(t), "\(c.url)")
        }
    }

    @Test func whatIsNoCredentialIsShownAsGiven() {
        for url in ["http://h:1?ns=a", "http://h/?ns=a&b=c#frag", "https://x.firebaseio.com/", "http://h/?ns=a%20b&print=pretty",
                    "http://h/?ns=50%&x=%zz"] {
            #expect(RemoteTarget.redacted(url) == url)
        }
    }

    @Test func theMaskDoesNotTellTheLength() {
        #expect(RemoteTarget.redacted("http://h/#auth=a") == RemoteTarget.redacted("http://h/#auth=" + String(repeating: "a", count: 99)))
        #expect(RemoteTarget.redacted("http://h/?au%74h=a") == RemoteTarget.redacted("http://h/?au%74h=aaaaaaaaaaaa"))
    }

    @Test func parseErrorsNeverShowTheCredential() {
        let t = URLRedactionTests.token
        for url in ["http://127.0.0.1:1/?ns=a&au%74h=\(t)", "http://127.0.0.1:1/#auth=\(t)", "http://127.0.0.1:1/?ns=a#auth=\(t)",
                    "https://x.firebaseio.com/?acce%73s_token=\(t)", "http://127.0.0.1:1/?auth%3D\(t)"] {
            do {
                _ = try RemoteTarget.parse(url)
                Issue.record("\(url) parsed")
            } catch let e as RTDBError {
                #expect(!e.message.contains(t), "\(e.message)")
                #expect(e.message.contains("***"), "\(e.message)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }
}
