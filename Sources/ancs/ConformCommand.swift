import ATT
import Conformance
import Dispatch
import Foundation
import HCI
import Links
import Processes
import Runtime
import Sockets
import Wire

/// `ancs conform`: runs the conformance catalog (Protocol/conformance.md) against a phone.
enum ConformCommand {
  static let usage = """
    usage: ancs conform phone --connect ADDRESS [--spawn COMMAND] [options]
           ancs conform phone --bluetooth TRANSPORT [--spawn COMMAND] [options]
           ancs conform accessory --listen ADDRESS [--observe FILE|- | --spawn COMMAND] [options]
           ancs conform accessory --bluetooth TRANSPORT [--peer BDADDR] [--observe FILE|- |
                                  --spawn COMMAND] [options]
           ancs conform --list [phone|accessory]

    Judges an ANCS implementation against Protocol/conformance.md.

    phone (NP cases): the harness plays the accessory, connects to ADDRESS once per case,
    and checks the phone's answers. Cases that need the phone to post notifications use a
    control channel: with --spawn the harness starts COMMAND, writes JSON-line commands
    ({"cmd":"post",...}) to its standard input and reads one JSON answer per command from
    its standard output (the protocol of `ancs phone --commands jsonl`). Without it those
    cases are reported SKIP, never PASS.

    accessory (NC cases): the harness plays the phone, listens on ADDRESS, and judges the
    accessory that connects, once per case (the accessory must reconnect when the harness
    closes the link at the end of a case). Verdicts come from the ATT traffic. What the
    accessory shows is checked too when its event lines (Protocol/events.md, as printed by
    `ancs watch --headless`) are read: from FILE or standard input with --observe, or from
    COMMAND's standard output with --spawn, which also drives the wearer (`positive UID`,
    `negative UID`, `media COMMAND` on COMMAND's standard input). Without them those cases
    are SKIP. The harness phone publishes the Apple Media Service beside ANCS, as an iPhone
    does; the AMS/NC cases judge the accessory's use of it (--case ANCS/ leaves them out).
    Five cases wait on the accessory's own timers (its liveness check, its re-check of a
    ringing call, its wait for an unanswered command, its rewrite of the subscriptions
    after a silence, its re-check of a phone that does not share): state them with
    --liveness, --call-recheck, --command-timeout, --resubscribe-after and
    --sharing-recheck, and each of those cases gets that much longer. The case that waits
    for the rewrite is skipped unless --resubscribe-after is given.

    Over the air (--bluetooth TRANSPORT, as for ancs phone and ancs watch): judging a phone,
    the harness is a peripheral that advertises the ANCS solicitation and takes the phone's
    connection for each case (the phone must connect again when a case ends, as an iPhone
    does); judging an accessory, the harness is a central that scans for a device soliciting
    ANCS (or --peer BDADDR) and connects to it for each case. Judging an accessory, the
    harness pairs as an iPhone does (KeyboardDisplay, MITM, Secure Connections); judging a
    phone, by Just Works unless --io gives it a display.

    Progress goes to standard error: a line per case with its verdict, and one as the case
    begins on a terminal or over the air; standard output keeps the summary (or the TAP).

    options:
      --connect ADDRESS   (phone) unix:PATH or tcp:HOST:PORT where the phone listens
      --listen ADDRESS    (accessory) unix:PATH or tcp:HOST:PORT to listen on
      --spawn COMMAND     start the implementation with this shell command (a leading `ancs`
                          is this binary); it is stopped when the run ends
      --observe FILE|-    (accessory) read the accessory's event lines from FILE (followed
                          as it grows, or a named pipe) or standard input
      --case ID           run only cases whose ID starts with ID (repeatable)
      --list              list the selected cases and exit
      --timeout S         longest a case may take, in seconds (default 5), plus the
                          accessory's timers the case waits on
      --liveness S        (accessory) its silence before it checks its subscriptions
                          (default 30, as ancs watch)
      --call-recheck S    (accessory) how often it checks a ringing call (default 20)
      --command-timeout S (accessory) its wait for a command's answer (default 10)
      --resubscribe-after S  (accessory) its silence before it writes its subscriptions
                          again (no default: ancs watch's is 6 hours)
      --sharing-recheck S (accessory) how often it asks again while the phone does not
                          share (default 10, as ancs watch)
      --requires-mitm     (accessory) its maker states that it requires MITM protection
                          (a passkey or a compared number): SEC/BV-02, SEC/BI-01 and
                          SEC/BI-02 judge that; without it they are skipped
      --wait-for-accessory S  (accessory) how long the first connection may take
                          (default --timeout); none by then ends the run with exit 2
      --wait-for-phone S  (phone) how long to keep trying the first connection (default
                          0: one try; over the air --timeout); none ends the run, exit 2
      --junit FILE        write a JUnit XML report
      --tap               print a TAP report on standard output (the table goes to stderr)
      --json FILE         write a JSON report
      --html FILE         write an HTML report: every case with its verdict, rule and
                          reason, and a sequence chart of its PDUs drawn from its capture
      --capture-dir DIR   where failing cases leave ID.btsnoop, '/' as '_'
                          (default ./conform-captures, created only when a case fails)
      --bluetooth TRANSPORT  judge over the air: hci-tcp:HOST:PORT, hci-uart:DEV[,BAUD],
                          hci-user:N or l2cap:hciN (ancs phone --help tells more);
                          --timeout then defaults to 20 s
      --bonds FILE        with --bluetooth hci-*: where the harness keeps its bonds
      --capture FILE      with --bluetooth hci-*: record every HCI packet of the whole run
                          as btsnoop (Wireshark, btmon)
      --peer BDADDR       (accessory, over the air) connect to this device, not the first
                          that solicits ANCS
      --passkey N         (accessory, over the air) the harness pairs as an iPhone
                          (KeyboardDisplay, MITM asked, SC): the six digits to type when
                          the accessory shows a passkey
      --confirm yes|no    (accessory, over the air) the answer when the accessory shows a
                          number to compare. Without them, with --spawn or --observe, the
                          harness reads the accessory's number from its event lines (bond,
                          change pairing) and, with --spawn, types its own passkey or
                          answer on the accessory's input
      --io CAPABILITY     (phone, over the air) the harness accessory's display:
                          display-only (it shows a passkey) or display-yesno (it shows a
                          number to compare). With --spawn the harness reads the phone's
                          number from its event lines (bond, change pairing) and answers
                          on both sides (start that phone without --passkey or --confirm,
                          which answer unasked and report no number); otherwise it prints
                          its passkey for the phone's user and agrees to any number.
                          Without --io the accessory pairs by Just Works and SEC/BV-05 is
                          skipped
      --name NAME         (phone, over the air) the name the harness advertises
                          (default ancs-sim conform)

    examples:
      ancs conform phone --connect unix:/tmp/phone.sock \\
        --spawn "ancs phone --listen unix:/tmp/phone.sock --commands jsonl" --junit report.xml
      ancs conform accessory --listen unix:/tmp/h.sock --command-timeout 1 --liveness 2 \\
        --call-recheck 2 --resubscribe-after 3 --sharing-recheck 1 \\
        --spawn "ancs watch --connect unix:/tmp/h.sock --headless --command-timeout 1 \\
        --liveness 2 --call-recheck 2 --resubscribe-after 3 --sharing-recheck 1"
      ancs watch --connect unix:/tmp/h.sock --headless | \\
        ancs conform accessory --listen unix:/tmp/h.sock --observe -
      ancs conform accessory --bluetooth hci-user:0 --peer C0:11:22:33:44:55

    exit codes: 0 every case passed (or skipped), 1 a case failed, 2 bad usage or nothing
    to judge (no phone or accessory could be reached)
    """

