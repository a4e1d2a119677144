import ATT
import Links
import Phone
import Watch

enum DemoCommand {
  static let usage = """
    usage: ancs demo [options]

    A simulated iPhone and a simulated watch in one process, joined by the in-memory link,
    playing a scenario (the built-in demo unless --scenario says otherwise). Shows the
    watch face in a terminal; prints the watch's JSON events (Protocol/events.md) when
    standard output is not a terminal, or with --headless. A headless demo takes the watch
    commands `positive UID`, `negative UID` and `quit` on standard input.

    options:
      --scenario FILE    a scenario file (Protocol/scenario.md), or `demo`
      --loop             play the scenario again and again
      --duration S       stop after S seconds (default: when the scenario ends, plus 2 s)
      --headless         JSON lines instead of the watch face
      --quirk NAME[=N]   phone misbehaviour to reproduce (see `ancs phone --help`)
      -v, -vv            log to stderr

    example:
      ancs demo
      ancs demo --headless --duration 10 | head

    exit codes: 0 done, 2 bad usage or a bad scenario
    """

  static func run(_ arguments: [String]) async throws -> Int32 {
    var args = Arguments(arguments, command: "demo")
    if args.flag("--help", "-h") {
      printLine(usage)
      return 0
    }
    let scenario = try PhoneCommandLine.loadScenario(try args.value("--scenario") ?? "demo")
    let loop = args.flag("--loop")
    let duration = try args.seconds("--duration", in: 0.1...86_400)
    let headless = args.flag("--headless")
    let quirks = try PhoneCommandLine.quirkSet(args.values("--quirk"))
    let options = try WatchCommand.options(&args)
    let logger = args.logger()
    try args.finish()

    let phone = try Phone(quirks: quirks, logger: logger)
    let engine = WatchEngine(options: options, logger: logger) {
      let (central, peripheral) = MemoryLink.pair()
      Task { await phone.serve(central) }
      return peripheral
    }
    let player = Task {
      try? await ScenarioPlayer(scenario, loop: loop).play(on: phone, clock: SystemClock())
    }
    // Without --duration a single round ends the demo shortly after its last step.
    let length =
      duration.map { Duration.milliseconds(Int($0 * 1000)) }
      ?? (loop ? nil : ScenarioPlayer(scenario).roundLength + .seconds(2))
    if !headless && stdoutIsTerminal {
      printError("ancs: the terminal watch face is not built yet; printing JSON events (as --headless)")
    }
    let code = await WatchCommand.runHeadless(engine, expectReconnect: true, until: length)
    player.cancel()
    phone.disconnectAll()
    return code
  }
}
