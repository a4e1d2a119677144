// The `ancs` command: see CLI.swift for the subcommands.
import Links
import Processes
import Sockets

#if canImport(Glibc)
  import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
// Before any task exists: the loops that read this run's links, and where its tasks run
// (CLI.runsTasksOnEventLoop, EventLoop). They end with the process.
let loops: any EventLoopGroup
do {
  let executor = getenv("ANCS_EXECUTOR").map { String(cString: $0) }
  if try CLI.runsTasksOnEventLoop(arguments, executor: executor) {
    let loop = EventLoop()
    loops = loop
    if let refusal = EventLoop.unsafeTakeOverGlobalExecutor(loop), executor == "loop" {
      // Asked for by name: say why it is not so. By default Swift's pool simply stays.
      printError("ancs: ANCS_EXECUTOR=loop: \(refusal); tasks run on Swift's thread pool")
    }
  } else {
    // Tasks on Swift's pool, which spreads them over the cores; the links read by one
    // loop per core.
    loops = ThreadedEventLoopGroup()
  }
} catch {
  printError("ancs: \(error.message)")
  exit(2)
}
let code = await CLI.main(arguments, loops: loops)
// Nothing this process started outlives it.
Children.endAll()
exit(code)
