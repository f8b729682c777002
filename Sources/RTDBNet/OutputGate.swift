/// Holds back output that shows data not yet on disk.
///
/// A server that commits without waiting for the fsync (and has it done on another thread)
/// numbers its commits with marks. Output sent while commit `current` may not be durable yet is
/// kept by its connection, marked, until `advance(to:)` says that mark is durable; output of a
/// connection goes out in the order it was sent, so anything sent after marked bytes waits
/// behind them. Thus no client learns of a write, through its own answer, another client's read
/// or an event, before the write would survive a crash.
public final class OutputGate {
    /// Every commit up to this mark is durable.
    public private(set) var durable: UInt64 = 0
    /// The mark of what is sent now: the last commit it may show.
    public var current: UInt64 = 0
    /// Connections holding marked output, told when the marks advance.
    private var holding: [SocketConnection] = []

    public init() {}

    /// Whether output sent now must wait.
    var holds: Bool { current > durable }

    /// Runs `body` with output marked `mark` (the answers of a commit known durable by now go
    /// out at once, even when later commits are not).
    public func sending<T>(as mark: UInt64, _ body: () throws -> T) rethrows -> T {
        let saved = current
        current = mark
        defer { current = saved }
        return try body()
    }

    /// Commits up to `mark` are durable: their output goes out.
    public func advance(to mark: UInt64) {
        if mark <= durable { return }
        durable = mark
        let list = holding
        holding = []
        for c in list { c.gateAdvanced() }
    }

    func hold(_ c: SocketConnection) { holding.append(c) }
}
