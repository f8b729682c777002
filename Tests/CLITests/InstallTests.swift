import Foundation
import Testing

// `make install` puts exactly five files under $(DESTDIR)$(PREFIX) and `make uninstall` removes
// exactly those. RTDB_BIN installs the binary this test run built, so no release build is
// needed here (`make install` without it runs `swift build -c release`).

@Suite("make install")
struct InstallTests {
    static let installed = [
        "usr/local/bin/rtdb",
        "usr/local/share/bash-completion/completions/rtdb",
        "usr/local/share/fish/vendor_completions.d/rtdb.fish",
        "usr/local/share/man/man1/rtdb.1",
        "usr/local/share/zsh/site-functions/_rtdb",
    ]

    /// The files (not folders) below `root`, relative to it, sorted.
    static func files(under root: URL) -> [String] {
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isDirectoryKey]) else { return [] }
        var out: [String] = []
        let base = root.resolvingSymlinksInPath().path + "/"
        for case let url as URL in walker {
            if (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true { continue }
            let full = url.resolvingSymlinksInPath().path
            out.append(full.hasPrefix(base) ? String(full.dropFirst(base.count)) : full)
        }
        return out.sorted()
    }

    @Test("install then uninstall into a DESTDIR touches exactly the five files")
    func installUninstall() throws {
        let make = try requireTool("make")
        let dest = try TempDir()
        let common = ["-C", Package.root.path, "PREFIX=/usr/local", "DESTDIR=\(dest.url.path)"]

        let install = try run(make, common + ["install", "RTDB_BIN=\(try Package.rtdb())"], timeout: 110)
        try #require(install.status == 0, "make install failed (\(install.status)):\n\(install.stdout)\(install.stderr)")
        #expect(Self.files(under: dest.url) == Self.installed)
        let bin = dest.path("usr/local/bin/rtdb")
        #expect(FileManager.default.isExecutableFile(atPath: bin))
        let version = try run(bin, ["--version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("rtdb "), "the installed rtdb does not run: \(version.stderr)")
        for (installed, source) in [("usr/local/share/man/man1/rtdb.1", "man/rtdb.1"),
                                    ("usr/local/share/bash-completion/completions/rtdb", "completions/rtdb.bash"),
                                    ("usr/local/share/zsh/site-functions/_rtdb", "completions/_rtdb"),
                                    ("usr/local/share/fish/vendor_completions.d/rtdb.fish", "completions/rtdb.fish")] {
            #expect(FileManager.default.contentsEqual(atPath: dest.path(installed), andPath: Package.file(source).path),
                    "\(installed) is not a copy of \(source)")
        }

        let uninstall = try run(make, common + ["uninstall"], timeout: 60)
        try #require(uninstall.status == 0, "make uninstall failed (\(uninstall.status)):\n\(uninstall.stdout)\(uninstall.stderr)")
        #expect(Self.files(under: dest.url) == [], "make uninstall left files behind")
    }

    @Test("make uninstall leaves other files in the same folders alone")
    func uninstallOnlyOwnFiles() throws {
        let make = try requireTool("make")
        let dest = try TempDir()
        let bin = dest.url.appendingPathComponent("usr/local/bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try Data("#!/bin/sh\n".utf8).write(to: bin.appendingPathComponent("rtdb-other"))
        let r = try run(make, ["-C", Package.root.path, "PREFIX=/usr/local", "DESTDIR=\(dest.url.path)", "uninstall"])
        #expect(r.status == 0, "make uninstall failed on an empty DESTDIR: \(r.stderr)")
        #expect(Self.files(under: dest.url) == ["usr/local/bin/rtdb-other"])
    }
}
