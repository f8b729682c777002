import RTDBCore

/// How the outcome of a queued write is told. `sync` prints each as a line on
/// stdout (its data); any other command that sends queued writes on the way to its own work (a
/// read, a write, a watch, `tx`, `session`) says on stderr when the server rejected one, so a
/// rejection is never silent, whichever process happened to send it: the same JSON line, or a
/// sentence when stderr is a terminal, like the other lines rtdb writes there.
enum FlushReports {
    /// `{"event":"acked","id":N,"path":P}` (with `"resent":true` when it may have been applied
    /// twice) or `{"event":"rejected","id":N,"path":P,"error":C,"message":M}`.
    static func fields(_ event: FlushEvent) -> [(String, Field)] {
        switch event {
        case .acked(let row, _, let resent):
            var fields: [(String, Field)] = [("event", .string("acked")), ("id", .int(Int(row.id))), ("path", .string(row.path.description))]
            if resent { fields.append(("resent", .bool(true))) }
            return fields
        case .rejected(let row, let e):
            return [("event", .string("rejected")), ("id", .int(Int(row.id))), ("path", .string(row.path.description)),
                    ("error", .string(e.code.rawValue)), ("message", .string(e.message))]
        }
    }

    /// Makes `db` say on stderr when a write it sends on the way is rejected (an acknowledged
    /// one needs no word: the data is where it was meant to be).
    static func attach(to db: CacheControl) {
        db.onIncidentalFlushEvent = { event in
            guard case .rejected(let row, let e) = event else { return }
            var line: [UInt8]
            if Diagnostics.stderrIsTerminal {
                line = Array(("rtdb: queued write \(row.id) was rejected and reverted: \(e.message) (\(e.code.rawValue)); "
                              + "rtdb queue --rejected lists it").utf8)
            } else {
                line = []
                try? Output(pretty: false, quiet: false).render(fields(event), into: &line)
            }
            line.append(0x0A)
            Diagnostics.writeAll(2, line)
        }
    }
}
