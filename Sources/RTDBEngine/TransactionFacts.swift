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
struct TransactionFacts {
    enum Rows { case unknown, empty, present }

    /// The persistent indexes (Indexes.swift), as read in this transaction.
    var indexes: [EmbeddedDatabase.StoredIndex]? = nil
    /// Whether the `priorities` table has rows: `empty` only once seen so, and a priority
    /// written since makes it `present`.
    var priorities = Rows.unknown
}

extension Connection {
    /// A statement that starts or ends a transaction, or rolls part of one back, ends what the
    /// transaction knew.
    func noteTransactionBoundary(_ sql: String) {
        // By the first two bytes (this runs for every SAVEPOINT and RELEASE of a group commit):
        // BEGIN, COMMIT, ROLLBACK (TO), END.
        var bytes = sql.utf8.makeIterator()
        switch (bytes.next(), bytes.next()) {
        case (UInt8(ascii: "B"), UInt8(ascii: "E")), (UInt8(ascii: "C"), UInt8(ascii: "O")),
             (UInt8(ascii: "R"), UInt8(ascii: "O")), (UInt8(ascii: "E"), UInt8(ascii: "N")):
            facts = TransactionFacts()
        default:
            return
        }
    }

    /// The facts of the open transaction (nil outside one).
    var openFacts: TransactionFacts? { autocommit ? nil : facts }
}
