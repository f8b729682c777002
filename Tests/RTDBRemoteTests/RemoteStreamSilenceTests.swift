import Foundation
import RTDBCore
@testable import RTDBRemote
import Testing

/// A stream silent for twice the keep-alive interval counts as dropped: the watch reconnects
/// and resynchronises from the fresh first value. The server is a small Python script that
/// sends one value then nothing on its first connection, and a new value with keep-alives on
/// the next.
@Suite struct RemoteStreamSilenceTests {
    @Test func aSilentStreamIsReconnectedAndResynchronised() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("silent_sse_server.py").path
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", script]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        defer { python.terminate(); python.waitUntilExit() }
        let first = out.fileHandleForReading.availableData
        let port = try #require(Int(String(decoding: first, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        let target = try RemoteTarget.parse("http://127.0.0.1:\(port)?ns=demo")
        let db = RemoteDatabase(target: target, credential: .accessToken("t"), timeoutSeconds: 5, caFile: nil)
        db.keepAliveSeconds = 0.5   // silence past 1 s counts as a drop
        var values: [String] = []
        let started = Date()
        try db.observe(try Path("/x"), idle: { Date().timeIntervalSince(started) < 15 }, onChange: { v, _ in
            values.append(JSONWriter.string(v))
            return values.count < 2
        })
        #expect(values == ["1", "2"], "\(values)")
        // The first connection stays open and silent for 8 s: only the silence rule reconnects sooner.
        let took = Date().timeIntervalSince(started)
        #expect(took < 5, "took \(took) s")
    }
}
