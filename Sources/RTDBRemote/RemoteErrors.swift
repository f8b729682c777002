import RTDBCore
import RTDBWire

/// What an HTTP answer that is not a success means, for every caller: a command reports
/// `error`; the offline flusher acts on `kind` (a refusal reverts a queued write, a refused
/// credential pauses the queue, anything else stops it until later).
public struct RemoteFailure: Sendable {
    public enum Kind: Sendable {
        /// The server refused the request for what it holds (400, 403, 413, or 401 saying
        /// "Permission denied", as Firebase answers a rules denial): sending it again cannot help.
        case refused
        /// 401 with other words: the credential itself (an expired or bad token) was refused;
        /// the same request may succeed with a fresh one.
        case credentialRefused
        /// 412: the value changed since it was read (a conditional write).
        case stale
        /// 404, 429, 5xx and anything else: the server cannot take it now.
        case unavailable
    }

    public var kind: Kind
    /// The error a command reports.
    public var error: RTDBError
    /// The start of the body (400 bytes), in lower case: how a refused credential is told
    /// from a rules denial, and quoted when a queue waits for a fresh credential.
    public var bodyStart: String
}

/// The one mapping from an HTTP answer to the contract's error codes:
/// 401/403 → `permission_denied` (4); 400 → status 3 with the server's message, the code
/// chosen by what the message is about (query, path, key, JSON, else data); 413 → `too_large`;
/// 404 → `unavailable` (no such database); 412 → `not_committed`; 429, 5xx and anything else →
/// `unavailable` (6). Messages quote the server's `{"error": …}` text (or the start of a body
/// that is not JSON) and name the target without credentials.
public enum RemoteErrors {
    public static func failure(_ r: HTTPClientResponse, target: RemoteTarget, what: String) -> RemoteFailure {
        let said = message(r.body)
        let suffix = said.map { ": \($0)" } ?? ""
        let start = RemoteTarget.ascii(lowercased: String(decoding: r.body.prefix(400), as: UTF8.self))
        let kind: RemoteFailure.Kind
        let error: RTDBError
        switch r.status {
        case 401, 403:
            error = RTDBError(.permissionDenied, "\(target.display) refused \(what)\(suffix.isEmpty ? ": permission denied" : suffix)")
            kind = r.status == 403 || start.contains("permission denied") ? .refused : .credentialRefused
        case 400:
            error = RTDBError(code(for: said ?? ""), "\(target.display) rejected \(what)\(suffix)")
            kind = .refused
        case 404:
            error = RTDBError(.unavailable, "\(target.display): no such database (404)\(suffix)")
            kind = .unavailable
        case 412:
            error = RTDBError(.notCommitted, "\(what) was not committed: the value changed\(suffix)")
            kind = .stale
        case 413:
            error = RTDBError(.tooLarge, "\(target.display) answered \(what) with status 413\(suffix)")
            kind = .refused
        case 429:
            error = RTDBError(.unavailable, "\(target.display) is rate limiting requests (429)\(suffix)")
            kind = .unavailable
        default:
            error = RTDBError(.unavailable, "\(target.display) answered \(what) with status \(r.status)\(suffix)")
            kind = .unavailable
        }
        return RemoteFailure(kind: kind, error: error, bodyStart: start)
    }

    /// True for the answer Firebase gives a request whose answer or write would be larger than
    /// it takes at once (a read past 256 MB; a write past the `writeSizeLimit`): 400 with
    /// "… exceeds the maximum size …", or 413. The caller may then split the work.
    public static func isResponseTooLarge(_ r: HTTPClientResponse) -> Bool {
        if r.status == 413 { return true }
        guard r.status == 400, let said = message(r.body) else { return false }
        return RemoteTarget.ascii(lowercased: said).contains("exceeds the maximum size")
    }

    /// The error a command reports for the answer (`failure(_:target:what:).error`).
    public static func error(_ r: HTTPClientResponse, target: RemoteTarget, what: String) -> RTDBError {
        failure(r, target: target, what: what).error
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
