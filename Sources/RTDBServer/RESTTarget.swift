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
        // Byte-wise, as the path arrived (a key ends at any "/" byte, whatever follows it).
        let bytes = rawPath.utf8
        guard bytes.count >= 5, bytes.suffix(5).elementsEqual(".json".utf8) else {
            throw RESTError(404, "not found: REST paths end in .json (e.g. /users/ada.json, or /.json for the root)")
        }
        let body = Substring(rawPath).utf8.dropLast(5)
        var keys: [String] = []
        for rawBytes in body.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            let raw = Substring(rawBytes)
            let key: String
            do { key = try PercentCoding.decode(raw) } catch let e as PercentCoding.DecodingError {
                throw RESTError(400, "Invalid path: \(e.message)")
            }
            keys.append(key)
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
