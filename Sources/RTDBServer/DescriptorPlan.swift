/// How the server shares out the descriptors it may open: connections, the files the namespace
/// cache keeps open for requests, the files streams follow, and a reserve of its own. Each
/// database file costs three (the file, its write-ahead log and its shared memory).
///
/// Every part has a bound, so the sum never exceeds the limit and `accept` does not fail for
/// want of descriptors while connections are below `connections`. When the limit is too low
/// for everything asked for, connections keep what the limit leaves after the files (never
/// fewer than half the limit, as long as one file of each kind still fits, nor than one), and
/// the files share the rest, half to the cache and half to followed files (never fewer than
/// one each).
struct DescriptorPlan: Equatable {
    /// Connections accepted at most.
    var connections: Int
    /// Files the namespace cache keeps open (ServerNamespaces.maxOpenFiles).
    var openFiles: Int
    /// Files streams and listens may follow at once (StreamBudget.maxFollowedFiles).
    var followedFiles: Int

    /// Descriptors kept for what is neither a connection nor a database file: the listener, the
    /// loop, pipes, the folder watch, standard streams, a huge write's own handle on its file.
    static let ownReserve = 32

    /// The descriptors the plan needs at most.
    var descriptors: Int { connections + DescriptorPlan.ownReserve + 3 * (openFiles + followedFiles) }

    /// The plan for `limit` descriptors, given what the options ask for.
    static func plan(limit: Int, connections wanted: Int, openFiles: Int, followedFiles: Int) -> DescriptorPlan {
        let files = ownReserve + 3 * (openFiles + followedFiles)
        // At least one file of each kind must fit beside the connections and the reserve.
        let connections = max(1, min(wanted, max(limit - files, limit / 2), limit - ownReserve - 6))
        let slots = max(0, (limit - ownReserve - connections) / 3)
        if slots >= openFiles + followedFiles {
            return DescriptorPlan(connections: connections, openFiles: openFiles, followedFiles: followedFiles)
        }
        let followed = max(1, min(followedFiles, slots / 2))
        let open = max(1, min(openFiles, slots - followed))
        return DescriptorPlan(connections: connections, openFiles: open, followedFiles: followed)
    }
}
