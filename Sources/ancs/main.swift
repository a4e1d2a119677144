// The `ancs` command. Subcommands: bench (more arrive with the phone and watch engines).
#if canImport(Glibc)
  import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let code = await CLI.main(arguments)
exit(code)
