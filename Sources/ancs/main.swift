// The `ancs` command: see CLI.swift for the subcommands.
import Links

#if canImport(Glibc)
  import Glibc
#endif

// Swift's tasks run on the event loop that reads the socket links (see EventLoop), unless
// ANCS_EXECUTOR=dispatch keeps Swift's default executor (for comparing the two).
if getenv("ANCS_EXECUTOR").map({ String(cString: $0) }) != "dispatch" {
  EventLoop.runSwiftTasks()
}

let arguments = Array(CommandLine.arguments.dropFirst())
let code = await CLI.main(arguments)
exit(code)
