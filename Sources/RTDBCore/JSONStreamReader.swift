#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a streamed JSON document is turned into, node by node. Paths are the keys below the
/// stream's base path (`JSONStreamReader.base`).
public protocol JSONStreamSink: AnyObject {
    /// A whole value read into memory, in normal form (it may be `.null` and carry a priority),
    /// for the node at `keys`. `fresh` is false when the stream may already have given that
    /// node a value (a repeated key, or keys out of order), which this one replaces.
    func value(_ node: Node, at keys: [String], fresh: Bool) throws
    /// An object too large for the reader's window starts at `keys`; its children follow as
    /// their own calls. `fresh` as for `value`.
    func beginObject(at keys: [String], fresh: Bool) throws
    /// The large object at `keys` ends; `priority` is its `.priority`, if it had one.
    func endObject(at keys: [String], priority: Node?) throws
    /// (`readEntries` only) An entry of a multi-path update starts: its key as written. The sink
    /// returns the path the entry's value is written at, which becomes the reader's base.
    func beginEntry(_ key: String) throws -> Path
    /// (`readEntries` only) The entry's value has been given.
    func endEntry() throws
    /// True when the sink takes values as `FlatValue`s: then every value that is flat comes
    /// through `value(flat:at:fresh:)`, and only the others as `Node`s.
    var takesFlatValues: Bool { get }
    /// A whole value that is flat (`JSONReader.flatValue`), already valid, for the node at
    /// `keys`; `fresh` as for `value`. It holds what `value` would be given for the same text.
    func value(flat: FlatValue, at keys: [String], fresh: Bool) throws
}

extension JSONStreamSink {
    public var takesFlatValues: Bool { false }
    public func value(flat: FlatValue, at keys: [String], fresh: Bool) throws {
        try value(flat.node, at: keys, fresh: fresh)
    }
}

/// Reads JSON of any size through a window of bounded size and hands it to a sink, with the
/// meaning `JSONReader` gives the same text (normal form, repeated keys, `.priority`, `.value`,
/// `.sv`, the same syntax errors at the same byte offsets).
///
/// Every value that fits in the window is read whole by `JSONReader` and given to the sink as
/// a `Node`; only an object or array larger than the window is walked here, key by key (its
/// children again read whole when they fit). So the rules of normal form live in one place for
/// everything but the large objects, whose own keys are checked here as `JSONReader` and
/// `Limits.validate` check them.
///
/// A sink that takes flat values (`JSONStreamSink.takesFlatValues`) is given every value that
/// fits and is flat as a `FlatValue`, read without building `Node`s (the common case of a large
/// import); a value that is not flat is read again by `JSONReader`, which gives the sink its
/// normal form or reports its error, so the two paths give the same result.
///
/// A problem with the data (an invalid key, a value too deep or too large, a mixed `.sv`) does
/// not stop the reading at once: the rest is still read for syntax errors, and a syntax error
/// anywhere wins, as it does when the whole text is parsed before it is checked. Among several
/// problems with the data, the first one met in the text is reported.
public final class JSONStreamReader {
    /// The default window: a value whose text is larger than this is walked rather than read whole.
    public static let defaultWindow = 16 << 20

    private let source: ByteSource?
    private let buffer: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// Values whose text is longer than this are walked rather than read whole (strings are
    /// read whole up to `capacity`).
    private let wholeLimit: Int
    /// The buffer is the caller's (`init(borrowing:)`), not the reader's to free.
    private let borrowed: Bool
    private var i = 0
    private var end = 0
    private var eof = false
    /// Where `buffer[0]` is in the whole input.
    private var origin: Int64 = 0
    /// What came before `buffer[0]`, for the places of syntax errors.
    private var dropped = DroppedText()
    private let progress: ProgressSink
    private var sink: JSONStreamSink
    private let flat: Bool
    /// The flat value being read (its storage kept from one value to the next).
    private var flatValue = FlatValue()
    /// Where the stream is written: keys in messages are shown below it.
    public private(set) var base: Path
    private var keys: [String] = []
    /// The first problem with the data, kept while the rest is read for syntax errors.
    private var failure: RTDBError? = nil

