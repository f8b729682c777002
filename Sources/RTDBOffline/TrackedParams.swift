import RTDBCore
import RTDBWire

/// The canonical `params` of a tracked query: the query's REST
/// parameters as a JSON object with its keys in order; a query without range or limit (in any
/// order) is the default query of its location, `{}`. Equal queries give equal text, so the
/// text is the query's identity in `cache_tracked_queries` and `cache_keep`.
public enum TrackedParams {
    /// The canonical params of a default query.
    public static let defaultParams = CachedQuery.wholeLocation

    public static func canonical(_ query: Query?) -> String {
        guard let query, query.isFiltered else {
            return defaultParams
        }
        let params = RESTQuery.parameters(query).sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (i, p) in params.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(p.name, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONWriter.appendString(p.value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The query back from its canonical params (nil for the default query).
    public static func query(_ params: String) throws -> Query? {
        guard params != defaultParams,
              let entries = try JSONReader.parseEntries(params) else { return nil }
        let pairs: [(name: String, value: String)] = entries.compactMap { e in
            if case .string(let v) = e.node { return (e.key, v) }
            return nil
        }
        return try RESTQuery.parse(pairs)
    }
}
