import RTDBCLI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

exit(CLI.main(argc: CommandLine.argc, argv: CommandLine.unsafeArgv))
