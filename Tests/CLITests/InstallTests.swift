import Foundation
import Testing

// `make install` puts exactly five files under $(DESTDIR)$(PREFIX) and `make uninstall` removes
// exactly those. RTDB_BIN installs the binary this test run built, so no release build is
// needed here (`make install` without it builds the release binary when a source is newer).

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

    /// A copy of the Makefile, man page and completions in a scratch folder with a stand-in
    /// source tree and release binary: what make decides to run is seen without a build.
    func scratchTree() throws -> TempDir {
        let tree = try TempDir()
        let fm = FileManager.default
        for folder in ["Sources/rtdb", ".build/release", "man", "completions"] {
            try fm.createDirectory(at: tree.url.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        for file in ["Makefile", "man/rtdb.1", "completions/rtdb.bash", "completions/_rtdb", "completions/rtdb.fish"] {
            try fm.copyItem(at: Package.file(file), to: tree.url.appendingPathComponent(file))
        }
        try Data("// manifest\n".utf8).write(to: tree.url.appendingPathComponent("Package.swift"))
        try Data("// source\n".utf8).write(to: tree.url.appendingPathComponent("Sources/rtdb/main.swift"))
        let binary = tree.url.appendingPathComponent(".build/release/rtdb")
        try Data("#!/bin/sh\necho stand-in\n".utf8).write(to: binary)
        // The binary is newer than every source, as right after `make build`.
        try fm.setAttributes([.posixPermissions: 0o755, .modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: binary.path)
        return tree
    }

    @Test("make install after make build installs the built binary without building again")
    func installDoesNotBuildAgain() throws {
        let make = try requireTool("make")
        let tree = try scratchTree()
        let dest = try TempDir()
        // SWIFT=false: any build attempt fails the install.
        let install = try run(make, ["-C", tree.url.path, "SWIFT=false", "PREFIX=/usr/local", "DESTDIR=\(dest.url.path)", "install"])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        #expect(!install.stdout.contains("build -c release"), "\(install.stdout)")
        #expect(Self.files(under: dest.url) == Self.installed)
        #expect(FileManager.default.contentsEqual(atPath: dest.path("usr/local/bin/rtdb"),
                                                  andPath: tree.url.appendingPathComponent(".build/release/rtdb").path))

        // A source changed since: install builds first (here: shown, not run).
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(120)],
                                              ofItemAtPath: tree.url.appendingPathComponent("Sources/rtdb/main.swift").path)
        let dry = try run(make, ["-C", tree.url.path, "-n", "SWIFT=swift", "PREFIX=/usr/local", "DESTDIR=\(dest.url.path)", "install"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("swift build -c release"), "\(dry.stdout)")
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
