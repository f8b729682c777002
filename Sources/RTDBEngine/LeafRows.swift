import CSQLite
import RTDBCore

/// Buffers leaf rows and inserts them `batch` at a time with one multi-row statement, which
/// saves most of the per-statement work when a large value is written. A row is held as bytes
/// (its path, then a string value's text) and a small value, never as a `Node`: a streamed
/// import hands its leaves over as bytes (`FlatValue`), and SQLite reads them in place.
final class LeafRows {
    static let batch = 64
    /// The multi-row statement's text, made once: most writes (a few leaves) never use it, and
    /// building and hashing it for each one cost more than their own rows.
    private static let manySQL = "INSERT INTO data(path, v) VALUES "
        + Array(repeating: "(?,?)", count: LeafRows.batch).joined(separator: ",")

    private enum Value {
        case int(Int64)
        case double(Double)
        case bool(Bool)
        /// The text is the row's bytes after its path.
        case text
    }

    private struct Row {
        /// Where the row's path ends in `bytes` (it starts where the row before ends).
        var pathEnd: Int
        /// Where the row (path and text) ends in `bytes`.
        var end: Int
        var value: Value
    }

    private let one: Statement
    private var many: Statement? = nil
    private var bytes: [UInt8] = []
    private var rows: [Row] = []

    private let connection: Connection

    init(_ c: Connection) throws {
        connection = c
        one = try c.statement("INSERT INTO data(path, v) VALUES(?1, ?2)")
    }

    func add(_ path: [UInt8], _ value: Node) throws {
        switch value {
        case .int(let v): try add(path, .int(v), text: nil)
        case .double(let v): try add(path, .double(v), text: nil)
        case .bool(let v): try add(path, .bool(v), text: nil)
        case .string(var s): try s.withUTF8 { try add(path, .text, text: $0) }
        case .prioritized(let base, _): try add(path, base)
        case .null, .object: return   // not leaves: nothing is stored for them
        }
    }

    /// Adds the leaf `scalar` of a flat value whose keys and strings are `flatBytes`.
    func add(_ path: [UInt8], _ scalar: FlatValue.Scalar, _ flatBytes: UnsafeBufferPointer<UInt8>) throws {
        switch scalar {
        case .int(let v): try add(path, .int(v), text: nil)
        case .double(let v): try add(path, .double(v), text: nil)
        case .bool(let v): try add(path, .bool(v), text: nil)
        case .string(let r): try add(path, .text, text: UnsafeBufferPointer(rebasing: flatBytes[Int(r.lowerBound)..<Int(r.upperBound)]))
        }
    }

    private func add(_ path: [UInt8], _ value: Value, text: UnsafeBufferPointer<UInt8>?) throws {
        bytes.append(contentsOf: path)
        let pathEnd = bytes.count
        if let text { bytes.append(contentsOf: text) }
        rows.append(Row(pathEnd: pathEnd, end: bytes.count, value: value))
        if rows.count == LeafRows.batch {
            if many == nil { many = try connection.statement(LeafRows.manySQL) }
            if let many { try run(many) }
        }
    }

    /// Stores the priority of the node at `path` (written at once: priorities are rare).
    func addPriority(_ path: [UInt8], _ priority: Node) throws {
        let s = try priorityStatement(path)
        EmbeddedDatabase.bind(s, 2, priority)
        try s.run()
    }

    /// `addPriority` for the priority `scalar` of a flat value whose strings are `flatBytes`.
    func addPriority(_ path: [UInt8], _ scalar: FlatValue.Scalar, _ flatBytes: UnsafeBufferPointer<UInt8>) throws {
        let s = try priorityStatement(path)
        switch scalar {
        case .int(let v): sqlite3_bind_int64(s.handle, 2, v)
        case .double(let v): sqlite3_bind_double(s.handle, 2, v)
        case .bool(let v): EmbeddedDatabase.bind(s, 2, .bool(v))
        case .string(let r): s.bind(2, bytes: UnsafeBufferPointer(rebasing: flatBytes[Int(r.lowerBound)..<Int(r.upperBound)]))
        }
        try s.run()
    }

    private func priorityStatement(_ path: [UInt8]) throws -> Statement {
        let s = try connection.statement("INSERT OR REPLACE INTO priorities(path, p) VALUES(?1, ?2)")
        s.bind(1, blob: path)
        return s
    }

    /// Writes the rows still buffered (call once at the end).
    func flush() throws {
        while !rows.isEmpty {
            try run(one, count: 1)
        }
    }

    /// Binds the first `count` buffered rows (all of them by default) to `s` and runs it.
    /// SQLite reads the bytes in place: they stay put until the statement has run.
    private func run(_ s: Statement, count: Int? = nil) throws {
        let n = count ?? rows.count
        try bytes.withUnsafeBufferPointer { all in
            var start = 0
            for i in 0..<n {
                let row = rows[i]
                let path = UnsafeBufferPointer(rebasing: all[start..<row.pathEnd])
                let column = Int32(2 * i + 2)
                sqlite3_bind_blob(s.handle, column - 1, UnsafeRawPointer(textPointer(path)), Int32(path.count), nil)
                switch row.value {
                case .int(let v): sqlite3_bind_int64(s.handle, column, v)
                case .double(let v): sqlite3_bind_double(s.handle, column, v)
                case .bool(let v): EmbeddedDatabase.bind(s, column, .bool(v))
                case .text:
                    let text = UnsafeBufferPointer(rebasing: all[row.pathEnd..<row.end])
                    sqlite3_bind_text(s.handle, column, textPointer(text), Int32(text.count), nil)
                }
                start = row.end
            }
            defer { sqlite3_reset(s.handle) }
            _ = try s.step()
        }
        let used = rows[n - 1].end
        bytes.removeSubrange(..<used)
        rows.removeSubrange(..<n)
        for i in rows.indices {
            rows[i].pathEnd -= used
            rows[i].end -= used
        }
    }
}
