#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lines and columns as a person counts them in an editor: lines from 1, a new one after each
/// "\n"; columns from 1 in characters (UTF-8 continuation bytes do not start one). Byte offsets
/// alone are no help in a hand-written file, so a syntax error names both.
public struct TextLines: Sendable, Equatable {
    /// "\n" bytes passed.
    public private(set) var newlines: Int64 = 0
    /// Characters passed since the last "\n".
    public private(set) var charactersIntoLine: Int64 = 0

    public init() {}

    /// Counts `count` bytes from `start` as passed (a streamed reader, before it drops them).
    public mutating func pass(_ start: UnsafePointer<UInt8>, count: Int) {
        guard count > 0 else { return }
        let end = start + count
        var lineStart = start
        // memchr finds the newlines; only the last line's characters need counting.
        while lineStart < end, let found = memchr(lineStart, 0x0A, end - lineStart) {
            newlines += 1
            lineStart = UnsafePointer(found.assumingMemoryBound(to: UInt8.self)) + 1
            charactersIntoLine = 0
        }
        var p = lineStart
        var characters: Int64 = 0
        while p < end {
            if p.pointee & 0xC0 != 0x80 { characters += 1 }
            p += 1
        }
        charactersIntoLine += characters
    }

    /// The 1-based line and column of the byte just after `count` bytes from `start`.
    public func place(after start: UnsafePointer<UInt8>?, count: Int) -> (line: Int64, column: Int64) {
        var lines = self
        if let start { lines.pass(start, count: count) }
        return (lines.newlines + 1, lines.charactersIntoLine + 1)
    }
}

/// A comma a streamed reader has already let go of with its window, kept with its place in
/// case the next byte it reads turns out to be a closing bracket.
struct CommaBefore: Sendable {
    let offset: Int64
    let line: Int64
    let column: Int64
}

/// What a streamed reader knows of the text its window has let go of: its lines, and the comma
/// it ended with when only white space followed (a trailing comma is named wherever the window's
/// edge falls).
struct DroppedText: Sendable {
    private(set) var lines = TextLines()
    private(set) var comma: CommaBefore? = nil

    /// Counts `count` bytes from `start`, which start at `origin` in the input, as let go of.
    mutating func drop(_ start: UnsafePointer<UInt8>, count: Int, origin: Int64) {
        let ending = JSONSyntaxError.endingComma(start, count: count)
        if let at = ending.comma {
            lines.pass(start, count: at)
            comma = CommaBefore(offset: origin + Int64(at), line: lines.newlines + 1, column: lines.charactersIntoLine + 1)
            lines.pass(start + at, count: count - at)
        } else {
            if !ending.allSpace { comma = nil }
            lines.pass(start, count: count)
        }
    }
}

/// The one way a JSON reader words a syntax error: byte offset, line and column, what was
/// expected. A closing bracket found where a key or value should follow a comma is named for
/// what it almost always is, a trailing comma (which JSON does not allow), and the error then
/// points at the comma.
enum JSONSyntaxError {
    /// `text` holds the reader's bytes from `textOrigin` (an offset in the whole input) on, with
    /// `linesBefore` counted before it; the problem is at `text[index]`. `commaBefore` is the
    /// comma just before `text` when the bytes between it and `text` were all white space.
    static func make(_ what: String, text: UnsafePointer<UInt8>?, count: Int, index: Int,
                     textOrigin: Int64, linesBefore: TextLines, commaBefore: CommaBefore? = nil) -> RTDBError {
        if let text, index < count, text[index] == UInt8(ascii: "}") || text[index] == UInt8(ascii: "]") {
            let trailing = "a trailing comma before '\(Character(Unicode.Scalar(text[index])))' (JSON allows none)"
            var j = index - 1
            while j >= 0, isSpace(text[j]) { j -= 1 }
            if j >= 0, text[j] == UInt8(ascii: ",") {
                return error(trailing, offset: textOrigin + Int64(j), place: linesBefore.place(after: text, count: j))
            }
            if j < 0, let comma = commaBefore {
                return error(trailing, offset: comma.offset, place: (comma.line, comma.column))
            }
        }
        return error(what, offset: textOrigin + Int64(index), place: linesBefore.place(after: text, count: index))
    }

    /// Where the comma that ends the `count` bytes from `start` is (white space after it
    /// allowed); `allSpace` when there is nothing but white space.
    static func endingComma(_ start: UnsafePointer<UInt8>, count: Int) -> (comma: Int?, allSpace: Bool) {
        var j = count - 1
        while j >= 0, isSpace(start[j]) { j -= 1 }
        if j < 0 { return (nil, true) }
        return (start[j] == UInt8(ascii: ",") ? j : nil, false)
    }

    @inline(__always) static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    private static func error(_ what: String, offset: Int64, place: (line: Int64, column: Int64)) -> RTDBError {
        RTDBError(.invalidJSON, "invalid JSON at byte \(offset) (line \(place.line), column \(place.column)): \(what)")
    }
}
