#if canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
#if canImport(Darwin)
import Darwin
#else
import Glibc
#endif

/// A kqueue that reports changes to a few files and folders (EVFILT_VNODE): a file written or
/// grown, a folder's entries added, removed or renamed, a file removed or renamed away. Its
/// descriptor `fd` turns readable while events are pending, so it can sit in a `Poller` or a
/// poll(2) call like any other descriptor.
///
/// kqueue watches an open file, not a name: `watch(path)` opens what the name denotes now and
/// re-opens it when the name has come to denote another file (replaced, or removed and created
/// again), which owners check after their folder reports a change.
public final class VnodeWatch {
    public let fd: Int32
    private var files: [String: (fd: Int32, stamp: FileStamp)] = [:]
    private var pathOf: [Int32: String] = [:]

    public init() throws {
        fd = kqueue()
        if fd < 0 { throw NetError.system("kqueue", errno) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    deinit {
        for (_, f) in files { close(f.fd) }
        close(fd)
    }

    /// Watches the file or folder `path` names now. Returns true when that is another file than
    /// the one watched so far under this name (or the first, or none any more).
    @discardableResult
    public func watch(_ path: String) -> Bool {
        let now = FileStamp.of(path)
        if let current = files[path], let now, current.stamp.device == now.device, current.stamp.inode == now.inode {
            return false
        }
        let had = files[path] != nil
        unwatch(path)
        guard now != nil else { return had }
        #if canImport(Darwin)
        let flags = O_EVTONLY | O_CLOEXEC   // for events only: does not keep a volume busy
        #else
        let flags = O_RDONLY | O_CLOEXEC
        #endif
        let target = open(path, flags)
        guard target >= 0, let stamp = FileStamp.of(path) else {
            if target >= 0 { close(target) }
            return had
        }
        var ev = kevent()
        ev.ident = UInt(target)
        ev.filter = Int16(EVFILT_VNODE)
        ev.flags = UInt16(EV_ADD | EV_CLEAR)
        ev.fflags = UInt32(NOTE_WRITE | NOTE_EXTEND | NOTE_DELETE | NOTE_RENAME)
        if kevent(fd, &ev, 1, nil, 0, nil) != 0 {
            close(target)
            return had
        }
        files[path] = (target, stamp)
        pathOf[target] = path
        return true
    }

    /// Stops watching `path` (closing the descriptor removes its kevent).
    public func unwatch(_ path: String) {
        guard let f = files.removeValue(forKey: path) else { return }
        pathOf[f.fd] = nil
        close(f.fd)
    }

    public func isWatching(_ path: String) -> Bool { files[path] != nil }

    /// The paths with pending events (without waiting), and for each whether its file was
    /// removed or renamed away (it is no longer watched then).
    public func drain() -> [(path: String, gone: Bool)] {
        var out: [(path: String, gone: Bool)] = []
        var events: [kevent] = Array(repeating: kevent(), count: 32)
        var zero = timespec()
        while true {
            let n = kevent(fd, nil, 0, &events, Int32(events.count), &zero)
            if n <= 0 { break }
            for e in events[0..<Int(n)] {
                guard let path = pathOf[Int32(truncatingIfNeeded: e.ident)] else { continue }
                let gone = e.fflags & UInt32(NOTE_DELETE | NOTE_RENAME) != 0
                if gone { unwatch(path) }
                out.append((path, gone))
            }
            if Int(n) < events.count { break }
        }
        return out
    }
}

/// A folder and the `-wal` files in it, for `FolderWatch`: a commit to any database in the
/// folder writes its log; a log created or removed changes the folder.
final class KqueueFolder: FolderNotifications {
    private let vnodes: VnodeWatch
    private let folder: String
    var fd: Int32 { vnodes.fd }

    init(folder: String) throws {
        self.folder = folder
        vnodes = try VnodeWatch()
        guard vnodes.watch(folder) else { throw NetError.system("kqueue watch \(folder)", errno) }
        watchLogs()
    }

    /// Watches every `-wal` file in the folder (new ones; replaced ones again).
    private func watchLogs() {
        guard let dir = opendir(folder) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasSuffix("-wal") { vnodes.watch(folder + "/" + name) }
        }
    }

    /// (Always on: see FolderWatch.)
    var isActive: Bool { true }
    func setActive(_ on: Bool) {}

    func drain() {
        if vnodes.drain().contains(where: { $0.path == folder }) {
            if !vnodes.isWatching(folder) { vnodes.watch(folder) }
            watchLogs()
        }
    }
}
#endif
