import Bench
import Links
import Processes
import Sockets

#if canImport(Glibc)
  import Glibc
#endif

enum CLI {
  static let version = "0.1.0"

  static let usage = """
    ancs \(version): a simulator of Apple's Notification Center Service (ANCS)

    usage: ancs <subcommand> [options]

    subcommands:
      phone      run a simulated iPhone (ANCS server) with a console
      watch      run a simulated watch (ANCS client) against a phone
      demo       phone and watch in one process, playing a scenario
      conform    judge a phone or an accessory against the conformance catalog
                 (Protocol/conformance.md)
      bench      measure codec, reassembly and GATT throughput; predict air time (--air)
      inspect    read a capture (btsnoop, PacketLogger, pcap): the ANCS and AMS timeline in it

    options:
      --help     show help (also after a subcommand)
      --version  print the version

    exit codes: 0 success, 1 failure while running, 2 bad usage or input

    environment:
      ANCS_EXECUTOR  where tasks run: `loop`, the one thread that also reads the sockets
                 (the default, except for `bench --fleet`), or `dispatch`, Swift's own
                 thread pool, the sockets then read by one thread per core
                 (BENCHMARKS.md compares them)
    """

  /// Whether this run's tasks go on the event loop (`EventLoop.unsafeTakeOverGlobalExecutor`), from the
  /// arguments and ANCS_EXECUTOR. The loop by default: a phone, a watch or a demo is one
  /// hand-off after another, which one thread does without waking another. `bench --fleet`
  /// keeps Swift's pool: its process hosts a thousand independent watches, whose work the
  /// pool spreads over the cores, and their links are read by one loop per core
  /// (`ThreadedEventLoopGroup`).
  static func runsTasksOnEventLoop(_ arguments: [String], executor: String?) throws(UsageError) -> Bool {
    switch executor {
    case nil, "": return !(arguments.first == "bench" && arguments.contains("--fleet"))
    case "loop": return true
    case "dispatch": return false
    case let other?: throw UsageError("ANCS_EXECUTOR=\(other): expected loop or dispatch")
    }
  }

  static let benchUsage = """
    usage: ancs bench [--seconds S] [--filter NAME] [--notifications M]
           ancs bench --air PHY,CI,MTU,DLE [--scenario FILE]
           ancs bench --fleet N [--notifications M]

    Measures ANCS codec rates, Data Source reassembly throughput at MTU 23 and 185, and GATT
    write-with-response round trips, and prints a Markdown table (as in BENCHMARKS.md).
    Build in release mode first: swift build -c release.

    With --air it predicts instead how long a scenario takes over an LE link (the air-time
    model of Protocol/ATT.md): from the connection until the watch shows every notification
    the scenario posts, already on the phone, and for one notification posted later.

    With --fleet it starts one phone process (ancs phone --commands jsonl) and connects N
    watches of its own to it over Unix sockets; the phone posts M notifications (default
    10000), removing all but every 100th once 50 newer ones exist. It reports the phone's
    memory per session, notifications shown per second across the fleet, the time for one
    notification to reach every watch, and open files; it exits 1 unless every watch ends
    with exactly the phone's notifications and the phone's open files return to their
    baseline once all have disconnected. Its progress goes to standard error: one line
    rewritten in place on a terminal, otherwise a line per phase and one every 15 s.

    options:
      --seconds S          time per case (default 1.0)
      --filter NAME        only cases whose key contains NAME (ns-decode, ns-encode, cp, ds,
                           reassembly, gatt-memory, gatt-unix, e2e-memory, e2e-unix,
                           e2e-sessions)
      --air PHY,CI,MTU,DLE PHY 1m, 2m, coded-s2 or coded-s8; connection interval 7.5 to
                           4000 ms in steps of 1.25; ATT MTU 23-517; LL data length 27-251
      --scenario FILE      with --air: a scenario file, or `demo` (the default)
      --fleet N            1 to 5000 watch sessions (each needs an open file in both
                           processes: the soft limit is raised to the hard one)
      --notifications M    notifications posted, 1 to 1000000: with --fleet (default 10000),
                           or through the end-to-end cases e2e-memory and e2e-unix
                           (default 20000)

    example:
      ancs bench --seconds 2 --filter reassembly
      ancs bench --air 2m,30ms,185,251 --scenario demo
      ancs bench --fleet 1000 --notifications 10000
    """

  static func main(_ arguments: [String], loops: any EventLoopGroup) async -> Int32 {
    do {
      guard let first = arguments.first else {
        print(usage)
        return 0
      }
      switch first {
      case "--help", "-h", "help":
        print(usage)
        return 0
      case "--version":
        print("ancs \(version)")
        return 0
      case "bench":
        return try await bench(Array(arguments.dropFirst()), loops: loops)
      case "phone":
        return try await PhoneCommandLine.run(Array(arguments.dropFirst()), loops: loops)
      case "demo":
        return try await DemoCommand.run(Array(arguments.dropFirst()), loops: loops)
      case "conform": return try await ConformCommand.run(Array(arguments.dropFirst()), loops: loops)
      case "watch":
        return try await WatchCommand.run(Array(arguments.dropFirst()), loops: loops)
      case "inspect":
        return try await InspectCommand.run(Array(arguments.dropFirst()))
      default:
        throw UsageError("unknown subcommand '\(first)'; try 'ancs --help'")
      }
    } catch let error as UsageError {
      printError("ancs: \(error.message)")
      return 2
    } catch {
      printError("ancs: \(error)")
      return 1
    }
  }

  static func bench(_ arguments: [String], loops: any EventLoopGroup) async throws -> Int32 {
    var args = Arguments(arguments, command: "bench")
    if args.flag("--help", "-h") {
      print(benchUsage)
      return 0
    }
    var bench = Bench(loops: loops)
    let seconds = try args.seconds("--seconds", in: 0.01...600)
    bench.filter = try args.value("--filter")
    let air = try args.value("--air").map(airParameters)
    let scenario = try args.value("--scenario")
    let fleet = try args.integer("--fleet", in: 1...5000)
    let notifications = try args.integer("--notifications", in: 1...1_000_000)
    try args.finish()
    if let fleet {
      if seconds != nil || bench.filter != nil || air != nil || scenario != nil {
        throw UsageError(
          "--fleet goes alone (with --notifications); --seconds, --filter, --air and --scenario are for the other benches"
        )
      }
      return try await FleetBench(sessions: fleet, notifications: notifications ?? 10_000, loops: loops).run()
    }
    if let seconds { bench.seconds = seconds }
    if let notifications { bench.endToEndCount = notifications }
    if notifications != nil && (air != nil || !["e2e-memory", "e2e-unix"].contains(where: bench.wanted)) {
      throw UsageError("--notifications goes with --fleet N or the end-to-end cases (e2e-memory, e2e-unix)")
    }
    if let air {
      let name = scenario ?? "demo"
      let prediction = AirBench(parameters: air, scenario: try PhoneCommandLine.loadScenario(name), label: name)
      bench.printTable(try await prediction.run())
      return 0
    }
    if scenario != nil { throw UsageError("--scenario goes with --air (the scenario whose air time is predicted)") }
    try await bench.run()
    return 0
  }
}
