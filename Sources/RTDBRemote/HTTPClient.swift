import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Scheme, host and port: what one connection is made to.
public struct Endpoint: Sendable, Equatable {
    public var secure: Bool
    public var host: String
    public var port: Int

    var hostHeader: String {
        (secure && port == 443) || (!secure && port == 80) ? host : "\(host):\(port)"
    }

    /// Splits an absolute http(s) URL into its endpoint and request target (`/path?query`).
    static func split(_ url: String) -> (Endpoint, String)? {
        let lower = RemoteTarget.ascii(lowercased: String(url.prefix(8)))
        let secure: Bool
        var rest: Substring
        if lower.hasPrefix("https://") { secure = true; rest = url.dropFirst(8) }
        else if lower.hasPrefix("http://") { secure = false; rest = url.dropFirst(7) }
        else { return nil }
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let cut = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = String(rest[..<cut])
        var target = String(rest[cut...])
        if target.isEmpty || target.first == "?" { target = "/" + target }
        if authority.contains("@") || target.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) { return nil }
        guard let (host, port) = try? RemoteTarget.splitHostPort(authority, { RTDBError(.usage, $0) }) else { return nil }
        return (Endpoint(secure: secure, host: host, port: port ?? (secure ? 443 : 80)), target)
    }
}

/// One request, before credentials are added.
struct HTTPRequestSpec {
    var method: String
    /// `/path.json?query` (already encoded).
    var target: String
    var headers: [(name: String, value: String)] = []
    var body: [UInt8]? = nil
    /// Safe to send again when the first try may or may not have reached the server.
    var idempotent: Bool
}

/// A blocking HTTP/1.1 client over one kept-alive connection (reopened when the server closed
/// it), with a deadline on every request.
///
/// Retries: a request whose connection could not be made, or that met 500, 502,
/// 503 or 504 or a dropped connection, is sent again after a jittered, growing pause only when
/// it is idempotent (a write is never sent twice otherwise); 429 waits for `Retry-After` when
/// that fits in the time left. Every retry stays within the request's deadline. 307 and 308
/// redirects are followed (up to 5), keeping the credentials; https is never downgraded to http.
final class HTTPClient {
    private(set) var endpoint: Endpoint
    let timeoutMillis: Int
    let caFile: String?
    private var tcp: TCPStream?
    private var stream: ByteStream?
    private var parser = HTTPResponseParser()
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    /// Requests answered on the current connection (0: it is fresh).
    private var served = 0

    init(endpoint: Endpoint, timeoutMillis: Int, caFile: String?) {
        self.endpoint = endpoint
        self.timeoutMillis = timeoutMillis
        self.caFile = caFile
    }

    deinit { disconnect() }

    func disconnect() {
        stream?.close()
        tcp?.close()
        stream = nil
        tcp = nil
        parser = HTTPResponseParser()
        served = 0
    }

