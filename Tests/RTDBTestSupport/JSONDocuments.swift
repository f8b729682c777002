/// Random JSON texts from a seed, for the property tests of the readers and the importer:
/// objects with keys in and out of key order, integer-like and Unicode keys (some written with
/// escapes), arrays with holes, nulls and empty nodes, numbers of every form, strings with
/// escapes. With `specials`, also what normal form and the limits have rules for: repeated
/// keys, `.priority` of every kind, `.value`, server values, invalid keys, paths past the depth
/// limit, numbers out of range, lone surrogates, wide objects out of order, and now and then a
/// syntax error.
public struct JSONDocuments {
    public var random: SeededRandom
    /// Whether the documents hold the special cases above.
    public var specials: Bool

    public init(seed: UInt64, specials: Bool) {
        random = SeededRandom(seed)
        self.specials = specials
    }

    /// One document: an object most of the time.
    public mutating func document() -> String {
        var out = ""
        space(&out)
        switch random.below(20) {
        case 0: value(&out, depth: 1)
        case 1: array(&out, depth: 1)
        default: object(&out, depth: 1)
        }
        space(&out)
        if specials && random.below(40) == 0 { breakSyntax(&out) }
        return out
    }

    private mutating func chance(_ percent: Int) -> Bool { random.below(100) < percent }

    private mutating func space(_ out: inout String) {
        if random.below(6) == 0 { out += [" ", "\n", "\t ", "\r\n  "][random.below(4)] }
    }

    private mutating func value(_ out: inout String, depth: Int) {
        // Deep chains now and then, past the depth limit of 32 with the specials.
        let limit = specials && random.below(30) == 0 ? 40 : 5
        if depth < limit, chance(depth > 5 ? 80 : 30) {
            if chance(80) { object(&out, depth: depth + 1) } else { array(&out, depth: depth + 1) }
            return
        }
        switch random.below(12) {
        case 0, 1, 2: string(&out, text: word())
        case 3, 4: out += String(random.below(2000) - 1000)
        case 5: out += ["0", "-0", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                        "123456789012345678901234567890"][random.below(6)]
        case 6, 7: out += ["1.5", "-0.25", "1e3", "2.5E-3", "-0.0", "6.02e23", "1e-300"][random.below(7)]
        case 8: out += random.below(2) == 0 ? "true" : "false"
        case 9: out += "null"
        case 10: out += random.below(2) == 0 ? "{}" : "[ ]"
        default:
            if specials && random.below(10) == 0 {
                out += [#"{".sv":"timestamp"}"#, #"{".sv":{"increment":3}}"#, #"{".sv":{"increment":1.5}}"#,
                        #"{".sv":"nope"}"#, "1e400", #""\ud800x""#][random.below(6)]
            } else {
                string(&out, text: word() + " " + word())
            }
        }
    }

    private mutating func object(_ out: inout String, depth: Int) {
        out += "{"
        var keys: [String] = []
        let wide = specials && random.below(25) == 0
        let n = wide ? 30 + random.below(10) : random.below(7)
        for _ in 0..<n {
            var k = key()
            if wide { k = "w" + String(random.below(100)) }
            if specials, !keys.isEmpty, random.below(20) == 0 {
                k = keys[random.below(keys.count)]   // a repeated key
            } else if keys.contains(k) {
                continue
            }
            keys.append(k)
        }
        if chance(30) { keys.sort() }
        var first = true
        func comma(_ out: inout String) {
            if !first { out += "," }
            first = false
        }
        var priorityDone = false
        for k in keys {
            comma(&out)
            space(&out)
            if chance(8) && !priorityDone {
                priority(&out)
                priorityDone = !specials
                out += ","
            }
            string(&out, text: k)
            space(&out)
            out += ":"
            space(&out)
            value(&out, depth: depth)
        }
        if keys.isEmpty && chance(20) {
            priority(&out)
        }
        if specials && chance(4) {
            comma(&out)
            out += [#"".value":5"#, #"".value":{"a":1}"#, #"".sv":"timestamp""#][random.below(3)]
        }
        space(&out)
        out += "}"
    }

    private mutating func priority(_ out: inout String) {
        out += #"".priority":"#
        let plain = ["3", "-1.5", #""p""#, "null", "1e2", #""\u00e9""#]
        let special = ["true", #"{"x":1}"#, #"{".sv":"timestamp"}"#, "[1]"]
        if specials && random.below(4) == 0 {
            out += special[random.below(special.count)]
        } else {
            out += plain[random.below(plain.count)]
        }
    }

    private mutating func array(_ out: inout String, depth: Int) {
        out += "["
        let n = random.below(6)
        for i in 0..<n {
            if i > 0 { out += "," }
            space(&out)
            if random.below(5) == 0 { out += "null" } else { value(&out, depth: depth) }
        }
        out += "]"
    }

    private static let words = ["alpha", "bravo", "héllo", "日本語", "naïve", "quote\"d", "back\\slash", "tab\tbed",
                                "line\nbreak", "\u{E000}private", "😀 face", "a/b", "", "x"]
    private static let keys = ["a", "b", "name", "email", "age", "0", "1", "7", "07", "10", "-1", "2147483648",
                               "-2147483649", "é", "日本", "\u{E000}x", "😀", "quote\"d", "back\\slash", "Z", "aa", "a b",
                               "-KxYz_09", "9a"]
    private static let badKeys = ["a.b", "$x", "#", "[i]", "", "c\u{1}", String(repeating: "k", count: 769), "s/t"]

    private mutating func word() -> String { JSONDocuments.words[random.below(JSONDocuments.words.count)] }

    private mutating func key() -> String {
        if specials && random.below(40) == 0 { return JSONDocuments.badKeys[random.below(JSONDocuments.badKeys.count)] }
        return JSONDocuments.keys[random.below(JSONDocuments.keys.count)]
    }

    /// `text` as a JSON string, some characters escaped at random (`\uXXXX`, surrogate pairs).
    private mutating func string(_ out: inout String, text: String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += random.below(2) == 0 ? "\\t" : "\\u0009"
            case "/": out += random.below(2) == 0 ? "/" : "\\/"
            default:
                if scalar.value < 0x20 {
                    out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                } else if scalar.value > 0x7F, random.below(3) == 0 {
                    for unit in String(scalar).utf16 {
                        let h = String(unit, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// Cuts or spoils the text somewhere (a syntax error for the readers to find).
    private mutating func breakSyntax(_ out: inout String) {
        guard !out.isEmpty else { return }
        var scalars = Array(out.unicodeScalars)
        let at = random.below(scalars.count)
        switch random.below(3) {
        case 0: scalars.removeSubrange(at...)
        case 1: scalars.insert(",", at: at)
        default: scalars.insert("}", at: at)
        }
        out = String(String.UnicodeScalarView(scalars))
    }
}
