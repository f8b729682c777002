import Foundation
import Testing
import RTDBNet
@testable import RTDBServer

/// Rules far longer or deeper than anyone writes, put at run time through
/// `PUT /.settings/rules.json` to a server on a real socket: long ones are served, deep ones are
/// refused with the error `rtdb rules check` gives, and the server answers on either way.
@Suite(.serialized) struct DeepRulesServerTests {
    /// Runs a server on a fresh file for `body`, then stops it.
    func withServer(_ body: (Int) throws -> Void) throws {
        try withServerOnFreshFile { server, _ in try body(server.port) }
    }

    /// One request on a connection of its own; the status and body of the answer.
    func request(_ port: Int, _ method: String, _ target: String, _ body: String = "",
                 headers: [String] = []) throws -> (status: Int, body: String) {
        let stream = try TCPStream.connect(host: "127.0.0.1", port: port, timeoutMillis: 30_000)
        defer { stream.close() }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
        for h in headers { head += h + "\r\n" }
        try Array((head + "\r\n" + body).utf8).withUnsafeBytes { try stream.write($0, timeoutMillis: 30_000) }
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: 60_000) }
            if n == 0 { break }
            got += buffer[0..<n]
        }
        let text = String(decoding: got, as: UTF8.self)
        let status = Int(text.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? -1
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, body)
    }

    static let admin = "Authorization: Bearer owner"

    @Test("100,000 || terms put at run time are served; reads under them are answered")
    func longRules() throws {
        let terms = (0..<100_000).map { "auth.uid == 'u\($0)'" }.joined(separator: " || ")
        let rules = "{\"rules\":{\".read\":\"" + terms + "\",\".write\":false}}"
        try withServer { port in
            let put = try request(port, "PUT", "/.settings/rules.json", rules, headers: [DeepRulesServerTests.admin])
            #expect(put.status == 200, "\(put.body.prefix(200))")
            #expect(try request(port, "PUT", "/a.json", "1", headers: [DeepRulesServerTests.admin]).status == 200)
            let allowed = try request(port, "GET", "/a.json?auth=" + mockToken("u3"))
            #expect(allowed.status == 200)
            #expect(allowed.body == "1")
            #expect(try request(port, "GET", "/a.json?auth=" + mockToken("nobody")).status == 401)
            #expect(try request(port, "GET", "/a.json").status == 401)
        }
    }

    @Test("rules nested too deeply are a 400 with rules check's message; the old rules stay")
    func deepRules() throws {
        let tooDeep = "{\"rules\":{\".read\":\"" + String(repeating: "!", count: 20_000) + "true\"}}"
        let tooDeepJSON = "{\"rules\":" + String(repeating: "{\"a\":", count: 20_000) + "{}" + String(repeating: "}", count: 20_001)
        try withServer { port in
            #expect(try request(port, "PUT", "/.settings/rules.json", #"{"rules":{".read":true}}"#,
                                headers: [DeepRulesServerTests.admin]).status == 200)
            let put = try request(port, "PUT", "/.settings/rules.json", tooDeep, headers: [DeepRulesServerTests.admin])
            #expect(put.status == 400)
            #expect(put.body.contains("1:19971: Expression nested more than 48 levels."), "\(put.body)")
            let json = try request(port, "PUT", "/.settings/rules.json", tooDeepJSON, headers: [DeepRulesServerTests.admin])
            #expect(json.status == 400)
            #expect(json.body.contains("1:325: JSON nested more than 64 levels."), "\(json.body)")
            // Still serving, under the rules put before.
            #expect(try request(port, "GET", "/.json").status == 200)
        }
    }
}
