import RTDBCore

/// A write the change feed knows only by the paths it touched (it was too large to copy, or an
/// older release made it): a reader reads the values it needs, and only those. The paths stay
/// the text the log keeps (unrooted, one per line, keys as bytes) until a reader asks for the
/// ones near its location, so a write of a million children costs a stream elsewhere a scan of
/// that text, not a million values read back.
public struct TouchedPaths: Sendable {
    /// The `paths` column: each path's keys joined by `/`, paths joined by newlines (keys hold
    /// neither: `Limits` refuses `/` and control characters in keys).
    let text: [UInt8]
    /// The kind of write that touched them, when the file says (the `op` and `base` columns;
    /// files from before the feed kept operations do not), so that an update read back stays an
    /// update from its own base, however many paths it touched.
    let write: Write?

    public enum Write: Sendable {
        case set
        case update(base: Path)
    }

    init(text: [UInt8], write: Write? = nil) {
        self.text = text
        self.write = write
    }

    /// The paths one by one, each as its keys (byte slices of `text`); `body` returns false to
    /// stop.
    public func forEach(_ body: ([ArraySlice<UInt8>]) -> Bool) {
        var start = 0
        while start <= text.count {
            var end = start
            while end < text.count && text[end] != UInt8(ascii: "\n") { end += 1 }
            let line = text[start..<end]
            let keys = line.isEmpty ? [] : line.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            if !body(keys) { return }
            start = end + 1
        }
    }

    /// What matters of the write to a reader of one location.
    struct Near {
        /// A touched path is the location or above it: the reader reads its whole value.
        var covers = false
        /// Otherwise the touched paths below the location.
        var below: [Path] = []
        /// The longest path every touched path starts with (the write's base).
        var base: Path = .root
        /// How many paths were touched (one: a set; more: an update).
        var count = 0
    }

    func near(_ location: Path) -> Near {
        let loc = location.keys.map { Array($0.utf8) }
        var near = Near()
        var first: [ArraySlice<UInt8>] = []
        var shared = 0
        forEach { keys in
            if near.count == 0 {
                first = keys
                shared = keys.count
            } else {
                var n = 0
                while n < shared, n < keys.count, first[n].elementsEqual(keys[n]) { n += 1 }
                shared = n
            }
            near.count += 1
            if near.covers { return true }
            var common = 0
            while common < loc.count, common < keys.count, keys[common].elementsEqual(loc[common]) { common += 1 }
            if common == loc.count {
                if keys.count == loc.count { near.covers = true; near.below = [] }
                else { near.below.append(TouchedPaths.path(keys)) }
            } else if common == keys.count {
                near.covers = true   // a path above the location
                near.below = []
            }
            return true
        }
        near.base = TouchedPaths.path(Array(first.prefix(shared)))
        return near
    }

    static func path(_ keys: [ArraySlice<UInt8>]) -> Path {
        Path(validatedKeys: keys.map { String(decoding: $0, as: UTF8.self) })
    }
}
