#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one resolved address came to, when a listener binds or a client connects.
enum AddressAttempt<T> {
    /// It worked: the search ends with this.
    case made(T)
    /// It did not: the next address is tried, and this error is thrown when none works.
    case failed(NetError)
}

/// Tries the addresses of getaddrinfo's `list` in its order, each with a new non-blocking
/// stream socket of its family, until `attempt` makes something of one. The socket is
/// `attempt`'s to keep only when it returns `.made`; after `.failed`, or an error thrown
/// (which ends the search at once), it is closed here. Throws the last failure when no address
/// works ("no address for HOST" when none could be tried).
func firstWorkingAddress<T>(in list: UnsafeMutablePointer<addrinfo>?, host: String,
                            _ attempt: (_ socket: Int32, _ address: addrinfo) throws -> AddressAttempt<T>) throws -> T {
    var lastError: NetError = .address("no address for \(host)")
    var cur = list
    while let ai = cur {
        defer { cur = ai.pointee.ai_next }
        let s = openStreamSocket(family: ai.pointee.ai_family)
        if s < 0 { lastError = .system("socket", errno); continue }
        let outcome: AddressAttempt<T>
        do {
            outcome = try attempt(s, ai.pointee)
        } catch {
            _ = systemClose(s)
            throw error
        }
        switch outcome {
        case .made(let made): return made
        case .failed(let e):
            _ = systemClose(s)
            lastError = e
        }
    }
    throw lastError
}
