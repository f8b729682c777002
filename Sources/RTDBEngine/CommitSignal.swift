import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes an observer when a database file or its write-ahead log changes, so it can sleep
/// instead of polling. Invariant: it only ever says "look now"; it never says what changed, and
/// a missed or coalesced notification costs latency, never an event (the observer re-reads the
/// write log, and a slow safety poll covers file systems that deliver nothing).
///
/// Two kinds of source (`CommitWatch`) tell it: the system's notifications (the native back-end:
/// inotify on Linux, kqueue on macOS and the BSDs), and a periodic stat(2) of the file and its
/// log (`CommitCheck`), which every system has. The check runs with RTDB_IO_BACKEND=posix, on
/// systems without notifications, and whenever the notifications cannot be set up (no inotify
/// instance left, no folder to watch yet). The names followed are the file's own and, when it
/// is a symbolic link, those of the file it points to (SQLite keeps the log beside that one).
final class CommitSignal {
    /// What a wake-up saw.
    struct Wake {
        /// The write-ahead log (or the file itself) was written: a commit may be under way or done.
        var written = false
        /// The file's name was created, removed, renamed or its contents written directly.
        var fileEvent = false
        /// The `hangup` descriptor's other end went away (see `wait`).
        var hangup = false
    }

    let file: String
    private let native: (any CommitWatch)?
    private let check: CommitCheck

    init(file: String, backend: IOBackend = .current) {
        self.file = file
        check = CommitCheck(file: file)
        var native: (any CommitWatch)? = nil
        if backend == .native {
            #if os(Linux)
            native = InotifyCommitWatch(file: file)
            #elseif canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
            native = KqueueCommitWatch(file: file)
            #endif
        }
        self.native = native
    }

    /// The source in use now: the notifications while they are delivered, else the check.
    private var source: any CommitWatch {
        if let native, native.isActive { return native }
        return check
    }

    /// What wakes this signal now ("inotify", "kqueue" or "stat check"), for tests and errors.
    var mechanism: String { source.name }

    /// Watches the file's names again. `resolve` also follows a symbolic link again (after the
    /// file was replaced); without it this costs nothing once watching.
    func refresh(resolve: Bool = true) {
        native?.refresh(resolve: resolve)
        check.refresh(resolve: resolve)
    }

    /// Waits up to `nanos` for a notification about the file, or for `hangup` (a descriptor
    /// such as stdout, -1 for none) to report that its other end went away; returns what
    /// arrived (nothing on a timeout). Notifications about other files are consumed and ignored.
    func wait(nanos: UInt64, hangup: Int32 = -1) -> Wake {
        let source = self.source
        let deadline = monotonicNanos() + nanos
        var wake = Wake()
        // The descriptors to wait on, kept on the stack (a watcher's every look goes through here).
        var fds = (pollfd(), pollfd())
        while true {
            let now = monotonicNanos()
            let left = deadline > now ? deadline - now : 0
            // A source without a descriptor is looked at every `checkInterval`.
            let step = source.descriptor >= 0 ? left : min(left, source.checkInterval)
            // poll ignores a negative descriptor. Events 0 on `hangup`: only POLLERR/POLLHUP/
            // POLLNVAL are reported (a closed reader).
            fds.0 = pollfd(fd: source.descriptor, events: Int16(POLLIN), revents: 0)
            fds.1 = pollfd(fd: hangup, events: 0, revents: 0)
            // poll counts whole milliseconds: round up, so a wait never spins.
            let timeout = Int32(min((step + 999_999) / 1_000_000, 60_000))
            let r = withUnsafeMutableBytes(of: &fds) { raw in
                poll(raw.baseAddress?.assumingMemoryBound(to: pollfd.self), 2, timeout)
            }
            if r < 0 && errno != EINTR { sleep(nanos: left); return wake }
            if source.descriptor < 0 || (r > 0 && fds.0.revents != 0) { source.collect(into: &wake) }
            if r > 0 && fds.1.revents != 0 { wake.hangup = true }
            if wake.written || wake.fileEvent || wake.hangup || monotonicNanos() >= deadline { return wake }
        }
    }

    /// The names to follow for `file`: itself and, when it is a symbolic link, its target (not
    /// when the name only differs by its folder's spelling, such as a relative path).
    static func targets(of file: String) -> [String] {
        guard let resolved = realPath(file), resolved != file else { return [file] }
        let folder = realPath(FileAccess.folder(of: file)) ?? FileAccess.folder(of: file)
        let base = String(decoding: baseName(file), as: UTF8.self)
        return resolved == (folder == "/" ? "" : folder) + "/" + base ? [file] : [file, resolved]
    }

    private static func realPath(_ path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return String(cString: real)
    }

    /// The last component of `path`, as bytes (how notifications name files).
    static func baseName(_ path: String) -> [UInt8] {
        Array(path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last ?? [])
    }

    private func sleep(nanos: UInt64) {
        var ts = timespec()
        ts.tv_sec = time_t(nanos / 1_000_000_000)
        ts.tv_nsec = Int(nanos % 1_000_000_000)
        var left = timespec()
        while nanosleep(&ts, &left) != 0 && errno == EINTR { ts = left }
    }
}

/// One way of learning that a database file or its log changed.
protocol CommitWatch: AnyObject {
    /// "inotify", "kqueue" or "stat check".
    var name: String { get }
    /// False while it cannot deliver anything (no folder watched yet): the check stands in.
    var isActive: Bool { get }
    /// Readable when something is pending; -1 when `collect` is to run every `checkInterval`.
    var descriptor: Int32 { get }
    /// How often to look when there is no descriptor (nanoseconds).
    var checkInterval: UInt64 { get }
    func refresh(resolve: Bool)
    /// Consumes what is pending (without waiting) and notes what concerns the file.
    func collect(into wake: inout CommitSignal.Wake)
}
