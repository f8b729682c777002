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
        hideSecrets(argc: argc, argv: argv)
        return main(args, invalid: invalid)
    }

    /// Options whose value is a secret.
    static let secretOptions = [Global.auth.long, Global.accessToken.long]

    /// Overwrites the values of `--auth` and `--access-token` in the process's own argument
    /// memory (after they were copied), so `ps` and /proc/PID/cmdline show `x`s, not the token.
    static func hideSecrets(argc: Int32, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) {
        var i = 1
        while i < Int(argc) {
            guard let p = argv[i] else { i += 1; continue }
            let arg = String(cString: p)
            if arg == "--" { return }
            if secretOptions.contains(arg), i + 1 < Int(argc), let v = argv[i + 1] {
                memset(v, 0x78, strlen(v))
                i += 2
                continue
            }
            for name in secretOptions where arg.hasPrefix(name + "=") {
                let skip = name.utf8.count + 1
                memset(p + skip, 0x78, strlen(p) - skip)
            }
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
                try printText("rtdb \(Registry.version)\n")
            case .help(let command):
                try printText(command.map(Help.command) ?? Help.overview())
            case .run(let invocation):
                usage = invocation.command.usage
                try invocation.command.run(invocation)
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
