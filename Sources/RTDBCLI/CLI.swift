import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The entry point: parse, run, and turn any error into the stderr line and exit status.
/// This is the only place errors become statuses.
public enum CLI {
    public static func main(_ args: [String]) -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        var usage: String? = nil
        do {
            switch try Parser.parse(args) {
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

extension Output {
    func raw(_ text: String) throws {
        try rawBytes(Array(text.utf8))
    }
}
