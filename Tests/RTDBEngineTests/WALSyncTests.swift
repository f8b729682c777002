import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine

@Suite("A batch that defers its fsync, and the sync of its log from elsewhere")
struct WALSyncTests {
    @Test func aDeferringBatchCommitsAtNormalAndTheHandleReturnsToFull() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(1))
        t.db.beginBatch(deferringSync: true)
        _ = try t.db.set(path("/a"), .int(1))
        // synchronous: 1 = NORMAL (the log is written, not synced, at COMMIT), 2 = FULL.
        #expect(try t.db.conn?.integer("PRAGMA synchronous") == 1)
        try t.db.commitBatch()
        #expect(try t.db.conn?.integer("PRAGMA synchronous") == 2)
        #expect(text(try t.another().get(.root)) == #"{"a":1,"n":1}"#)
        // A batch that does not defer stays at FULL throughout.
        t.db.beginBatch()
        _ = try t.db.set(path("/b"), .int(2))
        #expect(try t.db.conn?.integer("PRAGMA synchronous") == 2)
        try t.db.commitBatch()
    }

    @Test func syncsTheLogAndOpensItAgainWhenItIsANewFile() throws {
        let dir = NSTemporaryDirectory() + "rtdb-walsync-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/x.db"
        let sync = WALSync(file: file)
        var db: EmbeddedDatabase? = EmbeddedDatabase(file: file, timeoutSeconds: 5)
        _ = try db?.set(path("/a"), .int(1))
        #expect(FileManager.default.fileExists(atPath: sync.logPath))
        try sync.sync()
        let first = sync.inode
        #expect(first != 0)
        try sync.sync()
        #expect(sync.inode == first)
        // The last handle going away checkpoints the log into the file and removes it: the
        // file itself is synced then.
        db = nil
        #expect(!FileManager.default.fileExists(atPath: sync.logPath))
        try sync.sync()
        // A new writer makes a new log; the sync follows it.
        let again = EmbeddedDatabase(file: file, timeoutSeconds: 5)
        _ = try again.set(path("/b"), .int(2))
        let kept = try FileManager.default.attributesOfItem(atPath: sync.logPath)[.systemFileNumber] as? UInt64
        try sync.sync()
        #expect(sync.inode == kept)
    }

    @Test func aFileThatIsNotThereIsAnIOError() {
        let sync = WALSync(file: "/nonexistent-rtdb-folder/x.db")
        #expect(throws: RTDBError.self) { try sync.sync() }
        do { try sync.sync() } catch let e as RTDBError {
            #expect(e.code == .ioError)
            #expect(e.message.hasPrefix("open /nonexistent-rtdb-folder/x.db:"))
        } catch { Issue.record("unexpected \(error)") }
    }
}
