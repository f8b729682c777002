import Testing
@testable import RTDBNet

/// Loading OpenSSL on demand, and the error when it cannot be loaded.
@Suite struct OpenSSLTests {
    @Test func aMissingLibraryIsUnavailableWithAClearMessage() {
        do {
            _ = try DynamicLibrary.open(["libssl-rtdb-does-not-exist.so.3"])
            Issue.record("opened a library that does not exist")
        } catch let e as TLSError {
            guard case .unavailable(let m) = e else { Issue.record("wrong error \(e)"); return }
            #expect(m.hasPrefix("TLS needs OpenSSL 3 (libssl3): "), "\(m)")
            #expect(m.contains("libssl-rtdb-does-not-exist.so.3"), "\(m)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func aMissingFunctionIsUnavailable() throws {
        let lib = try DynamicLibrary.open(["libcrypto.so.3"])
        #expect(throws: TLSError.unavailable("TLS needs OpenSSL 3 (libssl3): libcrypto.so.3 has no rtdb_no_such_function")) {
            let _: PointerFn = try lib.symbol("rtdb_no_such_function")
        }
    }

    @Test func bothLibrariesLoadOnDemand() throws {
        _ = try OpenSSL.ssl.get()
        #expect(OpenSSL.isLoaded("libssl.so.3"))
        #expect(OpenSSL.isLoaded("libcrypto.so.3"))
    }
}
