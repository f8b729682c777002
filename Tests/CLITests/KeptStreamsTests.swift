import RTDBCore
import Testing
@testable import RTDBCLI

/// `KeptStreams.cover`: which kept queries of `sync --follow` need a stream of their own.
@Suite struct KeptStreamsTests {
    func kept(_ path: String, _ params: String = CachedQuery.wholeLocation) throws -> CachedQuery {
        CachedQuery(path: try Path(path), params: params)
    }

    func names(_ list: [CachedQuery]) -> [String] { list.map { $0.path.description + " " + $0.params } }

    @Test func wholeLocationsCarryEverythingInsideAndQueriesElsewhereStreamTheirWindow() throws {
        let last2 = #"{"limitToLast":"2","orderBy":"\"$value\""}"#
        let first1 = #"{"limitToFirst":"1","orderBy":"\"$key\""}"#
        let list = try [kept("/a/b"), kept("/a"), kept("/a/c", last2), kept("/s", last2), kept("/s", first1), kept("/s", last2),
                        kept("/t/u"), kept("/t/u/v", first1)]
        #expect(names(KeptStreams.cover(list)) == ["/a {}", "/t/u {}", "/s \(last2)", "/s \(first1)"])
        // A query at a kept location rides on it; a query above one does not.
        #expect(names(KeptStreams.cover(try [kept("/x", last2), kept("/x")])) == ["/x {}"])
        #expect(names(KeptStreams.cover(try [kept("/", first1), kept("/x")])) == ["/x {}", "/ \(first1)"])
    }
}
