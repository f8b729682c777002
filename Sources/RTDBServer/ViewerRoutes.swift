import RTDBViewer
import RTDBWire

/// The data viewer's place on `rtdb serve`: its files under `/.ui/`, and a browser that opens
/// the server's root (`GET /` asking for HTML) sent there. Everything else is the REST API's:
/// these answers take no path that ends in `.json`, so no REST, stream or realtime answer
/// changes. The files carry no data and no credential; the page asks for both through the REST
/// API like any other client, so rules and the secret apply to it as to anyone.
enum ViewerRoutes {
    static let prefix = "/.ui/"

    /// The answer to `r` when it is the viewer's, else nil (the request is the REST API's).
    static func answer(_ r: HTTPRequest) -> HTTPResponse? {
        guard mayBeViewers(r.rawPath), r.method == "GET" || r.method == "HEAD" else { return nil }
        if r.rawPath == "/" {
            guard r.header("accept")?.contains("text/html") ?? false else { return nil }
            return redirect(to: prefix + queryPart(r), status: 302)
        }
        if r.rawPath == "/.ui" { return redirect(to: prefix + queryPart(r), status: 301) }
        guard r.rawPath.hasPrefix(prefix) else { return nil }
        guard let file = ViewerFile(name: String(r.rawPath.dropFirst(prefix.count))) else {
            return HTTPResponse(status: 404, headers: [("Content-Type", "text/plain; charset=utf-8")] + guarded,
                                body: Array("not found: the viewer is at /.ui/\n".utf8))
        }
        let bytes = file.bytes
        var headers = [("Content-Type", file.contentType), ("Cache-Control", "no-cache")] + guarded
        if r.method == "HEAD" {
            headers.append(("Content-Length", String(bytes.count)))
            return HTTPResponse(status: 200, headers: headers)
        }
        return HTTPResponse(status: 200, headers: headers, body: bytes)
    }

    /// Whether `path` may be the viewer's: "/" or one starting "/.u". Every REST request passes
    /// here, so it costs the look at two or three bytes, not a string comparison.
    static func mayBeViewers(_ path: String) -> Bool {
        var bytes = path.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: "/") else { return false }
        guard let second = bytes.next() else { return true }
        return second == UInt8(ascii: ".") && bytes.next() == UInt8(ascii: "u")
    }

    /// What a browser may do with the viewer's files: run only the server's own script and
    /// style, talk only to the server, never be framed by another page (its buttons write
    /// data), never tell another site where it was.
    static let guarded: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            + "img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    ]

    static func redirect(to location: String, status: Int) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Location", location), ("Content-Type", "text/plain; charset=utf-8")],
                     body: Array("\(location)\n".utf8))
    }

    /// `?…` of the request's target as sent (the namespace the page opens, say), or "".
    static func queryPart(_ r: HTTPRequest) -> String {
        guard let q = r.target.firstIndex(of: "?") else { return "" }
        return String(r.target[q...])
    }
}
