import RTDBCLI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

exit(CLI.main(Array(CommandLine.arguments.dropFirst())))
