import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thrown when stdout has been closed by its reader; the command ends quietly with status 0.
struct OutputClosed: Error {}

/// Thrown when a write has committed but its result could not be printed (stdout on a full
/// disk, or not open at all; a reader that went away is `OutputClosed`, a quiet success): the error line says `"committed":true` and names the path, and the
/// exit status is its own, so a script does not take the write for a failed one and repeat it.
struct CommittedNotPrinted: Error {
    static let exitStatus: Int32 = 9
    let path: String
    let cause: RTDBError

    var message: String { "the write at \(path) committed, but its result could not be printed: \(cause.message)" }
}

/// A field of a printed record, written in the given order (records are envelopes such as
/// `{"path":…,"value":…}`, not data, so their field order is fixed by the contract).
enum Field {
    case node(Node)
    /// An object whose members print in this order (a query's), not key order.
    case members([Node.Entry])
    case string(String)
    case bool(Bool)
    case int(Int)
    case null
}

/// stdout: JSON lines, data only. Buffered; `flush()` after each line for streams.
final class Output {
    let pretty: Bool
    let quiet: Bool
    let streaming: Bool
    /// Set once the write this output reports has committed (the path it wrote): a failure to
    /// print is then `CommittedNotPrinted`, not a plain `io_error`.
    var committed: Path? = nil
    private var buffer: [UInt8] = []
    private let fd: Int32

    init(pretty: Bool, quiet: Bool, streaming: Bool = false, fd: Int32 = 1) {
        self.pretty = pretty
        self.quiet = quiet
        self.streaming = streaming
        self.fd = fd
        buffer.reserveCapacity(1 << 16)
    }

    /// Prints one value as a line (with its priorities in the export form when `export`).
    func value(_ node: Node, export: Bool = false) throws {
        if quiet { return }
        JSONWriter(pretty: pretty, export: export).write(node, into: &buffer)
        try endLine()
    }

    /// Prints one value as a line, a string as its bare text (`--raw`, like `jq -r`): the
    /// text's own newlines are kept, so only other values are sure to take one line.
    func rawValue(_ node: Node) throws {
        try rawValue(.node(node))
    }

    /// As `rawValue(_:)` for a value given as a record's field (`.node` or `.members`).
    func rawValue(_ field: Field) throws {
        if quiet { return }
        Output.appendRaw(field, pretty: pretty, to: &buffer)
        try endLine()
    }

    static func appendRaw(_ node: Node, pretty: Bool, to buffer: inout [UInt8]) {
        appendRaw(.node(node), pretty: pretty, to: &buffer)
    }

