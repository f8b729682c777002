/// How much the server's streams (SSE streams and realtime listens) may hold, across every
/// connection: listens in total, and database files followed at once. Checked where a stream or
/// a listen opens (ServerConnection, RealtimeHandler); an open one is never taken away.
///
/// Why a budget of followed files: a followed file stays open (its SQLite connection and three
/// descriptors) for as long as something follows it, past the cache of `maxOpenFiles`; without a
/// bound, streams on many namespaces take the descriptors the server needs for connections and
/// requests (Server's descriptor plan counts this budget).
struct StreamBudget: Sendable {
    /// Listens and streams open at once, all connections together.
    var maxListens = 100_000
    /// Database files streams and listens may follow at once.
    var maxFollowedFiles = 256

    init(maxListens: Int = 100_000, maxFollowedFiles: Int = 256) {
        self.maxListens = maxListens
        self.maxFollowedFiles = maxFollowedFiles
    }

    /// Why one more stream or listen on `file` cannot open, nil when it can.
    func refusal(file: String, _ streams: ServerStreams) -> String? {
        if streams.count >= maxListens {
            return "too many listens on this server (at most \(maxListens)): try again later, or listen higher in the tree"
        }
        if !streams.follows(file) && streams.files.count >= maxFollowedFiles {
            return "too many databases followed at once on this server (at most \(maxFollowedFiles)): try again later"
        }
        return nil
    }
}
