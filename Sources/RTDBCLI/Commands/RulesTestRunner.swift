#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RTDBCore
import RTDBRules

/// `rtdb rules test RULES TESTS`: each case decided on its own data, in memory, by the check
/// `serve` makes.
enum RulesTestRunner {
    /// One line of the tests file.
    struct Case {
        var name: String
        var principal: Principal
        var data: Node
        var request: RuleRequest
        var expectAllow: Bool
        var now: Int64
    }

    static func run(_ inv: Invocation) throws {
        let args = try inv.arguments(["ACTION", "RULES", "TESTS"])
        let rules = try RulesCommand.load(args[1])
        let coverageFile = try inv.value(RulesCommand.coverage)
        if let f = coverageFile, !(f.hasSuffix(".html") || f.hasSuffix(".json")) {
            throw inv.usageError("--coverage FILE must end in .html or .json")
        }
        let bytes = try readFile(args[2], limit: 256 << 20)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw RTDBError(.invalidData, "\(args[2]): the tests file is not UTF-8 text")
        }
        // Every case is read before any runs: a bad line changes nothing and names its line.
        var cases: [Case] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { continue }
            do {
                cases.append(try parse(String(line), number: n + 1))
            } catch let e as RTDBError {
                throw RTDBError(e.code, "\(args[2]):\(n + 1): \(e.message)")
            }
        }
        let coverage = coverageFile.map { _ in Coverage.counter }
        let out = inv.output()
        var passed = 0, failed = 0
        for c in cases {
            let trace = Trace()
            let store = c.data
            let data = RuleData(read: { store.child(at: $0) }, readPlain: { store.child(at: $0).withoutPriorities })
            let observer: RulesObserver = coverage.map { Both(trace, $0) } ?? trace
            let allowed = try rules.decide(c.request, principal: c.principal, now: c.now, data: data, observer: observer).allowed
            let ok = allowed == c.expectAllow
            if ok { passed += 1 } else { failed += 1 }
            var line = "{\"name\":\(RulesReport.string(c.name)),\"pass\":\(ok),\"allowed\":\(allowed)"
            if !ok { line += ",\"decided_by\":\(RulesReport.decidedBy(trace.decidingEntry(allowed: allowed)))" }
            try out.raw(line + "}\n")
        }
        try out.raw("\(passed) passed, \(failed) failed\n")
        try out.flush()
        if let file = coverageFile {
            let report = file.hasSuffix(".html") ? CoverageReport.html(rules) : CoverageReport.json(rules) + "\n"
            let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            if fd < 0 {
                let e = errno
                throw RTDBError(e == EACCES ? .permissionDenied : .ioError, "--coverage \(Limits.quote(file)): \(String(cString: strerror(e)))")
            }
            defer { close(fd) }
            Diagnostics.writeAll(fd, Array(report.utf8))
        }
        if failed > 0 { throw ExitStatus(1) }
    }

    /// Tells two observers the same.
    final class Both: RulesObserver {
        let a: RulesObserver, b: RulesObserver
        init(_ a: RulesObserver, _ b: RulesObserver) { self.a = a; self.b = b }
        func begin(_ r: RuleSet.Rule, at l: Path) { a.begin(r, at: l); b.begin(r, at: l) }
        func enter(_ r: RuleSet.Rule, _ e: Int) { a.enter(r, e); b.enter(r, e) }
        func leave(_ r: RuleSet.Rule, _ e: Int, _ o: Outcome) { a.leave(r, e, o); b.leave(r, e, o) }
        func end(_ r: RuleSet.Rule, _ o: Outcome) { a.end(r, o); b.end(r, o) }
    }

    static func parse(_ line: String, number: Int) throws -> Case {
        let doc: Node
        do { doc = try JSONReader.parse(line) } catch { throw RTDBError(.invalidJSON, "not JSON: \(error)") }
        guard doc.isObject else { throw RTDBError(.invalidData, "a case is a JSON object") }
        for e in doc.children where !["name", "auth", "data", "op", "path", "value", "expect", "now",
                                      "orderBy", "startAt", "endAt", "equalTo", "limitToFirst", "limitToLast"].contains(e.key) {
            throw RTDBError(.invalidData, "unknown field \(Limits.quote(e.key))")
        }
        func text(_ key: String) throws -> String? {
            let v = doc.child(key)
            if v.isNull { return nil }
            guard case .string(let s) = v else { throw RTDBError(.invalidData, "\(key) must be a string") }
            return s
        }
        let name = try text("name") ?? "line \(number)"
        let auth = doc.child("auth")
        guard auth.isNull || auth.isObject else { throw RTDBError(.invalidData, "auth must be an object of token claims or null") }
        let principal: Principal = auth.isNull ? .anonymous : .user(auth: auth)
        guard let op = try text("op") else { throw RTDBError(.invalidData, "missing op (read, query, set, update or remove)") }
        guard let pathText = try text("path") else { throw RTDBError(.invalidData, "missing path") }
        let path = try Path(pathText)
        guard let expect = try text("expect"), expect == "allow" || expect == "deny" else {
            throw RTDBError(.invalidData, "expect must be \"allow\" or \"deny\"")
        }
        var now: Int64 = 1_700_000_000_000
        if case .int(let n) = doc.child("now") { now = Int64(n) }
        let value = doc.child("value")
        let request: RuleRequest
        switch op {
        case "read", "query":
            // A query's fields are the REST parameters' JSON values.
            let query = RuleQuery(parameters: { key in
                let v = doc.child(key)
                if v.isNull { return nil }
                return JSONWriter.string(v)
            })
            if op == "read" && doc.children.contains(where: { ["orderBy", "startAt", "endAt", "equalTo", "limitToFirst", "limitToLast"].contains($0.key) }) {
                throw RTDBError(.invalidData, "a read takes no query fields; use op \"query\"")
            }
            request = .read(path, query)
        case "set":
            try WriteCheck.value(value, at: path)
            request = .set(path, value)
        case "update":
            guard case .object(let members) = value.unprioritized else {
                throw RTDBError(.invalidData, "update's value must be an object of paths and values")
            }
            request = .update(path, try WriteCheck.update(members, at: path))
        case "remove":
            request = .remove(path)
        default:
            throw RTDBError(.invalidData, "unknown op \(Limits.quote(op)); use read, query, set, update or remove")
        }
        return Case(name: name, principal: principal, data: doc.child("data"), request: request,
                    expectAllow: expect == "allow", now: now)
    }
}
