/// The files of the data viewer, as `rtdb serve` answers them under `/.ui/`. Their bytes are
/// the files in page/, compiled in (Package.swift: embedInCode); nothing is read from disk and
/// nothing in them depends on the server, its data or its credential, so every answer of one
/// file is the same bytes.
public enum ViewerFile: CaseIterable, Sendable {
    case page
    case script
    case style

    /// The file named by what follows `/.ui/` in a request's path: "" and "index.html" are the
    /// page. Nil for any other name.
    public init?(name: String) {
        switch name {
        case "", "index.html": self = .page
        case "viewer.js": self = .script
        case "viewer.css": self = .style
        default: return nil
        }
    }

    /// The name the page refers to the file by.
    public var name: String {
        switch self {
        case .page: return "index.html"
        case .script: return "viewer.js"
        case .style: return "viewer.css"
        }
    }

    public var contentType: String {
        switch self {
        case .page: return "text/html; charset=utf-8"
        case .script: return "text/javascript; charset=utf-8"
        case .style: return "text/css; charset=utf-8"
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .page: return PackageResources.index_html
        case .script: return PackageResources.viewer_js
        case .style: return PackageResources.viewer_css
        }
    }
}