    static func appendRaw(_ field: Field, pretty: Bool, to buffer: inout [UInt8]) {
        switch field {
        // A priority is not part of the value printed: a prioritised string is text too.
        case .node(let node):
            if case .string(let s) = node.unprioritized {
                buffer.append(contentsOf: s.utf8)
            } else {
                JSONWriter(pretty: pretty).write(node, into: &buffer)
            }
        case .members(let list): JSONWriter(pretty: pretty).write(members: list, into: &buffer)
        case .string(let s): buffer.append(contentsOf: s.utf8)
        case .bool(let b): buffer.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let n): buffer.append(contentsOf: String(n).utf8)
        case .null: buffer.append(contentsOf: "null".utf8)
        }
    }

    /// Prints one record as a line.
    func record(_ fields: [(String, Field)]) throws {
        if quiet { return }
        try render(fields, into: &buffer)
        try endLine()
    }

    /// Renders one record (without the line end) into `buffer`.
    func render(_ fields: [(String, Field)], into buffer: inout [UInt8]) throws {
        let writer = JSONWriter(pretty: pretty)
        buffer.append(UInt8(ascii: "{"))
        for (i, (name, field)) in fields.enumerated() {
            appendFieldName(name, first: i == 0, into: &buffer)
            switch field {
            case .node(let n):
                if pretty {
                    var inner: [UInt8] = []
                    writer.write(n, into: &inner)
                    buffer += Output.indented(inner, levels: 1)
                } else {
                    writer.write(n, into: &buffer)
                }
            case .members(let list):
                writer.write(members: list, into: &buffer, level: 1)
            case .string(let s): JSONWriter.appendString(s, to: &buffer)
            case .bool(let b): buffer.append(contentsOf: (b ? "true" : "false").utf8)
            case .int(let n): buffer.append(contentsOf: String(n).utf8)
            case .null: buffer.append(contentsOf: "null".utf8)
            }
        }
        if pretty { buffer.append(0x0A) }
        buffer.append(UInt8(ascii: "}"))
    }

    /// A record's field name as `render` lays it out: a comma before all but the first, a line
    /// break and indent when pretty, the quoted name and its colon.
    func appendFieldName(_ name: String, first: Bool, into buffer: inout [UInt8]) {
        if !first { buffer.append(UInt8(ascii: ",")) }
        if pretty { buffer.append(contentsOf: "\n  ".utf8) }
        JSONWriter.appendString(name, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        if pretty { buffer.append(0x20) }
    }

    /// Pretty JSON text nested `levels` deeper: two spaces after each line break (strings never
    /// hold a raw one, so each is a line of the layout).
    static func indented(_ text: [UInt8], levels: Int) -> [UInt8] {
        let shift = Array(repeating: UInt8(0x20), count: 2 * levels)
        var out: [UInt8] = []
        out.reserveCapacity(text.count + text.count / 8)
        for b in text {
            out.append(b)
            if b == 0x0A { out += shift }
        }
        return out
    }

    /// Appends text as it is (help output, a value streamed in pieces).
    func rawBytes(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
    }

    /// Writes out what is buffered once it is large (between the pieces of a streamed value).
    func flushIfLarge() throws {
        if buffer.count >= 1 << 16 { try flush() }
    }

    private func endLine() throws {
        buffer.append(0x0A)
        if streaming || buffer.count >= 1 << 16 { try flush() }
    }

    func flush() throws {
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { raw in
                write(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                buffer.removeAll(keepingCapacity: true)
                if errno == EPIPE { throw OutputClosed() }
                let error = RTDBError(.ioError, "cannot write to stdout: \(String(cString: strerror(errno)))")
                if let committed { throw CommittedNotPrinted(path: committed.description, cause: error) }
                throw error
            }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// stderr: one JSON error line when it is not a terminal, a sentence when it is.
enum Diagnostics {
    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// `committedPath`: the write at that path committed although the command failed.
    static func report(_ error: RTDBError, usage: String? = nil, committedPath: String? = nil) {
        var text: String
        if stderrIsTerminal {
            text = "rtdb: error: \(error.message)\n"
            if let usage, error.code == .usage { text += "usage: \(usage)\n" }
        } else {
            var line: [UInt8] = Array("{\"error\":{\"code\":".utf8)
            JSONWriter.appendString(error.code.rawValue, to: &line)
            line.append(contentsOf: ",\"message\":".utf8)
            JSONWriter.appendString(error.message, to: &line)
            if let committedPath {
                line.append(contentsOf: ",\"committed\":true,\"path\":".utf8)
                JSONWriter.appendString(committedPath, to: &line)
            }
            line.append(contentsOf: "}}\n".utf8)
            text = String(decoding: line, as: UTF8.self)
        }
        writeAll(2, Array(text.utf8))
    }

    /// A remark for a person at a terminal; nothing when stderr is not a terminal (scripts
    /// read stderr for error lines only).
    static func note(_ text: String) {
        guard stderrIsTerminal else { return }
        writeAll(2, Array("rtdb: note: \(text)\n".utf8))
    }

    /// What `-v` says: `rtdb: TEXT` on a terminal, else the JSON line {"verbose":TEXT}, so that
    /// stderr stays JSON lines for a program that reads it.
    static func verbose(_ text: String) {
        if stderrIsTerminal {
            writeAll(2, Array("rtdb: \(text)\n".utf8))
        } else {
            var line = Array(#"{"verbose":"#.utf8)
            JSONWriter.appendString(text, to: &line)
            line += Array("}\n".utf8)
            writeAll(2, line)
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 { if errno == EINTR { continue }; return }
            offset += n
        }
    }
}

extension Output {
    /// Prints the lines of a write, built by the command from `receipt.values`, each followed by
    /// how the write stands: `"resent":true` when it may have been applied
    /// twice; still queued, `"queued":true,"id":N,"reason":R`, and `"estimated":true` when the
    /// values hold estimates of server values, with `"base":"unknown"` when an increment was
    /// added to a number the cache does not hold.
    func report(_ receipt: WriteReceipt, _ lines: [[(String, Field)]]) throws {
        for var fields in lines {
            if let queued = receipt.queued {
                fields += [("queued", .bool(true)), ("id", .int(Int(queued.id))), ("reason", .string(queued.reason.rawValue))]
                if queued.estimated { fields.append(("estimated", .bool(true))) }
                if queued.estimated && queued.baseUnknown { fields.append(("base", .string("unknown"))) }
            } else if receipt.resent {
                fields.append(("resent", .bool(true)))
            }
            try record(fields)
        }
        try flush()
    }
}
