import CSQLite
import RTDBCore

/// Buffers leaf rows and inserts them `batch` at a time with one multi-row statement, which
/// saves most of the per-statement work when a large value is written. A row is held as bytes
/// (its path, then a string value's text) and a small value, never as a `Node`: a streamed
/// import hands its leaves over as bytes (`FlatValue`), and SQLite reads them in place.
///
/// With `background`, full buffers are written by a thread of their own (`RowWriter`) while
/// the caller reads on: a streamed import parses its input and SQLite stores the rows on two
/// cores. Priorities wait in the buffer too. The statements (`RowStatements`, not copyable) and
/// the connection are then the writer's until `flush`, which waits for it, takes them back and
/// writes the rest; the caller must not use the connection in between (debug builds check the
/// connection's owning thread where statements run), and must `stop` the writer before giving
/// up the write.
final class LeafRows {
    static let batch = 64
    /// The rows handed to the writer thread at once (whole statements of `batch` rows).
    static let handoff = 16 * batch
    /// The multi-row statement's text, made once: most writes (a few leaves) never use it, and
    /// building and hashing it for each one cost more than their own rows.
    static let manySQL = "INSERT INTO data(path, v) VALUES "
        + Array(repeating: "(?,?)", count: LeafRows.batch).joined(separator: ",")
    static let prioritySQL = "INSERT OR REPLACE INTO priorities(path, p) VALUES(?1, ?2)"

    enum Value {
        case int(Int64)
        case double(Double)
        case bool(Bool)
        /// The text is the row's bytes after its path.
        case text
        case null
    }

    struct Row {
        /// Where the row's path starts and ends in `bytes`.
        var start: Int
        var pathEnd: Int
        /// Where the row (path and text) ends in `bytes`.
        var end: Int
        var value: Value
    }

    /// Rows waiting to be written: leaves (`rows`) and, in the background, priorities, their
    /// bytes one after the other in `bytes`.
    struct Buffer {
        var bytes: [UInt8] = []
        var rows: [Row] = []
        /// Priorities, in the order given (a later one for the same node wins).
        var priorities: [Row] = []

        mutating func clear() {
            bytes.removeAll(keepingCapacity: true)
            rows.removeAll(keepingCapacity: true)
            priorities.removeAll(keepingCapacity: true)
        }
    }

    /// The rows' statements while this thread holds them; nil while they are lent to the
    /// writer thread (from its `hand` until `wait` or `stop`).
    private var statements: RowStatements?
    private var buffer = Buffer()
    private let writer: RowWriter?
    private let connection: Connection

    init(_ c: Connection, background: Bool = false) throws {
        connection = c
        statements = try RowStatements(c, all: background)
        writer = background ? RowWriter() : nil
    }

    deinit { writer?.stop(returningTo: &statements) }

    /// Runs `body` with the statements, which this thread must hold (not lent).
    private func withStatements<T>(_ body: (inout RowStatements) throws -> T) throws -> T {
        guard var s = statements.take() else { throw RTDBError(.internal, "rows written while their statements are lent") }
        do {
            let result = try body(&s)
            statements = .some(s)
            return result
        } catch {
            statements = .some(s)
            throw error
        }
    }

    func add(_ path: [UInt8], _ value: Node) throws {
        // Null and objects are not leaves: nothing is stored for them.
        try LeafRows.withRow(value) { row, text in if let row { try add(path, row, text: text) } }
    }

    /// A scalar node (priority looked through) as a row's value and, for a string, its bytes,
    /// handed to `body`; nil for null and objects.
    private static func withRow(_ node: Node, _ body: (Value?, UnsafeBufferPointer<UInt8>?) throws -> Void) rethrows {
        switch node {
        case .int(let v): try body(.int(v), nil)
        case .double(let v): try body(.double(v), nil)
        case .bool(let v): try body(.bool(v), nil)
        case .string(var s): try s.withUTF8 { try body(.text, $0) }
        case .prioritized(let base, _): try withRow(base, body)
        case .null, .object: try body(nil, nil)
        }
    }

    /// Adds the leaf `scalar` of a flat value whose keys and strings are `flatBytes`.
    func add(_ path: [UInt8], _ scalar: FlatValue.Scalar, _ flatBytes: UnsafeBufferPointer<UInt8>) throws {
        let (value, text) = LeafRows.row(scalar, flatBytes)
        try add(path, value, text: text)
    }

    /// A flat value's scalar as a row's value and, for a string, its bytes in `flatBytes`.
    private static func row(_ scalar: FlatValue.Scalar, _ flatBytes: UnsafeBufferPointer<UInt8>)
        -> (Value, UnsafeBufferPointer<UInt8>?) {
        switch scalar {
        case .int(let v): return (.int(v), nil)
        case .double(let v): return (.double(v), nil)
        case .bool(let v): return (.bool(v), nil)
        case .string(let r): return (.text, UnsafeBufferPointer(rebasing: flatBytes[Int(r.lowerBound)..<Int(r.upperBound)]))
        }
    }

