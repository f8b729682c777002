#if os(Linux)
import CLinux
import Glibc

/// The commit signal on Linux: inotify on the folder that holds the file (and on the folder of
/// the file a symbolic link points to), filtered to the file's own names: `FILE` (created,
/// replaced, removed, written), `FILE-wal` (every commit appends to it). Watching the folder
/// rather than the files keeps working when the file or its log is created, removed or replaced.
final class InotifyCommitWatch: CommitWatch {
    let file: String
    private let fd: Int32
    private var names: [[UInt8]] = []
    private var walNames: [[UInt8]] = []
    private var watchedFolders: [String] = []

    /// Nil when no inotify instance can be had (the per-user limit is reached).
    init?(file: String) {
        self.file = file
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { return nil }
        refresh(resolve: true)
    }

    deinit { close(fd) }

    var name: String { "inotify" }
    var isActive: Bool { !watchedFolders.isEmpty }
    var descriptor: Int32 { fd }
    var checkInterval: UInt64 { 0 }

    func refresh(resolve: Bool) {
        guard resolve || watchedFolders.isEmpty else { return }
        for target in CommitSignal.targets(of: file) {
            let folder = FileAccess.folder(of: target)
            let base = CommitSignal.baseName(target)
            if !names.contains(base) {
                names.append(base)
                walNames.append(base + Array("-wal".utf8))
            }
            if watchedFolders.contains(folder) { continue }
            let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
            if inotify_add_watch(fd, folder, mask) >= 0 { watchedFolders.append(folder) }
        }
    }

    /// Reads every pending notification (non-blocking) and notes those that name the file.
    func collect(into wake: inout CommitSignal.Wake) {
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
    }
}
#endif
