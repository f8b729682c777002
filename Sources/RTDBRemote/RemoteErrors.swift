import RTDBCore
import RTDBWire

/// The one mapping from an HTTP answer to the contract's error codes (issue item 7):
/// 401/403 → `permission_denied` (4); 400 → status 3 with the server's message, the code
/// chosen by what the message is about (query, path, key, JSON, else data); 404 → `unavailable`
/// (no such database); 412 → `not_committed`; 429, 5xx and anything else → `unavailable` (6).
/// Messages quote the server's `{"error": …}` text (or the start of a body that is not JSON)
/// and name the target without credentials.
enum RemoteErrors {
    static func error(_ r: HTTPClientResponse, target: RemoteTarget, what: String) -> RTDBError {
        let said = message(r.body)
        let suffix = said.map { ": \($0)" } ?? ""
        switch r.status {
        case 401, 403:
            return RTDBError(.permissionDenied, "\(target.display) refused \(what)\(suffix.isEmpty ? ": permission denied" : suffix)")
        case 400:
            return RTDBError(code(for: said ?? ""), "\(target.display) rejected \(what)\(suffix)")
        case 404:
            return RTDBError(.unavailable, "\(target.display): no such database (404)\(suffix)")
        case 412:
            return RTDBError(.notCommitted, "\(what) was not committed: the value changed\(suffix)")
        case 429:
            return RTDBError(.unavailable, "\(target.display) is rate limiting requests (429)\(suffix)")
        default:
            return RTDBError(.unavailable, "\(target.display) answered \(what) with status \(r.status)\(suffix)")
        }
    }

    /// The `error` field of a JSON error body, else the body's first line (at most 200 bytes).
    static func message(_ body: [UInt8]) -> String? {
        if let entries = (try? body.withUnsafeBufferPointer({ try JSONReader.parseEntries($0) })) ?? nil,
           case .string(let m)? = entries.last(where: { $0.key == "error" })?.node {
            return m
        }
        let line = body.prefix { $0 != 0x0A && $0 != 0x0D }.prefix(200)
        let text = String(decoding: line, as: UTF8.self)
        return text.isEmpty ? nil : text
    }

    static func code(for message: String) -> RTDBError.Code {
        let m = RemoteTarget.ascii(lowercased: message)
        if m.contains("orderby") || m.contains("index") || m.contains("query") || m.contains("limitto")
            || m.contains("startat") || m.contains("endat") || m.contains("equalto") { return .invalidQuery }
        if m.contains("json") || m.contains("parse") { return .invalidJSON }
        if m.contains("too large") || m.contains("too big") || m.contains("size") { return .tooLarge }
        if m.contains("deep") || m.contains("depth") { return .tooDeep }
        if m.contains("key") { return .invalidKey }
        if m.contains("path") { return .invalidPath }
        return .invalidData
    }
}
