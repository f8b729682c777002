#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RTDBCore

/// The flusher's lock: a `flock` on `<cache>.flush`, so that one process at a
/// time sends a cache's queue. The kernel frees it when the holder dies; the lock file is
/// never removed (removing it would let two processes lock two different files). Never the
/// SQLite file itself: closing another descriptor of it would drop SQLite's own locks.
public final class FlushLock {
    let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }

    /// Takes the lock without waiting; nil when another process holds it.
    public static func tryAcquire(cacheFile: String) throws -> FlushLock? {
        let name = cacheFile + ".flush"
        let fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 {
            let e = errno
            throw RTDBError(e == EACCES ? .permissionDenied : .ioError, "cannot open the flush lock \(name): \(String(cString: strerror(e)))")
        }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return FlushLock(fd: fd) }
        close(fd)
        return nil
    }

    /// Takes the lock, waiting up to `seconds` while `keepWaiting` says so (polled every 20 ms).
    public static func acquire(cacheFile: String, seconds: Double, keepWaiting: () throws -> Bool) throws -> FlushLock? {
        let deadline = OfflineClock.monotonicMillis() + Int64(seconds * 1000)
        while true {
            if let lock = try tryAcquire(cacheFile: cacheFile) { return lock }
            if OfflineClock.monotonicMillis() >= deadline { return nil }
            if !(try keepWaiting()) { return nil }
            usleep(20_000)
        }
    }
}

/// Clocks, in one place.
public enum OfflineClock {
    public static func monotonicMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    public static func wallMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
