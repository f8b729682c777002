import Foundation
import Testing

/// Where `rtdb serve` puts its data viewer, and `--no-ui`. What the page does is tested in a
/// browser (Tests/Conformance/test_viewer.py); here, what the command promises around it.
@Suite struct ServeViewerTests {
    @Test func theListeningLineNamesTheViewerWhichAnswersThere() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let ui = try #require(server.line["ui"] as? String)
        #expect(ui == server.url + "/.ui/")
        let page = curl(s, ["-D", "-", ui])
        #expect(page.code == "200")
        #expect(page.body.lowercased().contains("content-type: text/html"))
        #expect(page.body.contains("<!doctype html>"))
        // A browser opening the root is sent to it; curl asking for JSON is not.
        let root = curl(s, ["-H", "Accept: text/html", "-D", "-", "-o", "/dev/null", server.url + "/?ns=demo"])
        #expect(root.body.contains("Location: /.ui/?ns=demo\r\n"))
        #expect(root.code == "302")
        #expect(curl(s, [server.url + "/"]).code == "404")
    }

    @Test func noUITurnsItOff() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, ["--no-ui"]))
        #expect(server.line["ui"] == nil)
        #expect(curl(s, [server.url + "/.ui/"]).code == "404")
        #expect(curl(s, ["-H", "Accept: text/html", server.url + "/"]).code == "404")
        // The REST API is as it was.
        #expect(curl(s, ["-X", "PUT", "-d", "1", server.url + "/a.json"]).body == "1")
    }

    @Test func withASecretThePageIsServedButCarriesNothingOfIt() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, ["--secret-file", s.write("secret", "s3cret-viewer-token\n")]))
        let ui = try #require(server.line["ui"] as? String)
        for file in ["", "viewer.js", "viewer.css"] {
            let r = curl(s, [ui + file])
            #expect(r.code == "200", "\(file)")
            #expect(!r.body.contains("s3cret-viewer-token"))
        }
        // The data is not: the page must ask for the credential.
        #expect(curl(s, [server.url + "/.json"]).code == "401")
    }
}
