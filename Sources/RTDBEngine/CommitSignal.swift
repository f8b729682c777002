#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CLinux
#endif

/// Wakes an observer when a database file or its write-ahead log changes, so it can sleep
/// instead of polling. Invariant: it only ever says "look now"; it never says what changed, and
/// a missed or coalesced notification costs latency, never an event (the observer re-reads the
/// write log, and a slow safety poll covers file systems that deliver nothing).
///
/// On Linux it is inotify on the folder that holds the file (and on the folder of the file a
/// symbolic link points to), filtered to the file's own names: `FILE` (created, replaced,
/// removed, written), `FILE-wal` (every commit appends to it). Watching the folder rather than
/// the files keeps working when the file or its log is created, removed or replaced. Elsewhere
/// `available` is false and the observer falls back to polling.
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
    private var fd: Int32 = -1
    private var names: [[UInt8]] = []
    private var walNames: [[UInt8]] = []
    private var watchedFolders: [String] = []

    init(file: String) {
        self.file = file
        #if os(Linux)
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        #endif
        refresh()
    }

    deinit { if fd >= 0 { close(fd) } }

    /// True once notifications are being delivered for the file's folder.
    var available: Bool { fd >= 0 && !watchedFolders.isEmpty }

    /// Adds watches for the folders of the file's names. `resolve` also follows a symbolic
    /// link again (after the file was replaced); without it this costs nothing once watching.
    func refresh(resolve: Bool = true) {
        #if os(Linux)
        guard fd >= 0, resolve || watchedFolders.isEmpty else { return }
        var targets = [file]
        if let real = realpath(file, nil) {
            let resolved = String(cString: real)
            free(real)
            if resolved != file { targets.append(resolved) }
        }
        for target in targets {
            let folder = FileAccess.folder(of: target)
            let base = Array(target.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last ?? [])
            if !names.contains(base) {
                names.append(base)
                walNames.append(base + Array("-wal".utf8))
            }
            if watchedFolders.contains(folder) { continue }
            let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
            if inotify_add_watch(fd, folder, mask) >= 0 { watchedFolders.append(folder) }
        }
        #endif
    }

    /// Waits up to `nanos` for a notification about the file, or for `hangup` (a descriptor
    /// such as stdout, -1 for none) to report that its other end went away; returns what
    /// arrived (nothing on a timeout). Notifications about other files are consumed and ignored.
    func wait(nanos: UInt64, hangup: Int32 = -1) -> Wake {
        guard available else {
            sleep(nanos: nanos)
            return Wake()
        }
        let deadline = monotonicNanos() + nanos
        var wake = Wake()
        while true {
            let now = monotonicNanos()
            let left = deadline > now ? deadline - now : 0
            // Events 0 on `hangup`: only POLLERR/POLLHUP/POLLNVAL are reported (a closed reader).
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: hangup, events: 0, revents: 0)]
            // poll counts whole milliseconds: round up, so a wait never spins.
            let r = poll(&fds, hangup >= 0 ? 2 : 1, Int32(min((left + 999_999) / 1_000_000, 60_000)))
            if r < 0 && errno != EINTR { sleep(nanos: left); return wake }
            if r > 0 && fds[0].revents != 0 { drain(into: &wake) }
            if r > 0 && hangup >= 0 && fds[1].revents != 0 { wake.hangup = true }
            if wake.written || wake.fileEvent || wake.hangup || monotonicNanos() >= deadline { return wake }
        }
    }

    /// Reads every pending notification (non-blocking) and notes those that name the file.
    func drain(into wake: inout Wake) {
        #if os(Linux)
        let size = 16 * 1024
        let buf = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buf.deallocate() }
        while true {
            let n = read(fd, buf, size)
            if n <= 0 { return }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let event = buf.load(fromByteOffset: offset, as: inotify_event.self)
                let length = Int(event.len)
                var name: [UInt8] = []
                if length > 0 {
                    let start = buf.advanced(by: offset + header).assumingMemoryBound(to: UInt8.self)
                    var count = 0
                    while count < length && start[count] != 0 { count += 1 }
                    name = Array(UnsafeBufferPointer(start: start, count: count))
                }
                offset += header + length
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    // Notifications were lost: look at everything.
                    wake.written = true
                    wake.fileEvent = true
                    continue
                }
                if walNames.contains(name) {
                    wake.written = true
                } else if names.contains(name) {
                    wake.written = true
                    wake.fileEvent = true
                }
            }
        }
        #endif
    }

    private func sleep(nanos: UInt64) {
        var ts = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
        var left = timespec()
        while nanosleep(&ts, &left) != 0 && errno == EINTR { ts = left }
    }
}
