import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `rtdb serve` was asked for, as its command parsed it, and the one way to start a server
/// from it: the command deals in options and files, never in sockets, TLS or the engine.
public struct ServeConfiguration {
    public var options: Server.Options
    /// Where namespaces live (one file, or one file per namespace in a folder).
    public var namespaces: ServerNamespaces
    /// The folder whose changes wake the streams (other processes committing to its files).
    public var watchFolder: String?
    public var security: SecurityOptions

    public init(options: Server.Options, namespaces: ServerNamespaces, watchFolder: String?, security: SecurityOptions) {
        self.options = options
        self.namespaces = namespaces
        self.watchFolder = watchFolder
        self.security = security
    }

    /// Binds the address (so the caller can say where it listens) and makes the indexes the
    /// rules declare; `run()` then serves. An address that cannot be bound is an RTDBError
    /// naming it: in use (unavailable), not allowed (permission denied), or why not.
    public func start() throws -> Server {
        let server: Server
        do {
            server = try Server(options: options, namespaces: namespaces, watchFolder: watchFolder, security: security)
        } catch let e as NetError {
            let address = "\(options.host):\(options.port)"
            if e.errnoValue == EADDRINUSE { throw RTDBError(.unavailable, "cannot listen on \(address): the address is in use") }
            if e.errnoValue == EACCES { throw RTDBError(.permissionDenied, "cannot listen on \(address): permission denied") }
            throw RTDBError(.unavailable, "cannot listen on \(address): \(e)")
        }
        // `.indexOn` declarations become the engine's indexes before the first request.
        if security.rules != nil { server.createDeclaredIndexes(nil) }
        return server
    }

    /// True when every address `host` resolves to is a loopback address.
    public static func isLoopback(host: String) -> Bool { TCPListener.isLoopback(host: host) }
}

/// A certificate or key file that cannot serve https, with the reason (naming the file).
public struct TLSSetupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

extension Server.Options {
    /// Serve https with the PEM certificate chain and unencrypted key in these files, checked
    /// now: a missing, unreadable, mismatched or encrypted file is a TLSSetupError; OpenSSL 3
    /// not loadable is RTDBError unavailable.
    public mutating func useTLS(certificateFile: String, keyFile: String) throws {
        do {
            tls = try TLSServerContext(certificateFile: certificateFile, keyFile: keyFile)
        } catch let e as TLSError {
            if case .unavailable(let m) = e { throw RTDBError(.unavailable, m) }
            throw TLSSetupError(message: e.message)
        }
    }
}
