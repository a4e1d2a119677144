import Links

#if canImport(Glibc)
  import Glibc
#endif

/// A usage error: one line on stderr, exit code 2.
struct UsageError: Error {
  var message: String
  init(_ message: String) { self.message = message }
}

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

    options:
      --help     show help (also after a subcommand)
      --version  print the version

    exit codes: 0 success, 1 failure while running, 2 bad usage or input
    """

  static let benchUsage = """
    usage: ancs bench [--seconds S] [--filter NAME]
           ancs bench --air PHY,CI,MTU,DLE [--scenario FILE]

    Measures ANCS codec rates, Data Source reassembly throughput at MTU 23 and 185, and GATT
    write-with-response round trips, and prints a Markdown table (as in BENCHMARKS.md).
    Build in release mode first: swift build -c release.

    With --air it predicts instead how long a scenario takes over an LE link (the air-time
    model of Protocol/ATT.md): from the connection until the watch shows every notification
    the scenario posts, already on the phone, and for one notification posted later.

    options:
      --seconds S          time per case (default 1.0)
      --filter NAME        only cases whose key contains NAME (ns-decode, ns-encode, cp, ds,
                           reassembly, gatt-memory, gatt-unix)
      --air PHY,CI,MTU,DLE PHY 1m, 2m, coded-s2 or coded-s8; connection interval 7.5 to
                           4000 ms in steps of 1.25; ATT MTU 23-517; LL data length 27-251
      --scenario FILE      with --air: a scenario file, or `demo` (the default)

    example:
      ancs bench --seconds 2 --filter reassembly
      ancs bench --air 2m,30ms,185,251 --scenario demo
    """

  static func main(_ arguments: [String]) async -> Int32 {
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
        return try await bench(Array(arguments.dropFirst()))
      case "phone":
        return try await PhoneCommandLine.run(Array(arguments.dropFirst()))
      case "demo":
        return try await DemoCommand.run(Array(arguments.dropFirst()))
      case "conform": return try await ConformCommand.run(Array(arguments.dropFirst()))
      case "watch":
        return try await WatchCommand.run(Array(arguments.dropFirst()))
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

  static func bench(_ arguments: [String]) async throws -> Int32 {
    var bench = Bench()
    var air: AirParameters?
    var scenario: String?
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--help", "-h":
        print(benchUsage)
        return 0
      case "--seconds":
        guard let text = rest.popFirst(), let seconds = Double(text), seconds > 0, seconds <= 600 else {
          throw UsageError("--seconds needs a number of seconds between 0 and 600")
        }
        bench.seconds = seconds
      case "--filter":
        guard let name = rest.popFirst() else { throw UsageError("--filter needs a name") }
        bench.filter = name
      case "--air":
        guard let text = rest.popFirst() else { throw UsageError("--air needs PHY,CI,MTU,DLE, e.g. 2m,30ms,185,251") }
        air = try airParameters(text)
      case "--scenario":
        guard let name = rest.popFirst() else { throw UsageError("--scenario needs a file or `demo`") }
        scenario = name
      default:
        throw UsageError("unknown option '\(argument)' for bench; try 'ancs bench --help'")
      }
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
