#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RTDBCore
import RTDBEngine
import RTDBRemote
import RTDBRules
import RTDBServer

/// `rtdb rules simulate`: one request decided against the target's data by the check `serve`
/// makes, observed; nothing is written.
enum RulesSimulate {
    enum Operation: String, CaseIterable { case read, set, update, remove }

    static func run(_ inv: Invocation) throws {
        let args = try inv.arguments(["ACTION", "OPERATION", "PATH", "VALUE"], optional: 1)
        guard let op = Operation(rawValue: args[1]) else {
            throw inv.usageError("rules simulate: unknown operation \(Limits.quote(args[1])); use read, set, update or remove")
        }
        let path = try inv.path(args[2])
        let value = args.count > 3 ? args[3] : nil
        switch op {
        case .read, .remove:
            if value != nil { throw inv.usageError("rules simulate: \(op.rawValue) takes no VALUE") }
        case .set, .update:
            if value == nil { throw inv.usageError("rules simulate: \(op.rawValue) needs a VALUE (JSON)") }
        }
        let request = try RulesSimulate.request(op, path, value)
        let principal = try RulesCommand.principal(claims: try inv.value(RulesCommand.claims), uid: try inv.value(RulesCommand.uid))
        let db = try inv.database(reading: true)
        let (rules, source) = try RulesSimulate.rules(inv, db)
        let trace = Trace()
        let decision = try rules.decide(request, principal: principal, now: EmbeddedDatabase.systemClock(),
                                        data: RuleData.stored(in: db), observer: trace)
        let out = inv.output()
        if inv.pretty || isatty(1) == 1 {
            try out.raw(RulesReport.pretty(allowed: decision.allowed, trace: trace, source: source))
        } else {
            try out.raw(RulesReport.json(allowed: decision.allowed, trace: trace) + "\n")
        }
        try out.flush()
        if !decision.allowed { throw ExitStatus(4) }
    }

    /// The request `op` at `path` with `value` (JSON text) as it would be sent.
    static func request(_ op: Operation, _ path: Path, _ value: String?) throws -> RuleRequest {
        func parsed() throws -> Node {
            do { return try JSONReader.parse(value ?? "null") } catch {
                throw RTDBError(.invalidJSON, "rules simulate: VALUE is not JSON: \(error)")
            }
        }
        switch op {
        case .read: return .read(path, RuleQuery())
        case .remove: return .remove(path)
        case .set:
            let v = try parsed()
            try WriteCheck.value(v, at: path)
            return .set(path, v)
        case .update:
            let v = try parsed()
            guard case .object(let members) = v.unprioritized else {
                throw RTDBError(.invalidData, "rules simulate: update's VALUE must be an object of paths and values")
            }
            return .update(path, try WriteCheck.update(members, at: path))
        }
    }

    /// `--rules FILE`, else the target's: the server's for a remote database, those stored with
    /// the data for the embedded file; with the text.
    static func rules(_ inv: Invocation, _ db: Database) throws -> (RuleSet, String) {
        if let file = try inv.value(RulesCommand.rulesFile) {
            let set = try RulesCommand.load(file)
            return (set, set.source)
        }
        if let remote = db.capability(RemoteDatabase.self) {
            // The rules in force on the server, read with the caller's credential (only an
            // admin may read them, as the console's playground needs the project's owner).
            let r = try remote.request("GET", Path(validatedKeys: [".settings", "rules"]), idempotent: true)
            guard r.status == 200 else { throw remote.failure(for: r, what: "a read of /.settings/rules.json").error }
            guard let text = String(validating: r.body, as: UTF8.self) else {
                throw RTDBError(.invalidData, "the server's rules are not UTF-8 text")
            }
            return (try RulesCommand.load(text: text, name: "/.settings/rules.json"), text)
        }
        guard let embedded = db.capability(EmbeddedDatabase.self) else {
            throw inv.usageError("rules simulate: give the rules with --rules FILE (this target's rules cannot be read)")
        }
        guard let text = try embedded.storedRules() else {
            throw inv.usageError("rules simulate: the database file has no stored rules; give them with --rules FILE")
        }
        return (try RulesCommand.load(text: text, name: "stored rules"), text)
    }
}
