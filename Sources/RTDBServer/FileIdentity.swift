#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which file a path reaches: its device and inode. Two paths name the same file exactly when
/// their identities are equal, whatever their spelling: a symbolic link, `prod.db` and
/// `PROD.db` on a case-insensitive file system, or `a/../b.db`. What belongs to a file (its
/// rules) is keyed by this, never by the name that reached it.
struct FileIdentity: Hashable, Sendable, CustomStringConvertible {
    var device: UInt64
    var inode: UInt64

    /// The identity of the file `path` reaches now (links followed); nil when none exists.
    init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(truncatingIfNeeded: st.st_ino)
    }

    var description: String { "file:\(device):\(inode)" }
}
