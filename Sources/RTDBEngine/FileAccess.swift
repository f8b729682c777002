import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the file system allows with a database file, explained in the error a user sees:
/// a path that cannot be entered, a folder that cannot be written, a file that can only be read.
///
/// A database in WAL mode needs `FILE-wal` and `FILE-shm` beside it. A user who may read the
/// file but not write its folder can still read it while they exist (another process has it
/// open), or, when there is no write-ahead log to read, straight from the file (`immutable`).
enum FileAccess {
    /// Whether `file` exists. A path that cannot be searched is `permission_denied`: reading it
    /// as "no database yet" would print `null` for data that is there.
    static func exists(_ file: String) throws -> Bool {
        var st = stat()
        if stat(file, &st) == 0 { return true }
        let e = errno
        if e == ENOENT || e == ENOTDIR { return false }
        if e == EACCES {
            throw RTDBError(.permissionDenied, "cannot open database \(file): permission denied "
                            + "(a folder on its path cannot be entered by this user)")
        }
        throw RTDBError(.ioError, "cannot open database \(file): \(String(cString: strerror(e)))")
    }

    /// The folder that holds `file`.
    static func folder(of file: String) -> String {
        guard let slash = file.lastIndex(of: "/") else { return "." }
        let dir = String(file[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// Throws `permission_denied` when a new `file` cannot be created in its folder.
    static func checkCreatable(_ file: String) throws {
        let dir = folder(of: file)
        var st = stat()
        guard stat(dir, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { return }   // SQLite says what is wrong
        if access(dir, W_OK | X_OK) != 0 {
            let e = errno
            if e == EACCES || e == EPERM {
                throw RTDBError(.permissionDenied, "cannot create database \(file): permission denied "
                                + "(the folder \(dir) is not writable by this user)")
            }
            if e == EROFS {
                throw RTDBError(.permissionDenied, "cannot create database \(file): the folder \(dir) is on a read-only file system")
            }
        }
    }

    /// Why `file` cannot be written, and what to do about it.
    static func readOnlyReason(_ file: String) -> String {
        let dir = folder(of: file)
        if access(file, W_OK) != 0 && (errno == EACCES || errno == EPERM) {
            return "database \(file) is read-only for this user (no write permission on the file); "
                + "ask its owner for write access, or work on a copy"
        }
        if access(file, W_OK) != 0 && errno == EROFS {
            return "database \(file) is on a read-only file system"
        }
        if access(dir, W_OK | X_OK) != 0 {
            return "database \(file) cannot be used here: its folder \(dir) is not writable by this user, and SQLite "
                + "needs to create \(file)-wal and \(file)-shm beside it; make the folder writable, or work on a copy"
        }
        return "database \(file) is read-only"
    }

    /// True when this user may write `file` (so SQLite may create its WAL files).
    static func writable(_ file: String) -> Bool { access(file, W_OK) == 0 }

    /// True when `file-wal` exists (another process may have the file open).
    static func logExists(_ file: String) -> Bool {
        var st = stat()
        return stat(file + "-wal", &st) == 0
    }

    /// True when `file-wal` holds changes not yet copied into `file`.
    static func hasWriteAheadLog(_ file: String) -> Bool {
        var st = stat()
        return stat(file + "-wal", &st) == 0 && st.st_size > 0
    }

    /// The `file:` URI that opens `file` as immutable: read from the file alone, no locks, no
    /// `-wal` or `-shm`. Only valid while the file has no write-ahead log to read.
    static func immutableURI(_ file: String) -> String {
        var out = file.hasPrefix("/") ? "file://" : "file:"
        for b in file.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(UnicodeScalar(b))
            default:
                let hex = String(b, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out + "?immutable=1"
    }

    /// What identifies the file at a path: its inode, and for a connection that reads the file
    /// alone (which sees no commits) also its size, modification time and log.
    struct Signature: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64 = 0
        var modified: Int64 = 0
        var log = false
    }

    /// The signature of whatever `file` names now; nil when nothing does.
    static func signature(_ file: String, detailed: Bool) -> Signature? {
        var st = stat()
        guard stat(file, &st) == 0 else { return nil }
        var sig = Signature(device: UInt64(truncatingIfNeeded: st.st_dev), inode: UInt64(st.st_ino))
        if detailed {
            sig.size = Int64(st.st_size)
            sig.modified = modificationNanos(st)
            sig.log = logExists(file)
        }
        return sig
    }
}
