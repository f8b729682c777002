#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The statements `LeafRows` writes rows with, and the connection they belong to. Not
/// copyable: whoever holds the one value (the caller, or `RowWriter`'s thread between `hand`
/// and `wait`) is the only one writing rows, and moving it to another thread moves the
/// connection's owner with it (`moveOwner`).
struct RowStatements: ~Copyable {
    let one: Statement
    private var manyStatement: Statement?
    private var priorityStatement: Statement?
    private let connection: Connection

    /// `all`: every statement is prepared now, so that a writer thread never touches the
    /// connection's cache of statements.
    init(_ c: Connection, all: Bool) throws {
        // (Prepared first: a value that cannot be copied is initialized all at once.)
        let one = try c.statement("INSERT INTO data(path, v) VALUES(?1, ?2)")
        let many = all ? try c.statement(LeafRows.manySQL) : nil
        let priority = all ? try c.statement(LeafRows.prioritySQL) : nil
        connection = c
        self.one = one
        manyStatement = many
        priorityStatement = priority
    }

    mutating func many() throws -> Statement {
        if let manyStatement { return manyStatement }
        let s = try connection.statement(LeafRows.manySQL)
        manyStatement = s
        return s
    }

    mutating func priority() throws -> Statement {
        if let priorityStatement { return priorityStatement }
        let s = try connection.statement(LeafRows.prioritySQL)
        priorityStatement = s
        return s
    }

    /// The connection now belongs to `thread` (the one these statements go to).
    mutating func moveOwner(to thread: pthread_t) {
        connection.owner = thread
    }
}
