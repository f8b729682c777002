import Foundation
import Testing
@testable import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where OpenSSL 3 is looked for on each system, $RTDB_LIBSSL / $RTDB_LIBCRYPTO, and the error
/// that says how to install it. The lists of every system are checked here; loading through the
/// override is checked with this system's own library.
@Suite struct OpenSSLLocationsTests {
    func none(_ name: String) -> String? { nil }

    @Test func macOSLooksInHomebrewOnBothArchitecturesThenMacPortsThenTheLoaderPath() {
        let ssl = OpenSSLLocations.of(.ssl, on: .macOS, environment: none)
        #expect(ssl == OpenSSLLocations(names: ["/opt/homebrew/opt/openssl@3/lib/libssl.3.dylib",
                                                "/usr/local/opt/openssl@3/lib/libssl.3.dylib",
                                                "/opt/local/lib/libssl.3.dylib",
                                                "libssl.3.dylib"], override: nil))
        let crypto = OpenSSLLocations.of(.crypto, on: .macOS, environment: none)
        #expect(crypto.names.first == "/opt/homebrew/opt/openssl@3/lib/libcrypto.3.dylib")
        #expect(crypto.names.count == 4 && crypto.names.allSatisfy { $0.hasSuffix("libcrypto.3.dylib") })
        // Never the unversioned system stub, which stops the process that loads it.
        #expect(!(ssl.names + crypto.names).contains { $0.hasSuffix("libssl.dylib") || $0.hasSuffix("libcrypto.dylib") })
    }

    @Test func linuxAndFreeBSDUseTheirSonames() {
        #expect(OpenSSLLocations.of(.ssl, on: .linux, environment: none).names == ["libssl.so.3"])
        #expect(OpenSSLLocations.of(.crypto, on: .linux, environment: none).names == ["libcrypto.so.3"])
        #expect(OpenSSLLocations.of(.ssl, on: .freeBSD, environment: none).names
                == ["libssl.so.30", "/usr/local/lib/libssl.so.12", "/usr/local/lib/libssl.so.13", "libssl.so.3"])
    }

    @Test(arguments: [OpenSSLLocations.System.linux, .macOS, .freeBSD])
    func eachVariableReplacesTheSearchForItsLibrary(_ system: OpenSSLLocations.System) {
        let env = ["RTDB_LIBSSL": "/opt/ssl/lib/libssl.custom", "RTDB_LIBCRYPTO": "/opt/ssl/lib/libcrypto.custom"]
        #expect(OpenSSLLocations.of(.ssl, on: system, environment: { env[$0] })
                == OpenSSLLocations(names: ["/opt/ssl/lib/libssl.custom"], override: "RTDB_LIBSSL"))
        #expect(OpenSSLLocations.of(.crypto, on: system, environment: { env[$0] })
                == OpenSSLLocations(names: ["/opt/ssl/lib/libcrypto.custom"], override: "RTDB_LIBCRYPTO"))
        // One variable alone leaves the other library's search as it is; an empty one is unset.
        let onlySSL = ["RTDB_LIBSSL": "/x/libssl", "RTDB_LIBCRYPTO": ""]
        #expect(OpenSSLLocations.of(.crypto, on: system, environment: { onlySSL[$0] })
                == OpenSSLLocations.of(.crypto, on: system, environment: none))
    }

    @Test func theInstallHintNamesEachSystemsPackagesAndTheVariables() {
        #expect(OpenSSLLocations.installHint(on: .macOS).contains("brew install openssl@3"))
        #expect(OpenSSLLocations.installHint(on: .macOS).contains("sudo port install openssl3"))
        #expect(OpenSSLLocations.installHint(on: .linux).contains("apt-get install libssl3"))
        #expect(OpenSSLLocations.installHint(on: .freeBSD).contains("pkg install openssl"))
        for system in [OpenSSLLocations.System.linux, .macOS, .freeBSD, .other] {
            #expect(OpenSSLLocations.installHint(on: system).hasSuffix("or name the libraries with RTDB_LIBSSL and RTDB_LIBCRYPTO"))
        }
    }

    #if os(Linux)
    /// A full path of `name` in the system's library folders (Debian's multiarch ones first).
    func loadedPath(_ name: String) throws -> String {
        let folders = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                       "/lib/aarch64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib", "/lib"]
        return try #require(folders.map { $0 + "/" + name }.first { access($0, R_OK) == 0 })
    }

    @Test func anOverrideWithAFullPathLoadsThatFile() throws {
        let path = try loadedPath("libssl.so.3")
        #expect(path.hasPrefix("/"))
        let lib = try DynamicLibrary.open(.of(.ssl, environment: { $0 == "RTDB_LIBSSL" ? path : nil }), hint: "hint")
        #expect(lib.name == path)
        let _: PointerFn = try lib.symbol("TLS_client_method")
    }
    #endif

    @Test func anOverrideThatCannotBeLoadedSaysWhichVariableAndHowToInstall() {
        let locations = OpenSSLLocations.of(.ssl, environment: { $0 == "RTDB_LIBSSL" ? "/nonexistent/libssl-rtdb.so" : nil })
        do {
            _ = try DynamicLibrary.open(locations, hint: OpenSSLLocations.installHint())
            Issue.record("loaded a library that does not exist")
        } catch let e as TLSError {
            guard case .unavailable(let m) = e else { Issue.record("wrong error \(e)"); return }
            #expect(m.hasPrefix(OpenSSLLocations.requirement() + ": RTDB_LIBSSL names a library that cannot be loaded: "), "\(m)")
            #expect(m.contains("/nonexistent/libssl-rtdb.so"), "\(m)")
            #expect(m.hasSuffix("; " + OpenSSLLocations.installHint()), "\(m)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