    private func add(_ path: [UInt8], _ value: Value, text: UnsafeBufferPointer<UInt8>?) throws {
        buffer.rows.append(LeafRows.append(path, text, value, to: &buffer.bytes))
        if let writer {
            if buffer.rows.count == LeafRows.handoff { buffer = try writer.hand(buffer, lending: statements.take()) }
        } else if buffer.rows.count == LeafRows.batch {
            try withStatements { try LeafRows.writeAll(&buffer, &$0) }
        }
    }

    private static func append(_ path: [UInt8], _ text: UnsafeBufferPointer<UInt8>?, _ value: Value,
                               to bytes: inout [UInt8]) -> Row {
        let start = bytes.count
        bytes.append(contentsOf: path)
        let pathEnd = bytes.count
        if let text { bytes.append(contentsOf: text) }
        return Row(start: start, pathEnd: pathEnd, end: bytes.count, value: value)
    }

    /// Stores the priority of the node at `path` (at once, unless rows are written in the
    /// background: priorities are rare, and there they wait with the rows).
    func addPriority(_ path: [UInt8], _ priority: Node) throws {
        try LeafRows.withRow(priority) { row, text in try addPriority(path, row ?? .null, text: text) }
    }

    /// `addPriority` for the priority `scalar` of a flat value whose strings are `flatBytes`.
    func addPriority(_ path: [UInt8], _ scalar: FlatValue.Scalar, _ flatBytes: UnsafeBufferPointer<UInt8>) throws {
        let (value, text) = LeafRows.row(scalar, flatBytes)
        try addPriority(path, value, text: text)
    }

    private func addPriority(_ path: [UInt8], _ value: Value, text: UnsafeBufferPointer<UInt8>?) throws {
        // (On the caller's thread: the writer thread never looks at the facts.)
        connection.facts.priorities = .present
        if writer != nil {
            buffer.priorities.append(LeafRows.append(path, text, value, to: &buffer.bytes))
            return
        }
        var one = Buffer()
        one.priorities.append(LeafRows.append(path, text, value, to: &one.bytes))
        try withStatements { try LeafRows.writePriorities(one, $0.priority()) }
    }

    /// Writes the rows still buffered (call once at the end, and before anything else uses
    /// the connection). With a writer thread, waits for it first.
    func flush() throws {
        try writer?.wait(returningTo: &statements)
        try withStatements { try LeafRows.writeAll(&buffer, &$0) }
    }

    /// Ends the writer thread, if there is one (waiting for what it is writing); what is still
    /// buffered is dropped. The connection is the caller's again.
    func stop() { writer?.stop(returningTo: &statements) }

    /// Writes everything in `buffer`, rows then priorities, and empties it (what `flush` and
    /// the writer thread do).
    static func writeAll(_ buffer: inout Buffer, _ statements: inout RowStatements) throws {
        var next = 0
        while buffer.rows.count - next >= batch {
            try write(buffer, from: next, count: batch, statements.many())
            next += batch
        }
        while next < buffer.rows.count {
            try write(buffer, from: next, count: 1, statements.one)
            next += 1
        }
        if !buffer.priorities.isEmpty { try writePriorities(buffer, statements.priority()) }
        buffer.clear()
    }

    /// Binds `count` buffered rows from `first` to `s` (which has `count` pairs of parameters)
    /// and runs it. SQLite reads the bytes in place: they stay put until the statement has run.
    private static func write(_ buffer: Buffer, from first: Int, count: Int, _ s: Statement) throws {
        try buffer.bytes.withUnsafeBufferPointer { all in
            for i in 0..<count {
                bind(s, Int32(2 * i + 1), buffer.rows[first + i], all)
            }
            defer { sqlite3_reset(s.handle) }
            _ = try s.step()
        }
    }

    /// Writes the buffered priorities, one statement each.
    private static func writePriorities(_ buffer: Buffer, _ s: Statement) throws {
        try buffer.bytes.withUnsafeBufferPointer { all in
            for row in buffer.priorities {
                bind(s, 1, row, all)
                defer { sqlite3_reset(s.handle) }
                _ = try s.step()
            }
        }
    }

    /// Binds a row's path to parameter `column` and its value to the next.
    private static func bind(_ s: Statement, _ column: Int32, _ row: Row, _ all: UnsafeBufferPointer<UInt8>) {
        let path = UnsafeBufferPointer(rebasing: all[row.start..<row.pathEnd])
        sqlite3_bind_blob(s.handle, column, UnsafeRawPointer(textPointer(path)), Int32(path.count), nil)
        switch row.value {
        case .int(let v): sqlite3_bind_int64(s.handle, column + 1, v)
        case .double(let v): sqlite3_bind_double(s.handle, column + 1, v)
        case .bool(let v): EmbeddedDatabase.bind(s, column + 1, .bool(v))
        case .null: sqlite3_bind_null(s.handle, column + 1)
        case .text:
            let text = UnsafeBufferPointer(rebasing: all[row.pathEnd..<row.end])
            sqlite3_bind_text(s.handle, column + 1, textPointer(text), Int32(text.count), nil)
        }
    }
}
