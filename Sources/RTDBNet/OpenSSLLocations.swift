#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where OpenSSL 3's two libraries are looked for on each system, and what a user without
/// them is told. The search is data (a system and the environment in, file names out), so the
/// lists of every system are tested on any of them.
///
/// * Linux: `libssl.so.3`, found by the loader's own search (every distribution's OpenSSL 3).
/// * macOS: Homebrew on Apple silicon (/opt/homebrew), Homebrew on Intel (/usr/local), MacPorts
///   (/opt/local), then `libssl.3.dylib` on the loader's path. Never the unversioned
///   /usr/lib/libssl.dylib: that is the system's private LibreSSL, which stops a process that
///   loads it.
/// * FreeBSD: the base system's OpenSSL 3 (FreeBSD 14: `libssl.so.30`), then the ports'
///   (openssl30: `.so.12`, openssl31: `.so.13`) in /usr/local/lib.
///
/// $RTDB_LIBSSL and $RTDB_LIBCRYPTO name the libraries instead (a path, or a file name for the
/// loader to find); each replaces the search for its library.
struct OpenSSLLocations: Equatable {
    enum System: Equatable {
        case linux, macOS, freeBSD, other

        static var current: System {
            #if os(Linux)
            return .linux
            #elseif os(macOS)
            return .macOS
            #elseif os(FreeBSD)
            return .freeBSD
            #else
            return .other
            #endif
        }
    }

    enum Library: Equatable {
        case ssl, crypto

        /// The variable that names this library.
        var variable: String { self == .ssl ? "RTDB_LIBSSL" : "RTDB_LIBCRYPTO" }
    }

    /// What to try, in order.
    var names: [String]
    /// The variable that gave `names`, when one did.
    var override: String?

    /// The locations of `library` on `system`, given the environment's values.
    static func of(_ library: Library, on system: System = .current,
                   environment: (String) -> String? = OpenSSLLocations.environment) -> OpenSSLLocations {
        if let given = environment(library.variable), !given.isEmpty {
            return OpenSSLLocations(names: [given], override: library.variable)
        }
        let stem = library == .ssl ? "libssl" : "libcrypto"
        switch system {
        case .macOS:
            return OpenSSLLocations(names: ["/opt/homebrew/opt/openssl@3/lib/\(stem).3.dylib",
                                            "/usr/local/opt/openssl@3/lib/\(stem).3.dylib",
                                            "/opt/local/lib/\(stem).3.dylib",
                                            "\(stem).3.dylib"], override: nil)
        case .freeBSD:
            return OpenSSLLocations(names: ["\(stem).so.30", "/usr/local/lib/\(stem).so.12",
                                            "/usr/local/lib/\(stem).so.13", "\(stem).so.3"], override: nil)
        case .linux, .other:
            return OpenSSLLocations(names: ["\(stem).so.3"], override: nil)
        }
    }

    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The start of every error about loading OpenSSL, with the package that has it on `system`.
    static func requirement(on system: System = .current) -> String {
        switch system {
        case .linux: return "TLS needs OpenSSL 3 (libssl3)"
        case .macOS: return "TLS needs OpenSSL 3 (openssl@3)"
        case .freeBSD, .other: return "TLS needs OpenSSL 3"
        }
    }

    /// How to get OpenSSL 3 on `system`: the end of the error when it cannot be loaded.
    static func installHint(on system: System = .current) -> String {
        let naming = "or name the libraries with RTDB_LIBSSL and RTDB_LIBCRYPTO"
        switch system {
        case .macOS:
            return "install it with Homebrew (brew install openssl@3) or MacPorts (sudo port install openssl3), \(naming)"
        case .freeBSD:
            return "install it (pkg install openssl; FreeBSD 14 has it in the base system), \(naming)"
        case .linux:
            return "install it (Debian, Ubuntu: apt-get install libssl3; Fedora: dnf install openssl-libs), \(naming)"
        case .other:
            return "install it, \(naming)"
        }
    }
}
