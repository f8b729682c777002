#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CLinux
#endif

/// Wakes the loop when files in one folder change: another process committing to a database
/// there appends to its `-wal` file. Events are coalesced: the loop learns only that something
/// changed, and re-reads what it needs. `fd` turns readable when something changed; `drain()`
/// consumes that.
///
/// Native back-end: inotify on Linux, kqueue (EVFILT_VNODE on the folder and its `-wal` files)
/// on macOS and the BSDs. The portable back-end has no such notification: `init` throws, and
/// `rtdb serve` finds other processes' commits with its periodic feed check instead.
///
/// A watch may be turned off while nobody needs it (`isActive`): on Linux the kernel then does
/// no work for the folder's writes, the watcher's own among them (every write of a WAL frame
/// otherwise queues an event: about 5% of a durable write's time in `rtdb serve`). Turned on
/// again, it reports only what changes from then on. kqueue's watch stays on (its cost was
/// not measured: no such system is in reach here).
public final class FolderWatch {
    public let fd: Int32
    private let source: any FolderNotifications

    /// Whether changes are reported; on from the start. Turning it on can fail (the system's
    /// limit on watches): then it stays off, and `isActive` says so.
    public var isActive: Bool {
        get { source.isActive }
        set { source.setActive(newValue) }
    }

    public init(folder: String) throws {
        switch IOBackend.current {
        case .posix:
            throw NetError.system("folder notifications with RTDB_IO_BACKEND=posix", ENOTSUP)
        case .native:
            #if os(Linux)
            source = try InotifyFolder(folder: folder)
            #elseif canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
            source = try KqueueFolder(folder: folder)
            #else
            throw NetError.system("folder notifications", ENOTSUP)
            #endif
        }
        fd = source.fd
    }

    /// Consumes the pending notifications.
    public func drain() {
        source.drain()
    }
}

/// A kernel notification of changes in a folder, behind one readable descriptor.
protocol FolderNotifications: AnyObject {
    var fd: Int32 { get }
    func drain()
    var isActive: Bool { get }
    func setActive(_ on: Bool)
}

#if os(Linux)
/// inotify on the folder: any file in it modified, created, moved in or closed after writing.
final class InotifyFolder: FolderNotifications {
    let fd: Int32
    private let folder: String
    /// The watch's descriptor while it is on (-1: off).
    private var watch: Int32 = -1
    static let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)

    init(folder: String) throws {
        self.folder = folder
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { throw NetError.system("inotify_init1", errno) }
        watch = inotify_add_watch(fd, folder, InotifyFolder.mask)
        if watch < 0 {
            let e = errno
            close(fd)
            throw NetError.system("inotify_add_watch \(folder)", e)
        }
    }

    deinit { close(fd) }

    var isActive: Bool { watch >= 0 }

    func setActive(_ on: Bool) {
        if on == isActive { return }
        if on {
            watch = inotify_add_watch(fd, folder, InotifyFolder.mask)
        } else {
            _ = inotify_rm_watch(fd, watch)
            watch = -1
            drain()   // (and the IN_IGNORED the removal queued)
        }
    }

    func drain() {
        // Uninitialised: every write of a served file in the folder drains, and zeroing a new
        // 8 KiB array each time was a tenth of a small write's instructions.
        withUnsafeTemporaryAllocation(byteCount: 8192, alignment: 8) { buf in
            while read(fd, buf.baseAddress, buf.count) > 0 {}
        }
    }
}
#endif
