import CSQLite

/// What a write transaction learned about the file and need not ask again before it ends.
///
/// While a connection holds the write lock no other connection changes the file, so a fact
/// read once stays true until the transaction ends, unless this connection changes it itself:
/// the code that writes the tables a fact is about says so here. A group commit runs many
/// writes in one transaction, and each would otherwise ask again (a statement each).
///
/// `Connection` forgets them whenever a transaction begins, commits or is rolled back, a
/// savepoint included (`exec`/`run` of BEGIN, COMMIT, ROLLBACK, ROLLBACK TO): a rolled-back
/// write never leaves behind a fact it had made false. Facts are used only inside an open
/// transaction (outside one, each statement is a transaction of its own).
///
/// One exception makes a served file's writes cheap: the facts a write transaction committed
/// are kept beside the connection, with SQLite's data version of the file right after the
/// COMMIT, and the next `BEGIN IMMEDIATE` of the connection takes them over when the data
/// version is still that one. SQLite changes it whenever the file changes, by this connection
/// or any other in any process (it is what tells SQLite its own page cache is stale), and it
/// is read once the write lock is held: equal, nothing but this connection's committed
/// transaction has written the file since, so what it knew at its end is still true.
struct TransactionFacts {
    enum Rows { case unknown, empty, present }

    /// The persistent indexes (Indexes.swift), as read in this transaction.
    var indexes: [EmbeddedDatabase.StoredIndex]? = nil
    /// Whether the `priorities` table has rows: `empty` only once seen so, and a priority
    /// written since makes it `present`.
    var priorities = Rows.unknown
    /// What is known of the root's count (RootSize.swift).
    var rootSize = RootSize.unknown
    /// Counts of nodes below the size threshold (KnownCounts.swift).
    var counts = KnownCounts()
    /// Writes (`write`) made since these facts were gathered, in this transaction and, when
    /// they were taken over, in the earlier ones of this connection: a handle that writes
    /// again is worth learning the root's count for.
    var writes = 0
}

/// How a statement's text starts or ends a transaction (for `TransactionFacts`).
enum TransactionBoundary {
    /// A write transaction that holds the write lock once begun (its snapshot is taken).
    case beginWrite
    /// A deferred BEGIN: no lock and no snapshot yet.
    case beginRead
    case commit
    /// ROLLBACK, which ends the transaction.
    case rollback
    /// ROLLBACK TO a savepoint: the transaction goes on.
    case rollbackToSavepoint
    case none

    init(_ sql: String) {
        // By the first two bytes (this runs for every SAVEPOINT and RELEASE of a group commit):
        // BEGIN, COMMIT, ROLLBACK (TO), END.
        var bytes = sql.utf8.makeIterator()
        switch (bytes.next(), bytes.next()) {
        case (UInt8(ascii: "B"), UInt8(ascii: "E")):
            self = sql == "BEGIN IMMEDIATE" || sql == "BEGIN EXCLUSIVE" ? .beginWrite : .beginRead
        case (UInt8(ascii: "C"), UInt8(ascii: "O")), (UInt8(ascii: "E"), UInt8(ascii: "N")):
            self = .commit
        case (UInt8(ascii: "R"), UInt8(ascii: "O")):
            self = sql.hasPrefix("ROLLBACK TO") ? .rollbackToSavepoint : .rollback
        default:
            self = .none
        }
    }
}

extension Connection {
    /// Runs `body`, which executes `sql`, keeping the facts (`TransactionFacts`) right across
    /// the transaction boundary `sql` may be.
    @inline(__always)
    func crossingBoundary(_ sql: String, _ body: () throws -> Void) throws {
        let boundary = TransactionBoundary(sql)
        if case .none = boundary { return try body() }
        // What a COMMIT of a write transaction leaves true.
        let ending = writeTransactionOpen ? facts : nil
        facts = TransactionFacts()
        do {
            try body()
        } catch {
            // A BEGIN that failed changed nothing; anything else that failed may have.
            if case .beginWrite = boundary { writeTransactionOpen = false } else { carriedFacts = nil }
            throw error
        }
        switch boundary {
        case .beginWrite:
            if let carried = carriedFacts, carried.version == dataVersion() { facts = carried.facts }
            carriedFacts = nil
            writeTransactionOpen = true
        case .beginRead:
            writeTransactionOpen = false
        case .commit:
            if let ending { carriedFacts = (ending, dataVersion()) }
            writeTransactionOpen = false
        case .rollback:
            carriedFacts = nil
            writeTransactionOpen = false
        case .rollbackToSavepoint:
            carriedFacts = nil
        case .none:
            break
        }
    }

    /// SQLite's data version of the main file: it changes whenever the file changes, through
    /// this connection or any other (`SQLITE_FCNTL_DATA_VERSION`).
    func dataVersion() -> UInt32 {
        var version: UInt32 = 0
        _ = sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version)
        return version
    }

    /// The facts of the open transaction (nil outside one).
    var openFacts: TransactionFacts? { autocommit ? nil : facts }
}