    var deadlineNow: Int64 {
        timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis)
    }

    static func left(_ deadline: Int64) -> Int {
        deadline == Int64.max ? -1 : Int(max(1, deadline - monotonicMillis()))
    }

    // MARK: connections

    func connect(deadline: Int64) throws {
        disconnect()
        let t = try TCPStream.connect(host: endpoint.host, port: endpoint.port, timeoutMillis: HTTPClient.left(deadline))
        tcp = t
        if endpoint.secure {
            stream = try TLSHook.secureStream(over: t, host: endpoint.host, caFile: caFile, timeoutMillis: HTTPClient.left(deadline))
        } else {
            stream = t
        }
    }

    /// Opens the connection now unless one is ready (a caller that must know whether a
    /// request could have reached the server connects first).
    func prepare() throws {
        do {
            try ensureConnected(deadline: deadlineNow)
        } catch {
            disconnect()
            throw HTTPClient.transportError(error, endpoint)
        }
    }

    private func ensureConnected(deadline: Int64) throws {
        if let t = tcp, stream != nil, !t.isStale, !parser.hasUnreadBytes { return }
        try connect(deadline: deadline)
    }

    // MARK: requests

    /// Sends the request and reads the whole response, with retries and redirects.
    func send(_ request: HTTPRequestSpec) throws -> HTTPClientResponse {
        let deadline = deadlineNow
        var req = request
        var attempt = 0
        var redirects = 0
        while true {
            attempt += 1
            let outcome: Result<HTTPClientResponse, Error>
            var reachedServer = false
            do {
                outcome = .success(try once(req, deadline: deadline, reachedServer: &reachedServer))
            } catch {
                outcome = .failure(error)
            }
            switch outcome {
            case .success(let response):
                if response.status == 307 || response.status == 308, let location = response.header("location") {
                    redirects += 1
                    if redirects > 5 { throw RTDBError(.unavailable, "\(endpoint.host) redirected too many times") }
                    req.target = try follow(location, current: req.target)
                    continue
                }
                let retryable = [500, 502, 503, 504].contains(response.status) && req.idempotent
                if response.status == 429 || retryable {
                    var wait = HTTPClient.backoff(attempt)
                    if response.status == 429 {
                        guard let text = response.header("retry-after"), let secs = Int(text), secs >= 0 else {
                            if attempt < 4, pause(wait, deadline: deadline) { continue }
                            return response
                        }
                        wait = secs * 1000
                    }
                    if attempt < 4, pause(wait, deadline: deadline) { continue }
                }
                return response
            case .failure(let error):
                disconnect()
                if let e = error as? RTDBError, e.code == .timeout { throw e }
                let mayRetry = req.idempotent || !reachedServer
                if mayRetry, attempt < 4, pause(HTTPClient.backoff(attempt), deadline: deadline) { continue }
                throw HTTPClient.transportError(error, endpoint)
            }
        }
    }

    /// The wait before retry `attempt` (1-based): 100 ms doubling, at most 2 s, jittered down to half.
    static func backoff(_ attempt: Int) -> Int {
        let base = min(2000, 100 << min(attempt - 1, 5))
        return Int.random(in: (base / 2)...base)
    }

    /// Sleeps `millis` if that leaves time before the deadline; false when it does not.
    func pause(_ millis: Int, deadline: Int64) -> Bool {
        if deadline != Int64.max && monotonicMillis() + Int64(millis) >= deadline { return false }
        usleep(UInt32(min(millis, 60_000)) * 1000)
        return true
    }

    /// Moves to a redirect's endpoint and returns the new request target.
    func follow(_ location: String, current: String) throws -> String {
        if location.hasPrefix("/") { return location }
        guard let (next, target) = Endpoint.split(location) else {
            throw RTDBError(.unavailable, "\(endpoint.host) redirected to an invalid location")
        }
        if endpoint.secure && !next.secure {
            throw RTDBError(.unavailable, "\(endpoint.host) redirected from https to http; refused")
        }
        if next != endpoint {
            disconnect()
            endpoint = next
        }
        return target
    }

    /// Writes `req` on the open connection and readies the parser for its answer.
    private func write(_ req: HTTPRequestSpec, deadline: Int64, reachedServer: inout Bool) throws -> ByteStream {
        guard let stream else { throw RTDBError(.internal, "no connection") }
        let bytes = HTTPRequestWriter.serialize(method: req.method, target: req.target, host: endpoint.hostHeader,
                                                headers: req.headers, body: req.body)
        reachedServer = true
        try bytes.withUnsafeBytes { try stream.write($0, timeoutMillis: HTTPClient.left(deadline)) }
        parser.reset()
        return stream
    }

    /// Bodies larger than this are announced first (`Expect: 100-continue`) and sent once the
    /// server says to go on: a server that refuses the size answers at once (413, as `rtdb
    /// serve --max-write-bytes` does when it reads the length) and closes, and a body still
    /// being written would then end in a reset connection instead of that answer.
    static let announceBodiesAbove = 256 << 10
    /// How long to wait for `100 Continue` before sending the body anyway (as curl does), for a
    /// server that ignores the expectation.
    static let continueWaitMillis = 1000

    /// One try: connect if needed, write, read the whole response.
    private func once(_ req: HTTPRequestSpec, deadline: Int64, reachedServer: inout Bool) throws -> HTTPClientResponse {
        try ensureConnected(deadline: deadline)
        var head: HTTPResponseHead? = nil
        var bodySent = true
        let stream: ByteStream
        if let payload = req.body, payload.count > HTTPClient.announceBodiesAbove {
            var announced = req
            announced.body = nil
            announced.headers += [("Content-Length", String(payload.count)), ("Expect", "100-continue")]
            stream = try write(announced, deadline: deadline, reachedServer: &reachedServer)
            head = try finalAnswerBeforeBody(stream, req.method, deadline: deadline)
            if head == nil {
                try payload.withUnsafeBytes { try stream.write($0, timeoutMillis: HTTPClient.left(deadline)) }
            } else {
                bodySent = false
            }
        } else {
            stream = try write(req, deadline: deadline, reachedServer: &reachedServer)
        }
        var body: [UInt8] = []
        while true {
            if let r = try parser.response(forMethod: req.method, pendingHead: &head, body: &body) {
                served += 1
                // Answered without the body: the connection cannot carry another request.
                if !r.head.keepAlive || !bodySent { disconnect() }
                return r
            }
            let n = try readSome(stream, deadline: deadline)
            if n == 0 {
                try parser.endOfInput()
                if let r = try parser.response(forMethod: req.method, pendingHead: &head, body: &body) {
                    disconnect()
                    return r
                }
                throw NetError.address("the connection closed in the middle of a response")
            }
        }
    }

    /// After an announced body's head: the server's final answer when it gave one before the
    /// body (a refusal), nil when it said to go on or said nothing in time.
    private func finalAnswerBeforeBody(_ stream: ByteStream, _ method: String, deadline: Int64) throws -> HTTPResponseHead? {
        let wait = min(Int64(HTTPClient.continueWaitMillis), deadline == Int64.max ? Int64.max : max(1, deadline - monotonicMillis()))
        let n: Int
        do {
            n = try readSome(stream, deadline: monotonicMillis() + wait)
        } catch NetError.timeout(_) {
            return nil
        }
        if n == 0 {
            try parser.endOfInput()
            return nil
        }
        // `100 Continue` is passed over (nil): the body goes.
        return try parser.head(forMethod: method)
    }

    func readSome(_ stream: ByteStream, deadline: Int64) throws -> Int {
        let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: HTTPClient.left(deadline)) }
        if n > 0 { buffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) } }
        return n
    }

    /// Turns a transport failure into the contract's error: a timeout is `timeout`, anything
    /// else `unavailable`; the message names the host, never a credential.
    static func transportError(_ error: Error, _ endpoint: Endpoint) -> RTDBError {
        switch error {
        case let e as RTDBError: return e
        case let e as NetError:
            if case .timeout(let m) = e { return RTDBError(.timeout, m) }
            return RTDBError(.unavailable, "\(endpoint.host):\(endpoint.port) is unreachable: \(e.description)")
        case let e as HTTPResponseParseError:
            return RTDBError(.unavailable, "\(endpoint.host):\(endpoint.port) sent an invalid response: \(e.message)")
        default:
            return RTDBError(.unavailable, "\(endpoint.host):\(endpoint.port) is unreachable: \(error)")
        }
    }

    // MARK: streaming

    /// Sends a request and returns once the response head has arrived; the body is then read
    /// with `readBody`. Redirects are followed. No retries: the caller reconnects.
    func openStream(_ request: HTTPRequestSpec) throws -> HTTPResponseHead {
        let deadline = deadlineNow
        var req = request
        var redirects = 0
        while true {
            var reached = false
            let head: HTTPResponseHead
            do {
                head = try streamHead(req, deadline: deadline, reachedServer: &reached)
            } catch {
                disconnect()
                throw HTTPClient.transportError(error, endpoint)
            }
            if head.status == 307 || head.status == 308, let location = head.header("location") {
                redirects += 1
                if redirects > 5 { throw RTDBError(.unavailable, "\(endpoint.host) redirected too many times") }
                disconnect()
                req.target = try follow(location, current: req.target)
                continue
            }
            return head
        }
    }

    private func streamHead(_ req: HTTPRequestSpec, deadline: Int64, reachedServer: inout Bool) throws -> HTTPResponseHead {
        try connect(deadline: deadline)
        let stream = try write(req, deadline: deadline, reachedServer: &reachedServer)
        while true {
            if let h = try parser.head(forMethod: req.method) { return h }
            if try readSome(stream, deadline: deadline) == 0 { try parser.endOfInput() }
        }
    }

    enum StreamRead {
        case bytes([UInt8])
        case idle
        case ended
    }

    /// Body bytes of an open stream: what arrived within `timeoutMillis`, `.idle` when nothing
    /// did, `.ended` when the body or the connection ended.
    func readBody(timeoutMillis: Int) throws -> StreamRead {
        let pending = try parser.takeBody()
        if !pending.isEmpty { return .bytes(pending) }
        if parser.bodyComplete { return .ended }
        guard let stream else { return .ended }
        let n: Int
        do {
            n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0, timeoutMillis: timeoutMillis) }
        } catch NetError.timeout(_) {
            return .idle
        }
        if n == 0 {
            try? parser.endOfInput()
            let rest = try parser.takeBody()
            disconnect()
            return rest.isEmpty ? .ended : .bytes(rest)
        }
        buffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        let got = try parser.takeBody()
        return got.isEmpty ? (parser.bodyComplete ? .ended : .idle) : .bytes(got)
    }
}

