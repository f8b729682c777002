/// How a long operation (an import, an export, a chunked write, a flush of a long queue, an
/// index build) says how far it got. The operation calls `begin`, then `update` as often as it
/// likes, then `end`; what is shown, when and where is the sink's business (the CLI shows one
/// updating line on a terminal, and nothing otherwise). `Progress.none` ignores everything.
///
/// `update` is also where an operation may be stopped: a sink throws there when the user asked
/// to stop (Ctrl-C on the terminal that shows the line), so every update is a point at which
/// the operation can give up cleanly (a transaction rolls back; work done in many requests stops
/// between two of them), and the caller says what was left.
public protocol ProgressSink: AnyObject {
    /// A new stage: `label` names it ("import", "export"), `total` is how many units there will
    /// be when that is known.
    func begin(_ label: String, total: Int64?, unit: ProgressUnit)
    /// `done` units so far (it never goes back within a stage). Throws when the operation is
    /// to stop here.
    func update(done: Int64) throws
    /// How many things of a second kind (`name` in the plural, "children") the stage has
    /// counted so far, shown beside its units from the next update on.
    func count(_ items: Int64, _ name: String)
    /// The stage is over, whether it succeeded or not.
    func end()
}

/// What a progress count counts.
public enum ProgressUnit: Sendable, Equatable {
    case bytes
    /// Things with a name in the plural ("writes", "requests", "rows").
    case items(String)
}

/// A sink that shows nothing (and holds nothing, so threads may share it).
public final class SilentProgress: ProgressSink, Sendable {
    public init() {}
    public func begin(_ label: String, total: Int64?, unit: ProgressUnit) {}
    public func update(done: Int64) {}
    public func count(_ items: Int64, _ name: String) {}
    public func end() {}
}

public enum Progress {
    /// The shared sink that shows nothing: the default of every operation that reports.
    public static let none: any ProgressSink & Sendable = SilentProgress()

    /// The text of one progress line: `label: done / total (p%), rate, time left`, or without a
    /// total `label: done, rate`; things counted besides follow the units (`read: 12.3 MB,
    /// 4500 children, 1.2 MB/s`). `seconds` is the time since the stage began.
    public static func line(_ label: String, done: Int64, total: Int64?, unit: ProgressUnit, seconds: Double,
                            counted: (items: Int64, name: String)? = nil) -> String {
        var s = label + ": " + amount(done, unit)
        let also = counted.map { ", \($0.items) \($0.name)" } ?? ""
        let rate = seconds > 0 ? Double(done) / seconds : 0
        if let total, total > 0 {
            let shown = min(done, total)
            s += " / " + amount(total, unit) + " (\(Int(Double(shown) * 100 / Double(total)))%)" + also
            s += ", " + rateText(rate, unit)
            if rate > 0 && shown < total {
                s += ", " + duration(Double(total - shown) / rate) + " left"
            }
        } else {
            s += also + ", " + rateText(rate, unit)
        }
        return s
    }

    static func amount(_ n: Int64, _ unit: ProgressUnit) -> String {
        switch unit {
        case .bytes: return bytes(Double(n))
        case .items(let name): return "\(n) \(name)"
        }
    }

    static func rateText(_ perSecond: Double, _ unit: ProgressUnit) -> String {
        switch unit {
        case .bytes: return bytes(perSecond) + "/s"
        case .items(let name): return "\(Int(perSecond.rounded())) \(name)/s"
        }
    }

    /// Bytes in decimal units with one decimal above a kilobyte: 512 B, 1.5 kB, 412.3 MB, 1.0 GB.
    static func bytes(_ n: Double) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var v = n
        var i = 0
        while v >= 1000 && i < units.count - 1 {
            v /= 1000
            i += 1
        }
        if i == 0 { return "\(Int(v)) B" }
        let tenths = Int((v * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[i])"
    }

    /// A time left: 45 s, 3 min 20 s, 2 h 5 min.
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        return "\(s / 3600) h \((s % 3600) / 60) min"
    }
}
