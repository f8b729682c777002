import RTDBCore
import RTDBNet

/// A remote watch says on stderr when its connection is lost and when it is back, once each
/// (not per attempt in between): on a terminal `rtdb: watch: …` sentences, else one JSON line
/// each, `{"disconnected":{"url":U,"reason":R}}` and `{"reconnected":{"url":U,"after_ms":N}}`,
/// like the other lines a watch writes there (`exec_failed`). Its output on stdout is the same
/// either way: what changed meanwhile follows the reconnection, without duplicates.
enum WatchNotices {
    static func attach(to db: Database) {
        guard let streams = db.capability(StreamNotices.self) else { return }
        let url = streams.streamURL
        var lostAt: Int64 = 0
        streams.onStreamNotice = { notice in
            switch notice {
            case .lost(let why):
                lostAt = monotonicMillis()
                say("lost the connection to \(url) (\(why)); reconnecting", "disconnected", [("url", .string(url)), ("reason", .string(why))])
            case .restored:
                let after = max(0, monotonicMillis() - lostAt)
                say("connected again to \(url) after \(Quantity.seconds(Double(after / 100) / 10))", "reconnected",
                    [("url", .string(url)), ("after_ms", .int(Int(after)))])
            }
        }
    }

    private static func say(_ sentence: String, _ name: String, _ fields: [(String, Field)]) {
        var line: [UInt8]
        if Diagnostics.stderrIsTerminal {
            line = Array("rtdb: watch: \(sentence)".utf8)
        } else {
            line = [UInt8(ascii: "{")]
            JSONWriter.appendString(name, to: &line)
            line.append(UInt8(ascii: ":"))
            try? Output(pretty: false, quiet: false).render(fields, into: &line)
            line.append(UInt8(ascii: "}"))
        }
        line.append(0x0A)
        Diagnostics.writeAll(2, line)
    }
}
