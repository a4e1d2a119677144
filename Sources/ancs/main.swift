// The `ancs` command: see CLI.swift for the subcommands.
import Links

#if canImport(Glibc)
  import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
// Before any task exists: where the tasks run (CLI.runsTasksOnEventLoop, EventLoop).
do {
  let executor = getenv("ANCS_EXECUTOR").map { String(cString: $0) }
  if try CLI.runsTasksOnEventLoop(arguments, executor: executor),
    let refusal = EventLoop.unsafeTakeOverGlobalExecutor(), executor == "loop"
  {
    // Asked for by name: say why it is not so. By default Swift's pool simply stays.
    printError("ancs: ANCS_EXECUTOR=loop: \(refusal); tasks run on Swift's thread pool")
  }
} catch {
  printError("ancs: \(error.message)")
  exit(2)
}
let code = await CLI.main(arguments)
// Nothing this process started outlives it.
Children.endAll()
exit(code)
