import RTDBCore
import RTDBRules
import RTDBWire

/// The rules coverage of a namespace: how often each rule and subexpression of the rules in
/// force ran and what it gave, counted since the rules were set (a rules set counts into its
/// own counters, so new rules start from zero). `GET /.inspect/coverage.json` answers it as
/// JSON, `DELETE` on it resets the counts, `GET /.inspect/coverage` shows it as a page.
extension RESTHandler {
    enum CoveragePage { case json, html }

    /// Which coverage document `rawPath` names, if any.
    static func coveragePage(_ rawPath: String) -> CoveragePage? {
        switch rawPath {
        case "/.inspect/coverage.json": return .json
        case "/.inspect/coverage": return .html
        default: return nil
        }
    }

    func coverageEndpoint(_ request: HTTPRequest, method: String, namespace: String, page: CoveragePage) throws -> HTTPResponse {
        for q in request.query where !["auth", "access_token", "ns"].contains(q.name) {
            throw RESTError(400, "query parameter \(Limits.quote(q.name)) is not accepted on /.inspect/coverage")
        }
        // The rules and how they are used are the server's to show, as the rules themselves are.
        if secret != nil && !hasAdminCredential(request) { throw RESTError.permissionDenied }
        let rules = self.rules(for: namespace) ?? RuleSet.open
        switch (page, method) {
        case (.json, "GET"), (.json, "HEAD"):
            return headOnly(HTTPResponse.json(200, CoverageReport.json(rules)), method)
        case (.json, "DELETE"):
            rules.resetCounts()
            return HTTPResponse.json(200, CoverageReport.json(rules))
        case (.html, "GET"), (.html, "HEAD"):
            let page = HTTPResponse(status: 200, headers: [("Content-Type", "text/html; charset=utf-8")],
                                    body: Array(CoverageReport.html(rules).utf8))
            return headOnly(page, method)
        case (.json, _): throw notAllowed("GET, DELETE")
        case (.html, _): throw notAllowed("GET")
        }
    }
}