    /// `window` bytes of the input are held at once.
    public init(source: ByteSource, sink: JSONStreamSink, base: Path, window: Int = JSONStreamReader.defaultWindow,
                progress: ProgressSink = Progress.none) {
        self.source = source
        self.sink = sink
        flat = sink.takesFlatValues
        self.base = base
        capacity = max(window, 16)
        wholeLimit = capacity
        buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        borrowed = false
        self.progress = progress
    }

    /// Reads a document already in memory in place, without copying it: values whose text is
    /// longer than `wholeLimit` bytes are walked. `bytes` must outlive the reader.
    public init(borrowing bytes: UnsafeBufferPointer<UInt8>, sink: JSONStreamSink, base: Path, wholeLimit: Int,
                progress: ProgressSink = Progress.none) {
        source = nil
        self.sink = sink
        flat = sink.takesFlatValues
        self.base = base
        if let start = bytes.baseAddress {
            buffer = UnsafeMutablePointer(mutating: start)
            borrowed = true
        } else {
            buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)   // no bytes: nothing to borrow
            borrowed = false
        }
        capacity = bytes.count
        end = bytes.count
        eof = true
        self.wholeLimit = max(wholeLimit, 16)
        self.progress = progress
    }

    deinit { if !borrowed { buffer.deallocate() } }

    /// The bytes read so far.
    public var bytesRead: Int64 { origin + Int64(end) }

    /// Reads one JSON value, the whole input, and gives it to the sink for the base path.
    public func readValue() throws {
        try skipSpace()
        try child(depth: 0, fresh: true)
        try finishInput()
    }

    /// Reads a JSON object whose keys are relative paths (a multi-path update): each entry's
    /// value is given to the sink below the path `beginEntry` returns. Values are read with
    /// their nulls (a null entry deletes). A text that is not an object is read for syntax
    /// errors, then refused.
    public func readEntries() throws {
        try skipSpace()
        guard try peek() == UInt8(ascii: "{") else {
            failure = RTDBError(.invalidData, "update needs a JSON object of relative paths")
            try child(depth: 0, fresh: true)
            try finishInput()
            return
        }
        i += 1
        if try !closesAtOnce(UInt8(ascii: "}")) {
            repeat {
                let key = try memberKey()
                let saved = base
                try deliver { base = try sink.beginEntry(key) }
                try child(depth: 1, fresh: true)
                try deliver { try sink.endEntry() }
                base = saved
            } while try anotherMember(before: UInt8(ascii: "}"))
        }
        try finishInput()
    }

    // MARK: the window

    /// Moves what is left to the front of the window and fills the rest from the source.
    private func refill() throws {
        guard !eof, let source else { return }
        if i > 0 {
            let left = end - i
            dropped.drop(UnsafePointer(buffer), count: i, origin: origin)
            if left > 0 { memmove(buffer, buffer + i, left) }
            origin += Int64(i)
            end = left
            i = 0
        }
        while end < capacity {
            let n = try source.read(into: buffer + end, count: capacity - end)
            if n == 0 { eof = true; break }
            end += n
        }
        try progress.update(done: bytesRead)
    }

    /// The byte at the reading position (0 at the end of the input).
    private func peek() throws -> UInt8 {
        if i == end { try refill() }
        return i < end ? buffer[i] : 0
    }

    private func skipSpace() throws {
        while true {
            if i == end {
                try refill()
                if i == end { return }
            }
            let c = buffer[i]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 } else { return }
        }
    }

    private func fail(_ what: String) -> RTDBError {
        JSONSyntaxError.make(what, text: UnsafePointer(buffer), count: end, index: i, textOrigin: origin,
                             linesBefore: dropped.lines, commaBefore: dropped.comma)
    }

    /// After an opening `{` or `[`: whether `close` follows at once (then it is read).
    private func closesAtOnce(_ close: UInt8) throws -> Bool {
        try skipSpace()
        guard try peek() == close else { return false }
        i += 1
        return true
    }

    /// An object member's key and the `:` after it, leaving the reading position at its value.
    private func memberKey() throws -> String {
        try skipSpace()
        guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a string key") }
        let key = try string()
        try skipSpace()
        guard try peek() == UInt8(ascii: ":") else { throw fail("expected ':'") }
        i += 1
        try skipSpace()
        return key
    }

    /// After a member or an element: true at a `,` (another follows), false at `close` (the
    /// end); either is read. Anything else is a syntax error.
    private func anotherMember(before close: UInt8) throws -> Bool {
        try skipSpace()
        let c = try peek()
        if c == UInt8(ascii: ",") { i += 1; return true }
        if c == close { i += 1; return false }
        throw fail("expected ',' or '\(Character(Unicode.Scalar(close)))'")
    }

    private func finishInput() throws {
        try skipSpace()
        if i != end { throw fail("unexpected text after the JSON value") }
        if let failure { throw failure }
    }

    /// Runs a step that hands data to the sink or checks it; a problem with the data is kept
    /// (and the sink no longer called) until the input has been read for syntax errors.
    private func deliver(_ body: () throws -> Void) throws {
        guard failure == nil else { return }
        do {
            try body()
        } catch let e as RTDBError where JSONStreamReader.isDataProblem(e.code) {
            failure = e
        }
    }

    static func isDataProblem(_ code: RTDBError.Code) -> Bool {
        switch code {
        case .invalidKey, .invalidData, .tooDeep, .tooLarge, .invalidPath: return true
        default: return false
        }
    }

    /// Reads with `JSONReader` from the reading position: the result when the text it needs is
    /// in the window (refilled once when it might not be), nil when it is larger than the
    /// window (or longer than `limit`). A value is taken only when a byte follows it (or the
    /// input ends): a number at the window's end might go on.
    private func whole<T>(limit: Int? = nil, _ read: (inout JSONReader) throws -> T) throws -> T? {
        let limit = limit ?? wholeLimit
        var refilled = false
        while true {
            let count = min(end - i, limit)
            // The text given to the reader ends where the input does.
            let complete = eof && count == end - i
            var r = JSONReader(UnsafeBufferPointer(start: buffer + i, count: count))
            r.origin = origin + Int64(i)
            r.window = UnsafePointer(buffer)
            r.linesBeforeWindow = dropped.lines
            r.commaBeforeWindow = dropped.comma
            do {
                let v = try read(&r)
                if r.i < r.end || complete {
                    i += r.i
                    return v
                }
            } catch let e as RTDBError {
                // Only a problem near the window's end may be the window's doing.
                if complete || r.i + 8 < r.end { throw e }
            }
            // The value is cut by the window's end (or the limit): once the window holds all
            // it can from here, it is larger than the window.
            if complete || refilled || count == limit { return nil }
            try refill()
            refilled = true
        }
    }

    private func string() throws -> String {
        guard let s = try whole(limit: capacity, { try $0.string() }) else {
            throw RTDBError(.tooLarge, "a key or string at \(Limits.show(base.keys + keys)) is longer than \(capacity) bytes")
        }
        return s
    }

    // MARK: values

    /// The value at the reading position for the node at `keys`: whole when it fits, walked
    /// when it is a large object or array.
    private func child(depth: Int, fresh: Bool, ownPriority: Bool = true) throws {
        if try longerThanWholeLimit() {
            try walk(depth: depth, fresh: fresh, ownPriority: ownPriority)
            return
        }
        // A value read for a `.priority` path is a priority, and a `.value`'s has its priority
        // dropped: both stay on the ordinary path.
        if flat && ownPriority && !base.isPriority {
            switch try wholeFlat(depth: depth) {
            case .read:
                try deliver { try sink.value(flat: flatValue, at: keys, fresh: fresh) }
                return
            case .tooLarge:
                // The tokens of most of a window are not kept for the rest of the import.
                flatValue = FlatValue()
                try walk(depth: depth, fresh: fresh, ownPriority: ownPriority)
                return
            case .notFlat:
                break
            }
        }
        if let v = try whole({ try $0.value(depth: depth) }) {
            try deliver { try sink.value(ownPriority ? v : v.unprioritized, at: keys, fresh: fresh) }
            return
        }
        try walk(depth: depth, fresh: fresh, ownPriority: ownPriority)
    }

    /// Whether the value at the reading position is an object or array whose text is longer
    /// than `wholeLimit` for certain (`BracketScan`): it is walked at once, rather than read as
    /// far as the window goes first, which costs a parse of most of a window (twice when the
    /// value starts late in it). False when the scan cannot tell: the readers decide.
    private func longerThanWholeLimit() throws -> Bool {
        let c = try peek()
        guard c == UInt8(ascii: "{") || c == UInt8(ascii: "[") else { return false }
        var refilled = false
        while true {
            let count = min(end - i, wholeLimit)
            if BracketScan.closes(within: UnsafeBufferPointer(start: buffer + i, count: count)) { return false }
            if count == wholeLimit { return true }
            if eof || refilled { return false }
            try refill()
            refilled = true
        }
    }

    private enum FlatRead { case read, tooLarge, notFlat }

    /// Reads the value at the reading position into `flatValue` when it fits in the window and
    /// is flat. Not flat, or invalid (the error is left for `JSONReader` to report from the same
    /// text), reads nothing.
    private func wholeFlat(depth: Int) throws -> FlatRead {
        let room = Limits.maxDepth - base.keys.count - keys.count
        do {
            return try whole({ try $0.flatValue(into: &flatValue, depth: depth, room: room) }) == nil ? .tooLarge : .read
        } catch is JSONReader.NotFlat {
            return .notFlat
        } catch let e as RTDBError where e.code == .invalidJSON || JSONStreamReader.isDataProblem(e.code) {
            return .notFlat
        }
    }

    /// The value at the reading position is larger than the window: walks a large object or
    /// array, refuses anything else.
    private func walk(depth: Int, fresh: Bool, ownPriority: Bool) throws {
        switch try peek() {
        case UInt8(ascii: "{"): try object(depth: depth + 1, fresh: fresh, ownPriority: ownPriority)
        case UInt8(ascii: "["): try array(depth: depth + 1, fresh: fresh)
        case UInt8(ascii: "\""):
            // A string is read whole up to the window, however low the limit for other values.
            if capacity > wholeLimit, let v = try whole(limit: capacity, { try $0.value(depth: depth) }) {
                try deliver { try sink.value(v, at: keys, fresh: fresh) }
                return
            }
            throw RTDBError(.tooLarge, "string at \(Limits.show(base.keys + keys)) is longer than \(capacity) bytes; the limit is \(Limits.maxStringBytes)")
        default:
            throw fail("number longer than \(capacity) bytes")
        }
    }

    private func object(depth: Int, fresh: Bool, ownPriority: Bool) throws {
        if depth > JSONReader.maxNesting { throw RTDBError(.tooDeep, "JSON nested more than \(JSONReader.maxNesting) levels") }
        i += 1
        try deliver { try sink.beginObject(at: keys, fresh: fresh) }
        var lastKey: String? = nil
        var sawValue = false
        var plain = false
        var priority: Node? = nil
        if try !closesAtOnce(UInt8(ascii: "}")) {
            repeat {
                let key = try memberKey()
                if key == ".priority" {
                    guard let v = try whole({ try $0.value(depth: depth) }) else {
                        throw RTDBError(.invalidData, "a \".priority\" must be a string, a number or null")
                    }
                    switch v {
                    case .null, .int, .double, .string: priority = v
                    case .object where ServerValues.isPlaceholder(v): priority = v
                    default: throw RTDBError(.invalidData, "a \".priority\" must be a string, a number or null")
                    }
                } else if key == ".value" {
                    if plain { throw JSONStreamReader.valueWithChildren }
                    let first = !sawValue
                    sawValue = true
                    // Only the outer priority counts, as in `JSONReader`.
                    try child(depth: depth, fresh: fresh && first, ownPriority: false)
                } else {
                    if sawValue { throw JSONStreamReader.valueWithChildren }
                    if key == ".sv" && !plain && priority == nil {
                        switch try serverValue(depth: depth, fresh: fresh) {
                        case .placeholder: return
                        case .notPlaceholder:
                            // Its value is read; what follows is the object's next member.
                            plain = true
                            continue
                        case .tooLarge: break
                        }
                    }
                    plain = true
                    try deliver {
                        if key == ".sv" {
                            throw RTDBError(.invalidData, "server value at \(Limits.show(base.keys + keys)) has other keys beside \".sv\"")
                        }
                        if let problem = Limits.keyProblem(key) {
                            throw RTDBError(.invalidKey, "invalid key at \(Limits.show(base.keys + keys)): \(problem)")
                        }
                        if base.keys.count + keys.count + 1 > Limits.maxDepth { throw Limits.tooDeep(base.keys + keys + [key]) }
                    }
                    let isNew = lastKey.map { KeyOrder.compare($0, key) < 0 } ?? true
                    if isNew { lastKey = key }
                    keys.append(key)
                    try child(depth: depth, fresh: isNew)
                    keys.removeLast()
                }
            } while try anotherMember(before: UInt8(ascii: "}"))
        }
        if let p = priority, failure == nil {
            try deliver { try Limits.validatePriority(p, path: base.keys + keys) }
        }
        try deliver { try sink.endObject(at: keys, priority: ownPriority ? priority : nil) }
    }

    /// After the first key of an object, `.sv`: when its value is followed by the object's
    /// end, the object is a server value (spread over more text than the window holds) and is
    /// given whole.
    private func serverValue(depth: Int, fresh: Bool) throws -> ServerValueRead {
        guard let v = try whole({ try $0.value(depth: depth) }) else { return .tooLarge }
        try skipSpace()
        guard try peek() == UInt8(ascii: "}") else {
            let parent = base.keys + keys
            try deliver { throw RTDBError(.invalidData, "server value at \(Limits.show(parent)) has other keys beside \".sv\"") }
            return .notPlaceholder
        }
        i += 1
        try deliver { try sink.value(.object([Node.Entry(".sv", v)]), at: keys, fresh: fresh) }
        return .placeholder
    }

    private enum ServerValueRead {
        /// The object was a server value, given to the sink.
        case placeholder
        /// The value was read, and other keys follow.
        case notPlaceholder
        /// The value is larger than the window, and still to be read.
        case tooLarge
    }

    private func array(depth: Int, fresh: Bool) throws {
        if depth > JSONReader.maxNesting { throw RTDBError(.tooDeep, "JSON nested more than \(JSONReader.maxNesting) levels") }
        i += 1
        try deliver { try sink.beginObject(at: keys, fresh: fresh) }
        var index = 0
        if try !closesAtOnce(UInt8(ascii: "]")) {
            repeat {
                try skipSpace()
                try deliver {
                    if base.keys.count + keys.count + 1 > Limits.maxDepth { throw Limits.tooDeep(base.keys + keys + [String(index)]) }
                }
                keys.append(String(index))
                try child(depth: depth, fresh: true)
                keys.removeLast()
                index += 1
            } while try anotherMember(before: UInt8(ascii: "]"))
        }
        try deliver { try sink.endObject(at: keys, priority: nil) }
    }

    static let valueWithChildren = RTDBError(.invalidData, "an object with \".value\" cannot have other children")
}