  /// What both roles share: which cases, how long, where the reports go.
  struct Common {
    var prefixes: [String]
    var timeout: Double
    var junit: String?
    var tap: Bool
    var json: String?
    var html: String?
    var captureDirectory: String
    /// Judging over the air (--bluetooth), where a case may take many seconds.
    var overTheAir: Bool

    init(_ args: inout Arguments, overTheAir: Bool) throws(UsageError) {
      self.overTheAir = overTheAir
      prefixes = args.values("--case")
      timeout = try args.seconds("--timeout", in: 0.1...600) ?? (overTheAir ? 20 : 5)
      junit = try args.value("--junit")
      tap = args.flag("--tap")
      json = try args.value("--json")
      html = try args.value("--html")
      captureDirectory = try args.value("--capture-dir") ?? "conform-captures"
      // A report that cannot be written is said before the run, not after it.
      for (option, path) in [("--junit", junit), ("--json", json), ("--html", html)] {
        if let path { try Self.checkWritable(path, option) }
      }
    }

    /// `path` names a file that can be written: not a directory, in a directory this
    /// process may write to.
    static func checkWritable(_ path: String, _ option: String) throws(UsageError) {
      var isDirectory: ObjCBool = false
      if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
        throw UsageError("\(option) \(path): is a directory, not a file to write the report to")
      }
      let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
      guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw UsageError("\(option) \(path): the directory \(directory) does not exist")
      }
      guard access(directory, W_OK) == 0 else {
        throw UsageError("\(option) \(path): cannot write in \(directory) (permissions)")
      }
    }

    var duration: Duration { .milliseconds(Int64(timeout * 1000)) }
  }

  static func run(_ arguments: [String], loops: any EventLoopGroup) async throws -> Int32 {
    var args = Arguments(arguments, command: "conform")
    if args.flag("--help", "-h") {
      printLine(usage)
      return 0
    }
    let list = args.flag("--list")
    var role = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 }
    if role == nil, list, let index = arguments.firstIndex(of: "--list"), index + 1 < arguments.count,
      ["phone", "accessory"].contains(arguments[index + 1])
    {
      role = arguments[index + 1]
    }
    if let role {
      _ = args.flag(role)
      guard role == "phone" || role == "accessory" else {
        throw UsageError("conform takes phone, accessory or --list, not '\(role)'; try 'ancs conform --help'")
      }
    }
    let connect = try args.value("--connect")
    let listen = try args.value("--listen")
    let spawn = try args.value("--spawn")
    let observe = try args.value("--observe")
    let bluetooth = try BluetoothCommandLine.settings(&args, role: "conform-\(role ?? "harness")")
    let peerText = try args.value("--peer")
    let name = try args.value("--name")
    let capture = try args.value("--capture")
    let answers = try BluetoothCommandLine.pairingAnswers(&args, bluetooth: bluetooth)
    var timers = AccessoryTimers()
    var timersGiven: [String] = []
    for timer in AccessoryTimer.allCases {
      if let seconds = try args.seconds(timer.option, in: 0.01...86_400) {
        timers[timer] = .milliseconds(Int64(seconds * 1000))
        timersGiven.append(timer.option)
      }
    }
    let waitForAccessory = try args.seconds("--wait-for-accessory", in: 0...3600)
    let requiresMITM = args.flag("--requires-mitm")
    let ioText = try args.value("--io")
    let waitForPhone = try args.seconds("--wait-for-phone", in: 0...3600)
    let common = try Common(&args, overTheAir: bluetooth != nil)
    let logger = args.logger()
    try args.finish()
    if bluetooth != nil && (connect != nil || listen != nil) {
      throw UsageError("--bluetooth judges over the air: give it instead of --connect or --listen, not both")
    }
    if bluetooth == nil && (peerText != nil || name != nil || capture != nil) {
      throw UsageError("--peer, --name and --capture go with --bluetooth TRANSPORT")
    }
    if peerText != nil && role != "accessory" { throw UsageError("--peer is for conform accessory --bluetooth") }
    if let option = timersGiven.first, role != "accessory" {
      throw UsageError("\(option) states an accessory's timer: it is for conform accessory")
    }
    if waitForAccessory != nil && role != "accessory" {
      throw UsageError("--wait-for-accessory is for conform accessory")
    }
    if requiresMITM && role != "accessory" { throw UsageError("--requires-mitm is for conform accessory") }
    // The harness accessory's display: it shows what a pairing with MITM protection needs,
    // and agrees to a number it compares; it never types.
    let shows: [String: IOCapability] = ["display-only": .displayOnly, "display-yesno": .displayYesNo]
    if let ioText {
      guard role == "phone", bluetooth != nil, bluetooth?.isKernel != true else {
        throw UsageError("--io is for conform phone --bluetooth hci-*: the harness accessory's display")
      }
      guard shows[ioText] != nil else {
        throw UsageError("--io takes display-only or display-yesno, not '\(ioText)'")
      }
    }
    if waitForPhone != nil && role != "phone" { throw UsageError("--wait-for-phone is for conform phone") }
    if name != nil && role != "phone" { throw UsageError("--name is for conform phone --bluetooth") }
    let peer = try peerText.map(BluetoothCommandLine.address)

    let catalog: [ConformanceCase]
    switch role {
    case "phone": catalog = ConformanceCatalog.np
    case "accessory": catalog = ConformanceCatalog.nc
    default: catalog = ConformanceCatalog.np + ConformanceCatalog.nc
    }
    let (cases, unmatched) = ConformanceCatalog.select(catalog, prefixes: common.prefixes)
    if let prefix = unmatched.first {
      throw UsageError("no case ID starts with '\(prefix)'; 'ancs conform --list' shows them")
    }
    if list {
      printLine(ConformanceReport.list(cases))
      return 0
    }
    switch role {
    case "phone":
      if listen != nil || observe != nil { throw UsageError("--listen and --observe are for conform accessory") }
      if answers.passkey != nil || answers.confirm != nil {
        throw UsageError("--passkey and --confirm are for conform accessory: the harness pairs as the phone there")
      }
      let links: PhoneLinksUnderTest
      if let bluetooth {
        let io = ioText.flatMap { shows[$0] }
        // A spawned phone reports its number in its event lines: the harness compares it
        // (PairingRelay). Otherwise it agrees, and a person at the phone compares.
        let radio = try await BluetoothCommandLine.open(
          bluetooth, on: loops, capture: capture, logger: logger,
          security: .init(ioCapability: io ?? .noInputNoOutput, confirmsNumbers: io == nil || spawn != nil ? nil : true)
        )
        if spawn == nil, let book = BluetoothCommandLine.bonds(of: radio) {
          // A passkey the harness accessory shows is for the person at the phone.
          book.observe { event in
            if case .pairing(_, .showPasskey(let value)) = event {
              printError("conform: the accessory shows the passkey \(sixDigits(value)): type it on the phone")
            }
          }
        }
        let advertisement = Advertisement(
          name: name ?? "ancs-sim conform", solicitedServices: [BluetoothCommandLine.ancs])
        links = .overTheAir(radio, advertisement)
      } else {
        guard let connect else {
          throw UsageError(
            "conform phone needs --connect unix:PATH or tcp:HOST:PORT, or --bluetooth TRANSPORT; try 'ancs conform --help'"
          )
        }
        links = .simulated(try twoProcessAddress(connect), Keyring(), loops)
      }
      // Over a simulated link a phone that is up takes the connection at once; over the air
      // it has to find the harness first.
      let wait = waitForPhone ?? (bluetooth == nil ? 0 : common.timeout)
      // Over the air the harness accessory pairs with MITM protection only with a display.
      let pairsWithMITM = bluetooth == nil || ioText != nil
      return try await judgePhone(cases, links, spawn: spawn, wait: wait, pairsWithMITM: pairsWithMITM, common)
    case "accessory":
      if connect != nil { throw UsageError("--connect is for conform phone; the accessory role takes --listen") }
      if spawn != nil && observe != nil {
        throw UsageError("--spawn already observes the accessory's output; give --spawn or --observe, not both")
      }
      let accessoryLinks: any AccessoryLinks
      if let bluetooth {
        // The accessory may be started by --spawn; the radio is opened first, so a bad
        // transport fails before anything starts.
        // The harness is an iPhone: it drops an accessory that lost its bond, keeping its own,
        // and pairs with an iPhone's features, typing or confirming what it is given.
        let radio = try await BluetoothCommandLine.open(
          bluetooth, on: loops, capture: capture, logger: logger,
          security: .init(
            disconnectOnKeyMissing: true, ioCapability: .keyboardDisplay, mitm: true, passkey: answers.passkey,
            confirmsNumbers: answers.confirm))
        accessoryLinks = CentralLinks(
          host: radio, filter: peer.map { .address($0) } ?? .solicits(BluetoothCommandLine.solicited))
      } else {
        guard let listen else {
          throw UsageError(
            "conform accessory needs --listen unix:PATH or tcp:HOST:PORT, or --bluetooth TRANSPORT; try 'ancs conform --help'"
          )
        }
        let address = try twoProcessAddress(listen)
        let keyring = Keyring()
        do {
          accessoryLinks = ListenerLinks(listener: try address.listen(on: loops, keyring: keyring), bondBook: keyring)
        } catch {
          throw UsageError("\(error)")
        }
      }
      return try await judgeAccessory(
        cases, accessoryLinks, spawn: spawn, observe: observe, timers: timers, requiresMITM: requiresMITM,
        wait: waitForAccessory ?? common.timeout, common)
    default:
      throw UsageError("conform needs a role: ancs conform phone --connect ADDRESS or accessory --listen ADDRESS")
    }
  }

  /// Where the harness's links to the phone come from.
  enum PhoneLinksUnderTest {
    /// Connect to the phone's listening address, keeping bonds in the keyring; the loops
    /// read the links.
    case simulated(LinkAddress, Keyring, any EventLoopGroup)
    /// Advertise as an accessory and take the phone's connection.
    case overTheAir(any BluetoothRadio, Advertisement)

    func next() async throws -> any ATTBearer {
      switch self {
      case .simulated(let address, let keyring, let loops):
        return try await address.connect(on: loops, keyring: keyring)
      case .overTheAir(let radio, let advertisement): return try await radio.acceptLink(advertisement, timeout: nil)
      }
    }

    func finish() async {
      if case .overTheAir(let radio, _) = self { await radio.leave() }
    }

    /// The harness accessory's bonds on these links.
    var bonds: (any BondBook)? {
      switch self {
      case .simulated(_, let keyring, _): return keyring
      case .overTheAir(let radio, _): return BluetoothCommandLine.bonds(of: radio)
      }
    }
  }

  static func judgePhone(
    _ cases: [ConformanceCase], _ links: PhoneLinksUnderTest, spawn: String?, wait: Double, pairsWithMITM: Bool,
    _ common: Common
  ) async throws -> Int32 {
    try await finishing(links.finish) {
      try await judge(cases, links, spawn: spawn, wait: wait, pairsWithMITM: pairsWithMITM, common)
    }
  }

  /// Runs `body`, then `finish` (which leaves a controller as it was found) however the run
  /// ends: its result, an error, or a signal.
  static func finishing(_ finish: @escaping @Sendable () async -> Void, _ body: () async throws -> Int32)
    async throws -> Int32
  {
    onTerminationSignal { blocking(finish) }
    let result: Result<Int32, any Error>
    do { result = .success(try await body()) } catch { result = .failure(error) }
    await finish()
    return try result.get()
  }

  private static func judge(
    _ cases: [ConformanceCase], _ links: PhoneLinksUnderTest, spawn: String?, wait: Double, pairsWithMITM: Bool,
    _ common: Common
  ) async throws -> Int32 {
    let capturePath = try prepareCaptureDirectory(common.captureDirectory)
    var process: SpawnedPhone?
    var stimulus: JSONLineStimulus?
    if let spawn {
      let spawned = try SpawnedPhone(command: spawn)
      process = spawned
      let channel = JSONLineStimulus(channel: spawned)
      if let book = links.bonds {
        // Over the air, the number the phone shows answers the harness accessory's pairing,
        // and the harness's answers the phone's (the simulated links' pairings never ask).
        let relay = PairingRelay(
          book: book, peer: "phone",
          answerOnPeer: { answer in
            Task {
              // Bounded: a phone that never answers must not hold its channel from the cases.
              let clock = SystemClock()
              let answered = await withDeadline(clock.now + .seconds(10), on: clock) { () async -> Bool? in
                do { try await channel.answerPairing(answer) } catch {
                  printError("conform: the spawned phone did not take the pairing's answer: \(error)")
                }
                return true
              }
              if answered == nil {
                printError("conform: the spawned phone did not answer the pairing's answer within 10 s")
              }
            }
          }, say: { printError("conform: \($0)") })
        relay.start()
        spawned.tap { relay.peerReported($0) }
      }
      // The phone answers once it listens: then connecting cannot race its start-up.
      let clock = SystemClock()
      let ready = await withDeadline(clock.now + .seconds(common.timeout), on: clock) { () async -> StimulusError?? in
        do {
          try await channel.ready()
          return .some(nil)
        } catch {
          // Cut off at the deadline: the wait ends as if the phone had closed its output.
          if Task.isCancelled { return nil }
          return .some(error as? StimulusError ?? StimulusError("\(error)"))
        }
      }
      switch ready {
      case .some(.some(let error)):
        await spawned.stop()
        printError("ancs: the spawned phone did not answer: \(error)")
        return 1
      case .none:
        await spawned.stop()
        printError("ancs: the spawned phone did not answer within \(common.timeout) s")
        return 1
      case .some(.none): break
      }
      stimulus = channel
    }
    let phone = PhoneUnderTest(
      connect: { try await links.next() }, stimulus: stimulus, bonds: links.bonds, pairsWithMITM: pairsWithMITM)
    var runner = ConformanceRunner(
      phone: phone, timeout: common.duration, captureDirectory: capturePath, contactWait: seconds(wait))
    runner.keepsCaptures = common.html != nil
    let judgement = await run(cases, on: runner, common)
    await process?.stop()
    removeIfEmpty(capturePath)
    if let why = judgement.unreachable { throw UsageError("nothing to judge: \(why)") }
    return try report(judgement.results, common, lanes: .phone)
  }

  static func seconds(_ value: Double) -> Duration { .milliseconds(Int64((value * 1000).rounded())) }

  static func judgeAccessory(
    _ cases: [ConformanceCase], _ listener: any AccessoryLinks, spawn: String?, observe: String?,
    timers: AccessoryTimers, requiresMITM: Bool, wait: Double, _ common: Common
  ) async throws -> Int32 {
    try await finishing(listener.finish) {
      try await judge(
        cases, listener, spawn: spawn, observe: observe, timers: timers, requiresMITM: requiresMITM, wait: wait,
        common)
    }
  }

  private static func judge(
    _ cases: [ConformanceCase], _ listener: any AccessoryLinks, spawn: String?, observe: String?,
    timers: AccessoryTimers, requiresMITM: Bool, wait: Double, _ common: Common
  ) async throws -> Int32 {
    let capturePath = try prepareCaptureDirectory(common.captureDirectory)
    var observer: AccessoryObserver?
    var wearer: (any WearerStimulus)?
    var process: SpawnedProcess?
    if let observe {
      let watched = AccessoryObserver()
      try followLines(observe) {
        watched.push(line: $0)
      } onEnd: {
        watched.close()
      }
      observer = watched
    }
    if let spawn {
      let watched = AccessoryObserver()
      let spawned = try SpawnedProcess(command: spawn, quitLine: "quit") {
        watched.push(line: $0)
      } onEnd: {
        watched.close()
      }
      process = spawned
      observer = watched
      wearer = WatchLineWearer { line throws(StimulusError) in try spawned.send(line) }
    }
    if let observer, let book = listener.bondBook {
      // Over the air, the number the accessory shows answers the harness's pairing (the
      // simulated links' pairings never ask).
      var answerOnPeer: (@Sendable (PairingAnswer) -> Void)?
      if let spawned = process {
        answerOnPeer = { answer in try? spawned.send(PairingRelay.watchLine(answer)) }
      }
      let relay = PairingRelay(
        book: book, peer: "accessory", answerOnPeer: answerOnPeer, say: { printError("conform: \($0)") })
      relay.start()
      observer.tap { relay.peerReported($0) }
    }
    printError("conform: \(listener.waitingLine)")
    let accessory = AccessoryUnderTest(
      accept: { try await listener.nextAccessory() }, observer: observer, wearer: wearer, timers: timers,
      bonds: listener.bondBook, requiresMITM: requiresMITM)
    var runner = ConformanceRunner(
      accessory: accessory, timeout: common.duration, captureDirectory: capturePath, contactWait: seconds(wait))
    runner.keepsCaptures = common.html != nil
    let judgement = await run(cases, on: runner, common)
    await process?.stop()
    removeIfEmpty(capturePath)
    if let why = judgement.unreachable { throw UsageError("nothing to judge: \(why)") }
    return try report(judgement.results, common, lanes: .accessory)
  }

  /// Runs the cases, each shown on standard error: its verdict's line when it ends, and a
  /// line when it begins, on a terminal (where the verdict's line then takes its place) or
  /// over the air (where a case may take many seconds). Standard output stays for the report.
  static func run(_ cases: [ConformanceCase], on runner: ConformanceRunner, _ common: Common) async
    -> ConformanceRunner.Judgement
  {
    let output = ProgressOutput()
    let announce = output.isTerminal || common.overTheAir
    let results = await runner.judge(cases) { index, total, testCase in
      if announce { output.update(ConformanceReport.startLine(index, total, testCase), phase: testCase.id) }
    } progress: { index, total, result in
      output.print(ConformanceReport.progressLine(index, total, result))
    }
    output.finish()
    return results
  }

  /// Prints the summary (or TAP) and writes the reports; the exit code.
  static func report(_ results: [CaseResult], _ common: Common, lanes: ConformanceReport.Lanes) throws -> Int32 {
    let summary = ConformanceReport.summary(results)
    if common.tap {
      printLine(ConformanceReport.tap(results))
      printError(summary)
    } else {
      printLine(summary)
    }
    if let junit = common.junit { try write(ConformanceReport.junit(results), to: junit) }
    if let json = common.json { try write(ConformanceReport.json(results) + "\n", to: json) }
    if let html = common.html {
      let generated = ISO8601DateFormatter().string(from: Date())
      try write(
        ConformanceReport.html(
          results, heading: "ancs conform \(lanes.judged)", lanes: lanes, generated: generated),
        to: html)
    }
    return results.contains { $0.verdict == .failed } ? 1 : 0
  }

  /// The directory, created if needed; a path that cannot be one is a usage error.
  static func prepareCaptureDirectory(_ path: String) throws(UsageError) -> String {
    do {
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    } catch {
      throw UsageError("--capture-dir \(path): cannot create the directory (\(error.localizedDescription))")
    }
    return path
  }

  /// Leaves no empty capture directory behind when every case passed.
  static func removeIfEmpty(_ path: String) {
    if let entries = try? FileManager.default.contentsOfDirectory(atPath: path), entries.isEmpty {
      try? FileManager.default.removeItem(atPath: path)
    }
  }

  static func write(_ text: String, to path: String) throws {
    do {
      try text.write(toFile: path, atomically: true, encoding: .utf8)
    } catch {
      throw FileProblem("\(path): cannot write the report (\(error.localizedDescription))")
    }
  }
}

