import RTDBCore
import RTDBRules

enum RulesCommand {
    static let rulesFile = Valued<String>("--rules", value: "FILE", kind: .file,
        "simulate and test: the rules file (simulate's default: the target's rules, stored with its data or the server's)")
    static let claims = Valued<String>("--claims", value: "JSON", kind: .text,
        "simulate: the request is signed in with these token claims (auth in the rules), a JSON object")
    static let uid = Valued<String>("--uid", value: "ID", kind: .text,
        "simulate: the request is signed in as this user (auth is {\"uid\":ID})")
    static let coverage = Valued<String>("--coverage", value: "FILE", kind: .file,
        "test: also write the coverage report of the run to FILE (.html or .json)")

    enum Action: String, CaseIterable { case check, simulate, test }

    static let usage = "rtdb rules check FILE | rtdb rules simulate [--rules FILE] [--claims JSON | --uid ID] "
        + "read|set|update|remove PATH [VALUE] | rtdb rules test RULES TESTS [--coverage FILE]"

    static let spec = CommandSpec(
        name: "rules", summary: "check, simulate or test security rules",
        usage: usage,
        arguments: [("ACTION", .text, "check, simulate or test"),
                    ("FILE", .file, "check: a rules file in Firebase's database.rules.json format (- reads stdin)"),
                    ("OPERATION", .text, "simulate: read, set, update or remove"),
                    ("PATH", .path, "simulate: the location the request is for"),
                    ("VALUE", .text, "simulate: the JSON value of set, or the object of paths and values of update"),
                    ("TESTS", .file, "test: a file of test cases, one JSON object per line")],
        options: [rulesFile.spec, claims.spec, uid.spec, coverage.spec],
        exclusions: { [.pair(claims, uid)] },
        description: "check reads a security rules file offline, as rtdb serve --rules and PUT /.settings/rules.json do: "
            + "comments are allowed, every expression is parsed and type-checked. Prints {\"ok\":true} when the "
            + "file is valid. Otherwise the error (invalid_data, status 3) lists each problem on a line of its own as "
            + "FILE:LINE:COLUMN: message, where LINE and COLUMN (from 1) point at the offending token in the file. "
            + "simulate decides one request against the target's data as rtdb serve would, and writes nothing: it prints "
            + "{\"allowed\":BOOL,\"decided_by\":{\"rule\":R,\"line\":L,\"column\":C},\"trace\":[…]}, the trace listing each rule "
            + "and subexpression evaluated, in order, with its place in the rules file and its value; decided_by is null when "
            + "no rule applies. It exits 0 when the request is allowed and 4 (permission_denied) when it is denied. With "
            + "--pretty, or on a terminal, it shows the rules text with the deciding expression marked and the trace as an "
            + "indented list instead. Without --claims or --uid the request is signed out. "
            + "test runs a file of cases, one JSON object per line: {\"name\":N,\"auth\":{…}|null,\"data\":{…},"
            + "\"op\":\"read|query|set|update|remove\",\"path\":P,\"value\":V,\"expect\":\"allow|deny\"}, a query taking "
            + "orderBy, startAt, endAt, equalTo, limitToFirst and limitToLast as the REST API does; each case starts from "
            + "its own data and nothing else. It prints a JSON line per case and a last line \"N passed, N failed\", and "
            + "exits 0 when every case passed, 1 otherwise.",
        examples: ["rtdb rules check database.rules.json    # prints {\"ok\":true}, or each problem as FILE:LINE:COLUMN: message",
                   "rtdb rules simulate --rules database.rules.json --uid alice set /users/alice '{\"name\":\"Alice\"}'",
                   "rtdb rules simulate --uid bob read /users/alice --pretty",
                   "rtdb rules test database.rules.json rules.tests.jsonl --coverage coverage.html"],
        run: run)

    static func run(_ inv: Invocation) throws {
        switch try inv.action(Action.self) {
        case .check:
            let args = try inv.arguments(["ACTION", "FILE"])
            _ = try load(args[1])
            let out = inv.output()
            try out.raw("{\"ok\":true}\n")
            try out.flush()
        case .simulate: try RulesSimulate.run(inv)
        case .test: try RulesTestRunner.run(inv)
        }
    }

    /// Reads and loads a rules file; `invalid_data` lists every problem as `FILE:L:C: message`.
    static func load(_ file: String) throws -> RuleSet {
        let bytes = file == "-" ? try readAll(fd: 0, limit: 16 << 20, what: "stdin") : try readFile(file, limit: 16 << 20)
        let name = file == "-" ? "stdin" : file
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw RTDBError(.invalidData, "\(name): the rules file is not UTF-8 text")
        }
        return try load(text: text, name: name)
    }

    static func load(text: String, name: String) throws -> RuleSet {
        do {
            return try RuleSet(text)
        } catch {
            let lines = error.problems.map { "\(name):\($0.description)" }
            throw RTDBError(.invalidData, "invalid rules:\n" + lines.joined(separator: "\n"))
        }
    }

    /// Who a request is from, as `--claims` or `--uid` say (signed out without either).
    static func principal(claims: String?, uid: String?) throws -> Principal {
        if let uid { return .user(auth: .object([Node.Entry("uid", .string(uid))])) }
        guard let claims else { return .anonymous }
        let node: Node
        do { node = try JSONReader.parse(claims) } catch {
            throw RTDBError(.usage, "--claims must be a JSON object of token claims: \(error)")
        }
        if node.isNull { return .anonymous }
        guard node.isObject else { throw RTDBError(.usage, "--claims must be a JSON object of token claims (or null)") }
        return .user(auth: node)
    }
}
