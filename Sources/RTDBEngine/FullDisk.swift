import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A write that fails on a full disk gets one more chance: the write-ahead log is folded into
/// the file and truncated first. That needs no new space when the log holds pages the file
/// already has (data that was changed or removed), and it gives the log's space back, so a
/// `remove` can still free room on a full disk. When it cannot help, the error says what to do.
extension EmbeddedDatabase {
    func retryingAfterFullDisk<T>(_ write: () throws -> T) throws -> T {
        do {
            return try write()
        } catch let e as RTDBError where e.code == .ioError && conn?.diskWasFull == true {
            conn?.diskWasFull = false
            _ = try? conn?.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            do {
                return try write()
            } catch let again as RTDBError where again.code == .ioError && conn?.diskWasFull == true {
                conn?.diskWasFull = false
                throw RTDBError(.ioError, "disk full while writing \(file); nothing was written. " + advice())
            }
        }
    }

    /// What to do about a full disk, with the size of the log that is waiting for room.
    private func advice() -> String {
        var st = stat()
        let log = stat(file + "-wal", &st) == 0 ? Int64(st.st_size) : 0
        let waiting = log >= 1 << 20 ? " (\(file)-wal holds \(log >> 20) MB of recent writes that need room to be folded into the file)" : ""
        return "Free some space on its disk and try again\(waiting); removing data needs a little room too"
    }
}
