import RTDBCore
import RTDBWire

/// What a REST URL path names: data at a path, a node's
/// `.priority`, or one of the emulator's admin documents.
///
/// The path must end in `.json` (`/.json` is the root; `/a/.json` is `/a`). It is split on `/`,
/// empty segments dropped, each segment percent-decoded by RFC 3986 and validated as a key;
/// `.info` may start a path (readable, never writable), `.priority` may end one.
enum RESTTarget: Equatable {
    case data(Path)
    case priority(Path)
    case inspectDatabases
    case rules

    init(rawPath: String) throws {
        // Byte-wise, as the path arrived (a key ends at any "/" byte, whatever follows it), in
        // place: no array of pieces, no substring per key.
        var text = rawPath
        var keys: [String] = try text.withUTF8 { bytes in
            let suffix: StaticString = ".json"
            guard bytes.count >= 5, UnsafeBufferPointer(rebasing: bytes[(bytes.count - 5)...])
                .elementsEqual(UnsafeBufferPointer(start: suffix.utf8Start, count: 5)) else {
                throw RESTError(404, "not found: REST paths end in .json (e.g. /users/ada.json, or /.json for the root)")
            }
            let end = bytes.count - 5
            var keys: [String] = []
            var start = 0
            for i in 0...end where i == end || bytes[i] == UInt8(ascii: "/") {
                if i > start {
                    do { keys.append(try PercentCoding.decode(UnsafeBufferPointer(rebasing: bytes[start..<i]))) }
                    catch let e as PercentCoding.DecodingError { throw RESTError(400, "Invalid path: \(e.message)") }
                }
                start = i + 1
            }
            return keys
        }
        if keys.count == 2 && keys[0] == ".inspect" && keys[1] == "databases" { self = .inspectDatabases; return }
        if keys.count == 2 && keys[0] == ".settings" && keys[1] == "rules" { self = .rules; return }
        var priority = false
        if keys.last == ".priority" {
            priority = true
            keys.removeLast()
        }
        for (i, key) in keys.enumerated() {
            if i == 0 && key == ".info" { continue }
            if let problem = Limits.keyProblem(key) {
                throw RESTError(400, "Invalid path: \(problem)")
            }
        }
        if keys.count > Limits.maxDepth {
            throw RESTError(400, "Invalid path: more than \(Limits.maxDepth) levels deep")
        }
        let path = Path(validatedKeys: keys)
        self = priority ? .priority(path) : .data(path)
    }

    static func == (a: RESTTarget, b: RESTTarget) -> Bool {
        switch (a, b) {
        case let (.data(x), .data(y)), let (.priority(x), .priority(y)): return x.same(as: y)
        case (.inspectDatabases, .inspectDatabases), (.rules, .rules): return true
        default: return false
        }
    }
}
