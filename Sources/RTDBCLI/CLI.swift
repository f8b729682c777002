import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The entry point: parse, run, and turn any error into the stderr line and exit status.
/// This is the only place errors become statuses.
public enum CLI {
    /// Runs with the process's own arguments, read as bytes so that an argument that is not
    /// valid UTF-8 is refused rather than silently repaired.
    public static func main(argc: Int32, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
        // Secrets in the arguments: started again without them (returns when it is not).
        HiddenArguments.reexecWithoutSecrets(argc: argc, argv: argv)
        var args: [String] = []
        var invalid: Set<Int> = []
        for i in 1..<Int(max(argc, 1)) {
            guard let p = argv[i] else { continue }
            let bytes = UnsafeRawBufferPointer(start: p, count: strlen(p)).bindMemory(to: UInt8.self)
            if let s = String(validating: bytes, as: UTF8.self) {
                args.append(s)
            } else {
                invalid.insert(args.count)
                args.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        do {
            try HiddenArguments.restore(&args, invalid: &invalid)
        } catch let e as RTDBError {
            Diagnostics.report(e)
            return e.code.exitStatus
        } catch {
            return 1
        }
        hideSecrets(argc: argc, argv: argv)
        return main(args, invalid: invalid)
    }

    /// Options whose value is a secret.
    static let secretOptions = [Global.auth.long, Global.accessToken.long, ServeCommand.secret.long]

    /// Where `HiddenArguments` could not start the program again without its secrets:
    /// hides the values of `--auth`, `--access-token` and `--secret` in the process's own argument memory
    /// (after they were copied), so `ps` shows `***`, not the token: the arguments from the
    /// first secret on are written again, packed, with each secret as `***`, and the bytes left
    /// over at the end become NULs (which /proc/PID/cmdline still counts: its length follows
    /// the original arguments, hence the new start where possible). Where the arguments do
    /// not lie packed one after another (the kernel always packs them), each secret becomes a
    /// lone `*` followed by NULs instead.
    static func hideSecrets(argc: Int32, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) {
        let count = Int(argc)
        var words: [[UInt8]] = []
        var first: Int? = nil
        var i = 1
        while i < count {
            guard let p = argv[i] else { return }
            let arg = bytes(p)
            if arg == Array("--".utf8) { break }
            if secretOptions.contains(where: { Array($0.utf8) == arg }), i + 1 < count {
                first = first ?? i + 1
                words += [arg, Array("***".utf8)]
                i += 2
                continue
            }
            if let name = secretOptions.first(where: { arg.starts(with: Array(($0 + "=").utf8)) }) {
                first = first ?? i
                words.append(Array((name + "=***").utf8))
            } else {
                words.append(arg)
            }
            i += 1
        }
        guard let first, let start = argv[first] else { return }
        // The words from `first` on, and the rest of the arguments after `--` as they are.
        var tail = Array(words[(first - 1)...])
        for k in i..<count { if let p = argv[k] { tail.append(bytes(p)) } }
        var end = start
        for k in first..<count {
            guard let p = argv[k], p == end else { return maskInPlace(argc: argc, argv: argv) }
            end = p + strlen(p) + 1
        }
        let area = end - start
        var packed: [UInt8] = []
        for word in tail { packed += word + [0] }
        if packed.count > area { return maskInPlace(argc: argc, argv: argv) }
        packed += [UInt8](repeating: 0, count: area - packed.count)
        packed.withUnsafeBytes { if let bytes = $0.baseAddress { _ = memcpy(start, bytes, area) } }
    }

    private static func bytes(_ p: UnsafeMutablePointer<CChar>) -> [UInt8] {
        UnsafeRawBufferPointer(start: p, count: strlen(p)).map { $0 }
    }

    /// The fallback of `hideSecrets`: each secret's first byte becomes `*`, the rest NULs.
    static func maskInPlace(argc: Int32, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) {
        func mask(_ p: UnsafeMutablePointer<CChar>) {
            let n = strlen(p)
            guard n > 0 else { return }
            p[0] = 0x2A
            memset(p + 1, 0, n - 1)
        }
        var i = 1
        while i < Int(argc) {
            guard let p = argv[i] else { i += 1; continue }
            let arg = String(cString: p)
            if arg == "--" { return }
            if secretOptions.contains(arg), i + 1 < Int(argc), let v = argv[i + 1] {
                mask(v)
                i += 2
                continue
            }
            for name in secretOptions where arg.hasPrefix(name + "=") { mask(p + name.utf8.count + 1) }
            i += 1
        }
    }

    public static func main(_ args: [String], invalid: Set<Int> = []) -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        var usage: String? = nil
        var command: CommandSpec? = nil
        do {
            let parsed: Parser.Parsed
            do {
                parsed = try Parser.parse(args, invalid: invalid, command: &command)
            } catch {
                usage = command?.usage
                throw error
            }
            switch parsed {
            case .version:
                try printText(Registry.versionLine + "\n")
            case .help(let command):
                try printText(command.map(Help.command) ?? Help.overview())
            case .globalOptions:
                try printText(Help.globalOptions())
            case .guide:
                try printText(Guide.text(width: Help.width))
            case .run(let invocation):
                usage = invocation.command.usage
                do { try invocation.command.run(invocation) } catch let e as RTDBError { throw invocation.attributed(e) }
            }
            return 0
        } catch is OutputClosed {
            return 0
        } catch let exit as ExitStatus {
            return exit.status
        } catch let e as CommittedNotPrinted {
            Diagnostics.report(RTDBError(e.cause.code, e.message), committedPath: e.path)
            return CommittedNotPrinted.exitStatus
        } catch let e as Interrupted {
            Diagnostics.report(RTDBError(.notCommitted, e.message))
            return 128 + e.signal

        } catch let error as RTDBError {
            Diagnostics.report(error, usage: usage ?? (error.code == .usage ? "rtdb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]" : nil))
            return error.code.exitStatus
        } catch {
            Diagnostics.report(RTDBError(.internal, "unexpected error: \(error)"))
            return 1
        }
    }

    static func printText(_ text: String) throws {
        let out = Output(pretty: false, quiet: false)
        try out.raw(text)
        try out.flush()
    }
}

/// Ends the command with this status and nothing more on stderr: the command has already
/// said why (`watch --exec-fail stop` passes on its handler's status).
struct ExitStatus: Error {
    let status: Int32
    init(_ status: Int32) { self.status = status }
}

extension Output {
    func raw(_ text: String) throws {
        try rawBytes(Array(text.utf8))
    }
}