/// `--observe FILE|-`: standard input, a named pipe, or a regular file followed as it grows.
func followLines(
  _ path: String, onLine: @escaping @Sendable (String) -> Void, onEnd: @escaping @Sendable () -> Void
) throws(UsageError) {
  if path == "-" {
    readLines(from: FileHandle.standardInput, onLine: onLine, onEnd: onEnd)
    return
  }
  guard let handle = FileHandle(forReadingAtPath: path) else {
    throw UsageError("--observe \(path): cannot open the file for reading")
  }
  var info = stat()
  let regular = fstat(handle.fileDescriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
  readLines(from: handle, follow: regular, onLine: onLine, onEnd: onEnd)
}

/// Where the harness's links to the accessory come from: a simulated link's listener, or a
/// Bluetooth central's connections.
protocol AccessoryLinks: Sendable {
  /// What the harness prints while it waits for the first accessory.
  var waitingLine: String { get }
  func nextAccessory() async throws -> any ATTBearer
  /// The harness phone's bonds on these links, if they keep any.
  var bondBook: (any BondBook)? { get }
  /// Closes, leaving a controller as it was found.
  func finish() async
}

extension ListenerLinks: AccessoryLinks {
  var waitingLine: String { "listening on \(name); waiting for the accessory" }
  func nextAccessory() async throws -> any ATTBearer { try await listener.accept() }
}

extension CentralLinks: AccessoryLinks {
  var waitingLine: String { "\(name)" }
  var bondBook: (any BondBook)? { BluetoothCommandLine.bonds(of: host) }

  func nextAccessory() async throws -> any ATTBearer {
    try await host.connectLink(scanningFor: filter, timeout: .seconds(60))
  }
}
