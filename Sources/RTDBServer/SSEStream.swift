import RTDBCore
import RTDBRules
import RTDBWire

/// A REST event stream (`Accept: text/event-stream`) once open: its
/// listen, and what the rules must keep granting. Decides what the stream sends beside its
/// events — `cancel` when the location stops being readable, `auth_revoked` when the ID token
/// it was opened with expires, a keep-alive when it has been quiet — and when it ends.
final class SSEStream {
    let subscriber: StreamSubscriber
    /// What the rules must keep granting for the stream to stay open (nil once it ended).
    private(set) var access: StreamAccess?

    init(subscriber: StreamSubscriber, access: StreamAccess?) {
        self.subscriber = subscriber
        self.access = access
    }

    /// What to send: bytes on an open stream, or final bytes after which the stream ends.
    enum Output: Equatable {
        case send([UInt8])
        case end([UInt8])
    }

    static let keepAlive = SSE.frame(event: "keep-alive", data: "null")
    static let cancel = SSE.frame(event: "cancel", data: "\"Permission denied\"")
    static let authRevoked = SSE.frame(event: "auth_revoked", data: "credential is no longer valid")

    /// The answer that opens a stream: its head and its first event.
    static func opening(_ first: StreamEvent, export: Bool) -> [UInt8] {
        SSE.head() + first.sseFrame(export: export)
    }

    /// After a commit or a rules change: `cancel` when the location is no longer readable.
    func recheck(_ canStillRead: (StreamAccess) -> Bool) -> Output? {
        guard let a = access, !canStillRead(a) else { return nil }
        access = nil
        return .end(SSEStream.cancel)
    }

    /// Once a second: `auth_revoked` when the stream's ID token has expired (Firebase's answer),
    /// else a keep-alive when nothing was sent for `keepAliveMillis`.
    func sweep(quietFor millis: Int64, keepAliveMillis: Int64, expired: (Principal) -> Bool) -> Output? {
        if let a = access, expired(a.principal) {
            access = nil
            return .end(SSEStream.authRevoked)
        }
        return millis >= keepAliveMillis ? .send(SSEStream.keepAlive) : nil
    }
}

extension RESTHandler {
    /// True when `principal` is a user whose verified ID token (`--project-id`) has expired.
    func expired(_ principal: Principal, _ nowSeconds: Int64) -> Bool {
        guard security.projectID != nil, case .user(let auth) = principal else { return false }
        switch auth.child("token").child("exp") {
        case .int(let exp): return exp <= nowSeconds
        case .double(let exp): return exp <= Double(nowSeconds)
        default: return false
        }
    }
}
