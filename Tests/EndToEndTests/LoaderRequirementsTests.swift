import Foundation
import Testing
#if os(Linux)
import Glibc
#endif

/// The binary starts wherever it was built: it asks the loader for packed relative relocations
/// (GLIBC_ABI_DT_RELR) only when the C library it was built against has them (glibc 2.36),
/// so a build on Ubuntu 22.04 or Debian 11 (glibc 2.35, 2.31) runs there.
@Suite struct LoaderRequirementsTests {
    #if os(Linux)
    @Test func packedRelocationsOnlyWhereTheLoaderKnowsThem() throws {
        var text = [CChar](repeating: 0, count: 64)
        #expect(confstr(Int32(_CS_GNU_LIBC_VERSION), &text, text.count) > 0)
        let version = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let numbers = version.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
        try #require(numbers.count >= 2, "glibc version: \(version)")
        let loaderKnowsThem = (numbers[0], numbers[1]) >= (2, 36)

        let readelf = try #require(Binary.onPath("readelf"), "readelf (binutils) is needed")
        let sb = Sandbox()
        let r = sb.program([readelf, "-V", Binary.rtdb])
        #expect(r.status == 0, "\(r)")
        // The version-needs section lists the C library's versions the binary asks for.
        #expect(r.stdout.contains("GLIBC_2."), "readelf printed no version needs: \(r.stdout.prefix(400))")
        #expect(r.stdout.contains("GLIBC_ABI_DT_RELR") == loaderKnowsThem,
                "glibc \(numbers): GLIBC_ABI_DT_RELR present = \(r.stdout.contains("GLIBC_ABI_DT_RELR"))")
        // And it starts.
        #expect(sb.rtdb("--version").status == 0)
    }
    #endif
}
