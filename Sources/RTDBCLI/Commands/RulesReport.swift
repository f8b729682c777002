import RTDBCore
import RTDBRules

/// How a decision and its trace are printed: one JSON line, or for a person the rules text
/// with the deciding expression marked and the trace as an indented list.
enum RulesReport {
    static func string(_ s: String) -> String { JSONWriter.string(.string(s)) }

    static func outcome(_ o: Outcome?) -> String {
        switch o {
        case .bool(let b)?: return "\"value\":\(b)"
        case .value(let v)?: return "\"value\":\(v.json)"
        case .error?, nil: return "\"error\":true"
        }
    }

    /// `{"rule":R,"line":L,"column":C}` for the entry that decided, or `null`.
    static func decidedBy(_ entry: Trace.Entry?) -> String {
        guard let e = entry else { return "null" }
        return "{\"rule\":\(string(e.rule.label)),\"line\":\(e.range.start.line),\"column\":\(e.range.start.column)}"
    }

    /// The trace as a JSON array: a rule's entry names it and where it was evaluated; a
    /// subexpression's gives its text and depth; each gives its range and value.
    static func trace(_ trace: Trace) -> String {
        var parts: [String] = []
        for e in trace.entries {
            let r = e.range
            let place = "\"line\":\(r.start.line),\"column\":\(r.start.column),\"end_line\":\(r.end.line),\"end_column\":\(r.end.column)"
            if e.expression == nil {
                parts.append("{\"rule\":\(string(e.rule.label)),\"path\":\(string(e.location.description)),\(place),\(outcome(e.outcome))}")
            } else {
                parts.append("{\"expression\":\(string(e.text)),\"depth\":\(e.depth),\(place),\(outcome(e.outcome))}")
            }
        }
        return "[" + parts.joined(separator: ",") + "]"
    }

    static func json(allowed: Bool, trace t: Trace) -> String {
        "{\"allowed\":\(allowed),\"decided_by\":\(decidedBy(t.decidingEntry(allowed: allowed))),\"trace\":\(trace(t))}"
    }

    static func valueText(_ o: Outcome?) -> String {
        switch o {
        case .bool(let b)?: return String(b)
        case .value(let v)?: return v.json
        case .error?, nil: return "error"
        }
    }

    /// For a person: the verdict, the deciding rule's lines of `source` with it underlined, and
    /// the trace indented by depth.
    static func pretty(allowed: Bool, trace t: Trace, source: String) -> String {
        var out = allowed ? "allowed" : "denied"
        guard let d = t.decidingEntry(allowed: allowed) else {
            return out + (allowed ? "\n" : ": no rule grants it\n")
        }
        out += " by \(d.rule.label) (line \(d.range.start.line), column \(d.range.start.column)): \(valueText(d.outcome))\n\n"
        out += marked(source, d.range)
        out += "\n"
        for e in t.entries {
            let indent = String(repeating: "  ", count: e.depth)
            if e.expression == nil {
                out += "\(e.rule.label) at \(e.location): \(valueText(e.outcome))\n"
            } else {
                out += "\(indent)\(e.text)  → \(valueText(e.outcome))\n"
            }
        }
        return out
    }

    /// The lines `range` covers, numbered, each with `^` under the part of it in the range.
    static func marked(_ source: String, _ range: SourceRange) -> String {
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        var out = ""
        let width = String(range.end.line).count
        for n in range.start.line...max(range.start.line, range.end.line) where n - 1 < lines.count {
            // A tab becomes one space, so that the marks below line up with the columns.
            let line = String(lines[n - 1].map { $0 == "\t" ? " " : $0 })
            let number = String(n)
            out += String(repeating: " ", count: width - number.count) + number + " | " + line + "\n"
            let from = n == range.start.line ? range.start.column : 1
            let to = n == range.end.line ? range.end.column : line.unicodeScalars.count + 1
            if to > from {
                out += String(repeating: " ", count: width) + " | " + String(repeating: " ", count: from - 1)
                    + String(repeating: "^", count: to - from) + "\n"
            }
        }
        return out
    }
}
