import RTDBCore
import RTDBWire

/// How REST bodies are written: compact JSON, or `print=pretty` in Firebase's style — objects
/// one member per line indented by two spaces with `"key" : value`, arrays on one line as
/// `[ a, b ]` (the layout of the Java JSON printer the service uses). Objects whose keys are
/// array indices render as arrays in both forms.
enum RESTRender {
    static func json(_ node: Node, pretty: Bool, export: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        if export {
            // Firebase's export form keeps priorities and never turns objects into arrays.
            JSONWriter(pretty: pretty, export: true).write(node, into: &out)
        } else if pretty {
            writePretty(node, level: 0, into: &out)
        } else {
            JSONWriter().write(node, into: &out)
        }
        return out
    }

    /// A PATCH echo: the members as sent (relative paths as keys, `null` kept), in order.
    static func members(_ entries: [(key: String, value: Node)], pretty: Bool) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        if entries.isEmpty {
            out.append(UInt8(ascii: "}"))
            return out
        }
        for (i, e) in entries.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            if pretty { newline(1, &out) }
            JSONWriter.appendString(e.key, to: &out)
            out.append(contentsOf: pretty ? Array(" : ".utf8) : [UInt8(ascii: ":")])
            if pretty {
                writePretty(e.value, level: 1, into: &out)
            } else {
                JSONWriter().write(e.value, into: &out)
            }
        }
        if pretty { newline(0, &out) }
        out.append(UInt8(ascii: "}"))
        return out
    }

    static func writePretty(_ node: Node, level: Int, into out: inout [UInt8]) {
        guard case .object(let list) = node else {
            JSONWriter().write(node, into: &out)
            return
        }
        if let count = JSONWriter.arrayLength(list) {
            out.append(contentsOf: Array("[ ".utf8))
            var next = 0
            for idx in 0..<count {
                if idx > 0 { out.append(contentsOf: Array(", ".utf8)) }
                if next < list.count, Int(list[next].key) == idx {
                    // Arrays are inline: they add no indentation level of their own.
                    writePretty(list[next].node, level: level, into: &out)
                    next += 1
                } else {
                    out.append(contentsOf: Array("null".utf8))
                }
            }
            out.append(contentsOf: Array(" ]".utf8))
            return
        }
        out.append(UInt8(ascii: "{"))
        for (i, e) in list.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            newline(level + 1, &out)
            JSONWriter.appendString(e.key, to: &out)
            out.append(contentsOf: Array(" : ".utf8))
            writePretty(e.node, level: level + 1, into: &out)
        }
        newline(level, &out)
        out.append(UInt8(ascii: "}"))
    }

    static func newline(_ level: Int, _ out: inout [UInt8]) {
        out.append(0x0A)
        for _ in 0..<(level * 2) { out.append(0x20) }
    }
}

/// Credentials. Without a secret every request is
/// allowed, whatever it carries (the emulator's open default; `Bearer owner` included). With a
/// secret a request must present it as `auth=`, `access_token=` or `Authorization: Bearer`;
/// anything else is 401 `Permission denied`. Presented tokens are compared in constant time
/// and never echoed.
enum RESTAuth {
    static func allows(_ request: HTTPRequest, secret: String?) -> Bool {
        guard let secret else { return true }
        var presented: [String] = []
        for q in request.query where q.name == "auth" || q.name == "access_token" { presented.append(q.value) }
        for value in request.headerValues("authorization") {
            let u = Array(value.utf8)
            // The scheme is case-insensitive; one or more spaces follow it.
            guard u.count > 7, String(decoding: u[..<6], as: UTF8.self).lowercased() == "bearer", u[6] == 0x20 else { continue }
            presented.append(String(decoding: u[7...], as: UTF8.self).trimmingSpaces())
        }
        var ok = false
        for token in presented {
            // Every candidate is compared in full; no early exit reveals which one matched.
            ok = constantTimeEqual(token, secret) || ok
        }
        return ok
    }

    /// Equal bytes in a time that depends only on the secret's length.
    static func constantTimeEqual(_ presented: String, _ secret: String) -> Bool {
        let a = Array(presented.utf8), s = Array(secret.utf8)
        var diff: UInt8 = a.count == s.count ? 0 : 1
        for i in 0..<s.count {
            diff |= (i < a.count ? a[i] : 0) ^ s[i]
        }
        return diff == 0
    }
}

extension String {
    /// Without surrounding spaces and tabs.
    func trimmingSpaces() -> String {
        let u = Array(utf8)
        var lo = 0, hi = u.count
        while lo < hi, u[lo] == 0x20 || u[lo] == 0x09 { lo += 1 }
        while hi > lo, u[hi - 1] == 0x20 || u[hi - 1] == 0x09 { hi -= 1 }
        return String(decoding: u[lo..<hi], as: UTF8.self)
    }
}
