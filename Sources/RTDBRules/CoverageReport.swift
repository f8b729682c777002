import RTDBCore

/// The coverage report of a rules document (what `Coverage.counter` counted), as JSON and as a
/// self-contained HTML page: what `rules test --coverage` writes and `serve` answers.
public enum CoverageReport {
    static func string(_ s: String) -> String { JSONWriter.string(.string(s)) }

    static func counts(_ c: Coverage.Counts) -> String {
        "\"evaluations\":\(c.evaluations),\"true\":\(c.trueCount),\"false\":\(c.falseCount),\"errors\":\(c.errors)"
    }

    static func range(_ r: SourceRange) -> String {
        "\"line\":\(r.start.line),\"column\":\(r.start.column),\"end_line\":\(r.end.line),\"end_column\":\(r.end.column)"
    }

    /// `{"rules":[{"rule":R,"expression":T,line…,counts…,"expressions":[…]}]}`.
    public static func json(_ rules: RuleSet) -> String {
        var entries: [String] = []
        for rule in rules.rules {
            var expressions: [String] = []
            for (i, e) in rule.expressions.enumerated() {
                expressions.append("{\"expression\":\(string(e.text)),\(range(e.range)),\(counts(rules.counts(rule, i)))}")
            }
            entries.append("{\"rule\":\(string(rule.label)),\"expression\":\(string(rule.text)),"
                         + "\(range(rule.range)),\(counts(rules.counts(rule))),\"expressions\":[\(expressions.joined(separator: ","))]}")
        }
        return "{\"rules\":[" + entries.joined(separator: ",") + "]}"
    }

    /// What a count says about an expression, as the page colours it.
    static func state(_ c: Coverage.Counts) -> String {
        if c.evaluations == 0 { return "never" }
        if c.errors > 0 { return "error" }
        if c.trueCount > 0 && c.falseCount > 0 { return "both" }
        if c.trueCount > 0 { return "true" }
        if c.falseCount > 0 { return "false" }
        return "value"
    }

    static func escape(_ s: Substring) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "\"": out += "&quot;"
            default: out.append(ch)
            }
        }
        return out
    }

    /// The rules text with each rule and subexpression in a `<span>` coloured by its state and
    /// titled with its counts. Spans nest as the expressions do (a subexpression lies inside
    /// its rule's range); ranges are positions in the text, turned into offsets here.
    public static func html(_ rules: RuleSet) -> String {
        let source = rules.source
        let scalars = Array(source.unicodeScalars)
        // Offset (in scalars) of each line's start.
        var lineStarts = [0]
        for (i, s) in scalars.enumerated() where s == "\n" { lineStarts.append(i + 1) }
        func offset(_ p: Position) -> Int {
            guard p.line - 1 < lineStarts.count else { return scalars.count }
            return min(scalars.count, lineStarts[p.line - 1] + p.column - 1)
        }
        struct Mark { var start: Int; var end: Int; var open: String }
        var marks: [Mark] = []
        for rule in rules.rules {
            func add(_ r: SourceRange, _ c: Coverage.Counts, _ what: String) {
                let title = "\(what): \(c.evaluations) evaluations, \(c.trueCount) true, \(c.falseCount) false, \(c.errors) errors"
                marks.append(Mark(start: offset(r.start), end: offset(r.end),
                                  open: "<span class=\"\(state(c))\" title=\"\(escape(Substring(title)))\">"))
            }
            add(rule.range, rules.counts(rule), rule.label)
            for (i, e) in rule.expressions.enumerated() { add(e.range, rules.counts(rule, i), e.text) }
        }
        // Outer first where two start together (a longer range encloses a shorter one).
        marks.sort { ($0.start, -$0.end) < ($1.start, -$1.end) }
        var body = ""
        var open: [Int] = []   // ends of the spans open now, innermost last
        var next = 0
        for i in 0...scalars.count {
            while let end = open.last, end <= i { body += "</span>"; open.removeLast() }
            while next < marks.count, marks[next].start == i {
                body += marks[next].open
                open.append(marks[next].end)
                next += 1
            }
            if i < scalars.count { body += escape(Substring(String(scalars[i]))) }
        }
        body += String(repeating: "</span>", count: open.count)
        return """
        <!DOCTYPE html>
        <html><head><meta charset="utf-8"><title>Rules coverage</title><style>
        body{font-family:sans-serif;margin:1em}
        pre{font-family:monospace;background:#fafafa;border:1px solid #ddd;padding:1em;line-height:1.5}
        .never{background:#ddd}.true{background:#c8f0c8}.false{background:#f6d0a0}
        .both{background:#b8e0f8}.error{background:#f4a0a0}.value{text-decoration:underline dotted #888}
        span{border-radius:2px}
        </style></head><body>
        <h1>Rules coverage</h1>
        <p>Each expression is marked: <span class="never">never run</span> <span class="true">only true</span>
        <span class="false">only false</span> <span class="both">both</span> <span class="error">errored</span>;
        a part that gives neither true nor false (<span class="value">auth.uid</span>) is underlined when it ran,
        so the colour of what holds it shows through. Hover over one for its counts.</p>
        <pre>\(body)</pre>
        </body></html>

        """
    }
}
