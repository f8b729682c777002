import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes the commits of a database file that a batch left unsynced (`beginBatch(deferringSync:)`)
/// durable: one `fdatasync` of its write-ahead log, which may run on any thread while the
/// connection goes on reading and writing (the kernel flushes the log's inode, whichever
/// descriptor asks). One caller at a time.
///
/// The log is opened once and kept; before each sync its name is looked up again, and a log that
/// is a new file (SQLite removes the log when the last connection closes, and the next writer
/// creates it afresh) is opened anew, and its folder synced, so that its name survives a crash
/// too. When there is no log at all, the last connection checkpointed it into the database file
/// before removing it: that file is synced instead.
public final class WALSync: @unchecked Sendable {
    public let file: String
    private var fd: Int32 = -1
    /// The log file synced last time (a new one is opened, and its folder synced).
    private(set) var device: UInt64 = 0
    private(set) var inode: UInt64 = 0

    public init(file: String) {
        self.file = file
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    public var logPath: String { file + "-wal" }

    /// Returns once every commit made to the file before the call is on disk.
    public func sync() throws {
        var st = stat()
        guard stat(logPath, &st) == 0 else {
            if errno != ENOENT { throw WALSync.failure("stat", logPath, errno) }
            try WALSync.syncPath(file)
            return
        }
        if fd < 0 || UInt64(st.st_dev) != device || UInt64(st.st_ino) != inode {
            if fd >= 0 { close(fd) }
            fd = open(logPath, O_RDONLY | O_CLOEXEC)
            if fd < 0 { throw WALSync.failure("open", logPath, errno) }
            var opened = stat()
            guard fstat(fd, &opened) == 0 else { throw WALSync.failure("fstat", logPath, errno) }
            device = UInt64(opened.st_dev)
            inode = UInt64(opened.st_ino)
            try WALSync.syncPath(WALSync.folder(of: file))
        }
        if WALSync.dataSync(fd) != 0 { throw WALSync.failure("fsync", logPath, errno) }
    }

    static func folder(of file: String) -> String {
        guard let slash = file.lastIndex(of: "/") else { return "." }
        return slash == file.startIndex ? "/" : String(file[..<slash])
    }

    static func syncPath(_ path: String) throws {
        let f = open(path, O_RDONLY | O_CLOEXEC)
        if f < 0 { throw failure("open", path, errno) }
        defer { close(f) }
        if dataSync(f) != 0 { throw failure("fsync", path, errno) }
    }

    static func dataSync(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        return fdatasync(fd)
        #else
        return fsync(fd)
        #endif
    }

    static func failure(_ call: String, _ path: String, _ code: Int32) -> RTDBError {
        RTDBError(.ioError, "\(call) \(path): \(String(cString: strerror(code)))")
    }
}
