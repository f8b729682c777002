import RTDBCore

/// One JSON value kept as its exact text: what a protocol message carries without the codec
/// having to understand it (a response's `d`, a query object to send back, an `authvar`).
/// Two values are equal when their bytes are. Made from text that was parsed (`validating`,
/// `RawJSON`), or written by `JSONWriter` (`string`, `value`): never from unchecked bytes.
public struct JSONText: Sendable, Equatable, CustomStringConvertible {
    public let bytes: [UInt8]

    init(trusted bytes: [UInt8]) { self.bytes = bytes }

    /// `text` if it is one JSON value; throws the parser's error otherwise.
    public init(validating text: [UInt8]) throws {
        _ = try RawJSON.parse(text)
        bytes = text
    }

    public init(validating text: String) throws { try self.init(validating: Array(text.utf8)) }

    /// The exact source text of `value`, a part of `source`.
    public init(_ value: RawJSON, in source: [UInt8]) { bytes = Array(source[value.range]) }

    /// `value` rebuilt compactly (RawJSON.compactText).
    public init(compacting value: RawJSON) { bytes = value.compactText() }

    /// A JSON string.
    public init(string: String) {
        var out: [UInt8] = []
        JSONWriter.appendString(string, to: &out)
        bytes = out
    }

    /// Database data; `export` keeps priorities and never turns objects into arrays.
    public init(value: Node, export: Bool = true) {
        var out: [UInt8] = []
        JSONWriter(export: export).write(value, into: &out)
        bytes = out
    }

    public static let null = JSONText(trusted: Array("null".utf8))
    public static let emptyString = JSONText(trusted: Array("\"\"".utf8))
    public static let emptyObject = JSONText(trusted: Array("{}".utf8))

    /// The value when it is a JSON string.
    public var string: String? {
        guard bytes.first == UInt8(ascii: "\"") else { return nil }
        return (try? RawJSON.parse(bytes))?.string
    }

    public var isNull: Bool { bytes == JSONText.null.bytes }

    public var description: String { String(decoding: bytes, as: UTF8.self) }
}