/// TLS and signing, from RTDBNet (OpenSSL 3 loaded on first use: local commands never load it),
/// with their failures turned into the CLI's error codes.
enum TLSHook {
    /// TLS over `tcp`, certificate chain and host name verified against the system's CA store
    /// (plus `caFile`). A server that cannot be verified is refused: `unavailable` (status 6).
    static func secureStream(over tcp: TCPStream, host: String, caFile: String?, timeoutMillis: Int) throws -> ByteStream {
        do {
            return try TLSClientStream.connect(over: tcp, host: host, caFile: caFile, timeoutMillis: timeoutMillis)
        } catch let e as TLSError {
            throw connectionError(e, host: host)
        }
    }

    /// The error for a TLS connection to `host` that failed with `e`; a certificate that did
    /// not verify says so as a fact, which callers decide on (they stop retrying).
    static func connectionError(_ e: TLSError, host: String) -> RTDBError {
        let fact: RTDBError.Fact? = if case .verification = e { .certificateRefused } else { nil }
        return RTDBError(.unavailable, "cannot reach \(host) over https: \(e.message)", fact: fact)
    }

    /// True when `error` is a server certificate that did not verify: not a passing outage,
    /// so trying again would only try again forever.
    static func isCertificateRefusal(_ error: RTDBError) -> Bool {
        error.code == .unavailable && error.fact == .certificateRefused
    }

    /// RS256 signature for a service-account JWT.
    static func signRS256(pemPrivateKey: String, data: [UInt8]) throws -> [UInt8] {
        do {
            return try RSASigner.signRS256(pemPrivateKey: pemPrivateKey, data: data)
        } catch let e as TLSError {
            if case .unavailable = e { throw RTDBError(.unavailable, e.message) }
            throw RTDBError(.invalidData, "the service-account key cannot sign: \(e.message)")
        }
    }
}
