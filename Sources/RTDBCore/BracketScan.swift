/// A quick look at where a JSON object or array ends, without reading it: brackets outside
/// strings are counted, and nothing is checked. The streaming reader uses it to see that a
/// value is larger than its window before reading the window's worth of it (a value that is
/// larger is walked member by member instead); what the text means, and whether it is valid, is
/// still decided by the readers.
enum BracketScan {
    /// True when the object or array whose opening bracket is `bytes[0]` has its closing
    /// bracket within `bytes` (if the text is valid JSON up to there).
    static func closes(within bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var depth = 0
        var k = 0
        let n = bytes.count
        while k < n {
            let c = bytes[k]
            k += 1
            switch c {
            case UInt8(ascii: "\""):
                // Over the string: an escaped byte never ends it.
                while k < n {
                    let s = bytes[k]
                    if s == UInt8(ascii: "\"") { break }
                    k += s == UInt8(ascii: "\\") ? 2 : 1
                }
                k += 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return true }
            default:
                continue
            }
        }
        return false
    }
}
