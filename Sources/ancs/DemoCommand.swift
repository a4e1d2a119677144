import ATT
import Links
import Phone
import Processes
import Runtime
import Sockets
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
      --duration S       stop after S seconds (default: the watch face runs until q;
                         JSON events stop when the scenario ends, plus 2 s; the scenario
                         starts when the watch has subscribed)
      --headless         JSON lines instead of the watch face
      --phone-log FILE   append the phone's events as JSON lines (the actions it received)
      --air PHY,CI,MTU,DLE  delay the link as an LE link would (e.g. 2m,30ms,185,251;
                         Protocol/ATT.md, "Air-time model"); the watch asks for that MTU
    \(FaceCommandLine.usage(column: 21))
      --quirk NAME[=N]   phone misbehaviour to reproduce (see `ancs phone --help`)
      -v, -vv            log to stderr

    example:
      ancs demo
      ancs demo --mute social --no-color
      ancs demo --headless --duration 10 | head

    exit codes: 0 done, 2 bad usage or a bad scenario
    """

  static func run(_ arguments: [String], loops: any EventLoopGroup) async throws -> Int32 {
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
    var options = try WatchCommand.options(&args)
    let face = try FaceCommandLine.settings(&args)
    let phoneLog = try args.value("--phone-log")
    let air = try args.value("--air").map { text throws(UsageError) in try airParameters(text) }
    let logger = args.logger()
    try args.finish()

    // Phone and watch on the one loop (the default), which hands each PDU from one to the
    // other in place over the in-memory link.
    let eventLoop = loops as? EventLoop
    let phone = try Phone(quirks: quirks, logger: logger, executor: eventLoop)
    if let phoneLog { try FaceCommandLine.phoneLog(phone, path: phoneLog) }
    if let air { options.mtu = UInt16(air.mtu) }
    let engine = WatchEngine(options: options, logger: logger, executor: eventLoop) {
      let (central, peripheral): (any ATTBearer, any ATTBearer) =
        if let air { AirLink.pair(air, clock: SystemClock()) } else { MemoryLink.pair(on: eventLoop) }
      Task { await phone.serve(central) }
      return peripheral
    }
    // The scenario plays to the watch: from its first session, however long the watch took
    // to connect, pair and subscribe (a step before that could come and go unseen). Without
    // --duration a single round ends the demo 2 s after its last step.
    // Let go of once the session has started: a stream kept would hold every later event.
    let waiting = Locked<EventStream<PhoneEvent>?>(phone.events())
    let endsAfterRound = duration == nil && !loop
    let player = Task {
      if let events = waiting.withLock({ $0.take() }) {
        for await event in events {
          if case .sessionStarted = event { break }
        }
      }
      guard !Task.isCancelled else { return }
      try? await ScenarioPlayer(scenario, loop: loop).play(on: phone, clock: SystemClock())
      guard endsAfterRound else { return }
      try? await ContinuousClock().sleep(for: .seconds(2))
      engine.stop()
    }
    let length = duration.map { Duration.milliseconds(Int($0 * 1000)) }
    let code: Int32
    let faceLength = duration.map { Duration.milliseconds(Int($0 * 1000)) }
    if !headless && stdoutIsTerminal, let shown = await FaceCommandLine.run(engine, face, until: faceLength) {
      code = shown
    } else {
      code = await WatchCommand.runHeadless(
        engine, expectReconnect: true, until: length, endOfInputStops: !endsAfterRound)
    }
    player.cancel()
    phone.disconnectAll()
    return code
  }
}
