import ANCS
import ATT
import Dispatch
import HCI
import Links
import Phone
import Processes
import Runtime
import Sockets
import Wire

#if canImport(Glibc)
  import Glibc
#endif

enum PhoneCommandLine {
  static let usage = """
    usage: ancs phone --listen ADDRESS [options]
           ancs phone --bluetooth TRANSPORT [--peer BDADDR] [options]

    Runs a simulated iPhone: an ANCS server in the GATT database of a real iPhone (GAP,
    Continuity, Nearby, Battery, Current Time, Device Information, ANCS and the Apple Media
    Service's shape, in an iPhone's order and handles), waiting for watches on ADDRESS. As
    an iPhone does, it starts the MTU exchange, reads each watch's name, and asks before it
    shares notifications with it. It keeps bonds (in memory on a simulated link, in a file
    over Bluetooth) and, as an iPhone, drops a watch that lost its bond until you type
    `forget ADDRESS`. Type commands on standard input (`help` lists them), or play a
    scenario. It serves until `quit`, Ctrl-C or SIGTERM; end of input alone does not stop
    it.

    At a terminal the console edits the line (emacs keys), recalls earlier lines with Up and
    Down, searches them with Ctrl-R and completes commands, apps, keys and UIDs with Tab; the
    last 1000 lines are kept in ~/.ancs_phone_history. Piped input is read as it comes.

    options:
      --listen ADDRESS     unix:PATH (a socket file, mode 0600) or tcp:HOST:PORT
                           (loopback when HOST is omitted: tcp::5000)
      --bluetooth TRANSPORT
                           act as the iPhone over Bluetooth instead: scan for a device that
                           solicits ANCS or AMS, connect, pair when asked (as an iPhone:
                           KeyboardDisplay, MITM asked, Secure Connections; Just Works with
                           an accessory that has no display), serve it; scan again when it
                           leaves. TRANSPORT is
                             hci-tcp:HOST:PORT   a virtual controller (Bumble's tcp-server)
                             hci-uart:DEV[,BAUD] a controller with H4 firmware on a serial
                                                 port (RTS/CTS; default 1000000 baud)
                             hci-user:N          controller hciN to this program alone
                                                 (Linux HCI user channel; CAP_NET_ADMIN,
                                                 the controller powered off in BlueZ)
                             l2cap:hciN          the Linux kernel's own Bluetooth host on
                                                 hciN (it pairs and keeps the bonds)
      --peer BDADDR        with --bluetooth: connect to this address instead
      --bonds FILE         with --bluetooth hci-*: where bonds and this device's address are
                           kept (mode 0600; default ~/.local/state/ancs-sim/phone.bonds.json);
                           `forget` at the console forgets one, or all
      --passkey N          with --bluetooth hci-*: the six-digit passkey to type when an
                           accessory shows one (Passkey Entry); without it such a pairing
                           fails with Passkey Entry Failed
      --confirm yes|no     with --bluetooth hci-*: the answer when an accessory shows a
                           number to compare (Numeric Comparison); without it, no
      --scenario FILE      play a scenario file (Protocol/scenario.md); `demo` is built in
      --loop               play the scenario again and again
      --ios VERSION        behave as this iOS generation (Protocol/iPhone.md, iOS profiles):
                           the ATT MTU it asks for, Device Information, the quirks of
                           its era; default \(IOSProfile.current.name); `--ios list` lists them
      --gatt-layout LAYOUT iphone (default) or minimal: only Service Changed, ANCS,
                           Current Time and Battery, no security on Battery, and the
                           watch's MTU offer decides (the database of ancs-sim 1.0)
      --share-notifications POLICY
                           ask: each watch that subscribes must be allowed at the
                           console (`allow N`) before it gets a notification, as iOS 13
                           and later ask; until then its Control Point writes are
                           answered Write Not Permitted. allow: every watch gets them;
                           deny: none until allowed. Default: ask at the console,
                           allow with --commands jsonl or --ios 12 and older
      --ancs-after-encryption on|off
                           on: an accessory discovers ANCS only once its link is
                           encrypted, and is told with Service Changed then, as current
                           iPhones do; off: ANCS is always there (its characteristics
                           still need encryption). Default: on with --ios 18, off
                           otherwise and with --gatt-layout minimal
      --quirk NAME[=N]     reproduce a documented iOS misbehaviour (repeatable):
    \(Quirks.catalog.map { "                       \($0.name)\($0.valueName.map { "[=\($0)]" } ?? ""): \($0.summary)" }.joined(separator: "\n"))
      --commands MODE      console (default): readable commands and feedback (line
                           editing at a terminal, as above);
                           jsonl: one JSON command per input line, one JSON answer per
                           output line, phone events as JSON lines too
      --no-events          print no phone events (watch connected, answered, ...); with
                           jsonl only the answers: for scripts driving many watches
      --capture FILE       record a btsnoop capture of every link (Wireshark, btmon)
      -v, -vv              log to stderr (info, debug)

    testing:
      --fault NAME         break one rule of Protocol/ANCS.md on purpose (repeatable). Fault
                           switches exist only to prove the conformance suite can fail
                           (Protocol/conformance.md, Fault switches); never use them otherwise:
    \(PhoneFaults.catalog.map { "                       \($0.name)" }.joined(separator: "\n"))

    example:
      ancs phone --listen unix:/tmp/phone.sock --scenario demo --share-notifications allow
      echo '{"cmd":"post","app":"com.example.chat","title":"Hi"}' | ancs phone --listen tcp::5000 --commands jsonl

    exit codes: 0 after quit or a signal, 2 for bad usage, a bad scenario or an address in use
    """

  static func run(_ arguments: [String], loops: any EventLoopGroup) async throws -> Int32 {
    var args = Arguments(arguments, command: "phone")
    if args.flag("--help", "-h") {
      printLine(usage)
      return 0
    }
    let profileName = try args.value("--ios")
    if profileName == "list" {
      printLine(profileList())
      return 0
    }
    let text = try args.value("--listen")
    let bluetooth = try BluetoothCommandLine.settings(&args, role: "phone")
    let peerText = try args.value("--peer")
    if text == nil && bluetooth == nil {
      throw UsageError(
        "phone needs --listen unix:PATH or tcp:HOST:PORT, or --bluetooth TRANSPORT; try 'ancs phone --help'")
    }
    if text != nil && bluetooth != nil { throw UsageError("--listen and --bluetooth: give one, not both") }
    if peerText != nil && bluetooth == nil { throw UsageError("--peer goes with --bluetooth TRANSPORT") }
    let peer = try peerText.map(BluetoothCommandLine.address)
    let answers = try BluetoothCommandLine.pairingAnswers(&args, bluetooth: bluetooth)
    let scenarioName = try args.value("--scenario")
    let loop = args.flag("--loop")
    let profile = try profileName.map(iOSProfile) ?? .current
    let layoutName = try args.value("--gatt-layout") ?? GATTLayout.iPhone.rawValue
    guard let layout = GATTLayout(rawValue: layoutName) else {
      throw UsageError("--gatt-layout takes iphone or minimal, not '\(layoutName)'")
    }
    let quirks = try quirkSet(args.values("--quirk"), profile: profile)
    let mode = try args.value("--commands") ?? "console"
    // A person at the console is asked, as iOS asks; a script has nobody to ask.
    let sharingName =
      try args.value("--share-notifications") ?? (profile.asksToShare && mode == "console" ? "ask" : "allow")
    guard let sharing = SharingPolicy(rawValue: sharingName) else {
      throw UsageError("--share-notifications takes allow, ask or deny, not '\(sharingName)'")
    }
    let afterEncryption = try args.value("--ancs-after-encryption")
    guard afterEncryption == nil || afterEncryption == "on" || afterEncryption == "off" else {
      throw UsageError("--ancs-after-encryption takes on or off, not '\(afterEncryption ?? "")'")
    }
    var faults = PhoneFaults()
    for name in args.values("--fault") {
      do { try faults.enable(name) } catch { throw UsageError("\(error)") }
    }
    guard mode == "console" || mode == "jsonl" else {
      throw UsageError("--commands takes console or jsonl, not '\(mode)'")
    }
    let capture = try args.value("--capture")
    let quiet = args.flag("--no-events")
    let logger = args.logger()
    try args.finish()
    if loop && scenarioName == nil { throw UsageError("--loop needs --scenario") }

    let address = try text.map(twoProcessAddress)
    // Everything is checked before anything is opened.
    let scenario = try scenarioName.map(loadScenario)
    let writer = try bluetooth == nil ? capture.map(captureWriter) : nil
    // On the one loop that reads every link (the default), the phone runs there and the
    // loop hands it each PDU in place; with a loop per core, it keeps an executor of its own.
    let phone = try Phone(
      quirks: quirks, faults: faults,
      settings: PhoneSettings(
        layout: layout, profile: profile, sharing: sharing, ancsAfterEncryption: afterEncryption.map { $0 == "on" }),
      logger: logger, executor: loops as? EventLoop)
    await registerCommonApps(phone)
    // Every watch holds a descriptor: allow as many as the hard limit does (the soft limit
    // is often 1024, short of a fleet of a thousand watches).
    raiseOpenFileLimit(toAtLeast: .max)
    let listener: any PhoneLinks
    if let bluetooth {
      // An iPhone whose bond the accessory lost drops the link and keeps the bond until its
      // user forgets the accessory (Protocol/iPhone.md, Pairing and bonds).
      let host = try await BluetoothCommandLine.open(
        bluetooth, on: loops, capture: capture, logger: logger,
        security: .init(
          disconnectOnKeyMissing: phone.disconnectsOnKeyMissing, ioCapability: .keyboardDisplay, mitm: true,
          passkey: answers.passkey, confirmsNumbers: answers.confirm))
      if let store = BluetoothCommandLine.bonds(of: host) { phone.keepBonds(in: store) }
      // An iPhone refuses an accessory's connection parameters outside Apple's rules, and the
      // console says which it broke (the kernel's l2cap:hciN answers such requests itself).
      (host as? HCIHost)?.parameterJudge = HCIHost.ParameterJudge(
        rules: { phone.brokenConnectionRules(ConnectionParameterRequest($0)) },
        report: { phone.judgedConnectionParameters(link: $0, ConnectionParameterRequest($1), broken: $2) })
      listener = CentralLinks(
        host: host, filter: peer.map { .address($0) } ?? .solicits(BluetoothCommandLine.solicited))
    } else if let address {
      // Bonds on the simulated links last while the phone runs; it reacts to bond trouble
      // as an iPhone does (Protocol/iPhone.md, Pairing and bonds).
      let keyring = Keyring(behaviour: .init(disconnectOnKeyMissing: phone.disconnectsOnKeyMissing))
      phone.keepBonds(in: keyring)
      do { listener = ListenerLinks(listener: try address.listen(on: loops, keyring: keyring)) } catch {
        throw UsageError("\(error)")
      }
    } else {
      throw UsageError("phone needs --listen or --bluetooth")
    }
    onTerminationSignal {
      LineEditor.restoreTerminal()
      blocking { await listener.finish() }
    }

    let json = mode == "jsonl"
    let say: @Sendable (String) -> Void = { line in if !json { printLine(line) } }
    let quirkNote = (quirks == Quirks() ? "" : " with quirks") + (faults.isEmpty ? "" : " WITH FAULTS (testing)")
    say("phone: listening on \(listener.name)\(quirkNote); type help for commands")
    // Each event is printed as the phone reports it, so none waits in a queue, and none is
    // lost at the end.
    if !quiet {
      phone.observe { event in
        if json {
          printLine(eventJSON(event).description)
        } else if let text = describe(event) {
          printLine("phone: \(text)")
        }
      }
    }
    let accepting = Task {
      while true {
        guard let bearer = await listener.next() else {
          // A phone that can take no watch any more (its controller refuses to scan) is of no
          // use: one line, and exit 1.
          if let failure = listener.failure {
            await listener.finish()
            printError("ancs: \(failure)")
            await runBlocking { Children.endAll() }
            exit(1)
          }
          return
        }
        let link: any ATTBearer = writer.map { CapturingBearer(bearer, writer: $0) } ?? bearer
        if listener.oneAtATime {
          await phone.serve(link)
        } else {
          Task { await phone.serve(link) }
        }
      }
    }
    let player = scenario.map { scenario in
      Task {
        do {
          try await ScenarioPlayer(scenario, loop: loop).play(on: phone, clock: SystemClock()) { report in
            say("scenario: \(report)")
          }
        } catch is CancellationError {
          // Quitting ends the scenario; that is not news.
        } catch {
          say("scenario stopped: \(error)")
        }
      }
    }
    let console = PhoneConsole(phone: phone)
    // A person at a terminal edits lines (LineEditor); piped input is read as it comes.
    let editor =
      json || !LineEditor.isInteractive
      ? nil
      : LineEditor.start(historyFile: LineEditor.defaultHistoryFile) { line, cursor in
        // On the editor's own thread, which waits for the phone's apps and UIDs.
        waitOnThread { await console.completion(of: line, cursor: cursor) }
      }
    var quitRequested = false
    for await line in editor?.1 ?? standardInputLines() {
      guard let output = json ? await console.run(jsonLine: line) : await console.run(line: line) else { continue }
      if json {
        printLine(output.json.description)
      } else {
        for line in output.lines { printLine(line) }
      }
      if output.quit {
        quitRequested = true
        break
      }
    }
    await editor?.0.stop()
    if !quitRequested {
      // End of input: keep serving until a signal ends the process.
      await accepting.value
    }
    player?.cancel()
    accepting.cancel()
    await listener.finish()
    phone.disconnectAll()
    writer?.close()
    return 0
  }

  /// Apps a console user can name by their short name (`post chat ...`) without a scenario.
  static func registerCommonApps(_ phone: Phone) async {
    for (identifier, name) in [
      ("com.example.chat", "Chat"), ("com.apple.MobileSMS", "Messages"), ("com.apple.mobilemail", "Mail"),
      ("com.apple.mobilephone", "Phone"), ("com.apple.mobilecal", "Calendar"), ("com.apple.reminders", "Reminders"),
      ("com.apple.Health", "Health"), ("com.apple.news", "News"),
    ] {
      await phone.register(app: identifier, name: name)
    }
  }

  /// The profile's quirks and the named ones.
  static func quirkSet(_ names: [String], profile: IOSProfile = .current) throws(UsageError) -> Quirks {
    do { return try profile.quirks(adding: names) } catch { throw UsageError("\(error)") }
  }

  static func iOSProfile(_ name: String) throws(UsageError) -> IOSProfile {
    do { return try IOSProfile.named(name) } catch { throw UsageError("\(error)") }
  }

  /// What `--ios list` prints: a line per profile, its quirks under it.
  static func profileList() -> String {
    IOSProfile.catalog.map { profile in
      let name = "iOS \(profile.name)".padding(toLength: 8, withPad: " ", startingAt: 0)
      return "\(name)\(profile.summary)\n        connection parameters: the \(profile.connectionRules.rawValue) rules"
        + (profile.quirkNote.map { "\n        quirks: \($0)" } ?? "")
    }.joined(separator: "\n")
  }

  /// A built-in scenario by name, or a file; any problem is a usage error naming the file.
  static func loadScenario(_ name: String) throws(UsageError) -> Scenario {
    do {
      if let builtIn = try BuiltInScenarios.named(name) { return builtIn }
    } catch {
      throw UsageError("\(error)")
    }
    let text: String
    do { text = try readTextFile(name) } catch { throw UsageError("\(name): \(error)") }
    do { return try Scenario(parsing: text, file: name) } catch { throw UsageError("\(error)") }
  }

  /// A console line for an event; nil for the routine ones (answers).
  static func describe(_ event: PhoneEvent) -> String? {
    switch event {
    case .connected(let session, let link): return "watch \(session) connected (\(link))"
    case .identified(let session, let mtu, let name, let problem):
      let named = name.map { "is \"\($0)\"" } ?? "has no name (\(problem ?? "none published"))"
      return "watch \(session) \(named), ATT MTU \(mtu)"
    case .sessionStarted(let session, let count):
      return "watch \(session) subscribed: ANCS session started, \(count) pre-existing notification(s) reported"
    case .sessionEnded(let session): return "watch \(session) ended its ANCS session"
    case .answered: return nil
    case .refused(let session, let command, let code):
      let name = code == 0x03 ? "Write Not Permitted (0x03)" : "\(ANCSErrorCode(rawValue: code))"
      return "refused \(command) from watch \(session) with \(name)"
    case .action(let session, let uid, let action, let title, let outcome):
      return "watch \(session) performed the \(action) action on UID \(uid) \"\(title)\": \(outcome)"
    case .disconnected(let session): return "watch \(session) disconnected"
    case .quirk(let text): return "quirk \(text)"
    case .sharingRequested(let session, let name):
      let who = name.map { " (\"\($0)\")" } ?? ""
      return "watch \(session)\(who) would like to receive your notifications: type \"allow \(session)\" to share them"
    case .sharingChanged:
      // Only the console's allow and revoke change it, and they say so themselves.
      return nil
    case .connectionParameters(let session, let link, let request, let broken):
      let who = session.map { "watch \($0)" } ?? "the accessory on \(link)"
      return "\(who) asked for connection parameters \(request.description): "
        + (broken.isEmpty ? "accepted" : "refused (\(broken.joined(separator: "; ")))")
    case .bond(let event): return describe(event)
    case .remoteCommand(let session, let command, let outcome):
      return "watch \(session) sent the remote command \(command): \(outcome)"
    case .trackEnded(let now): return "the track ended: \(now)"
    }
  }

  /// A console line for a bond event, as the iPhone's user would learn it.
  static func describe(_ event: BondEvent) -> String {
    switch event {
    case .bonded(let peer, let level, let again):
      return "paired with \(peer) and bonded (\(level))" + (again ? ", replacing the bond it had" : "")
    case .encrypted(let peer): return "encrypted the link to \(peer) with its bond"
    case .peerLostKey(let peer):
      return "\(peer) has lost its bond with this phone (iOS: \"Peer removed pairing information\"); "
        + "the phone drops the link and keeps its bond: type \"forget \(peer)\" to pair again"
    case .keyMissing(let peer): return "\(peer) encrypted with a bond this phone does not have"
    case .repairingRefused(let peer): return "refused to pair again with \(peer)"
    case .pairingRefused(let peer, let reason):
      return "\(peer) refused to pair" + (reason.isEmpty ? "" : ": \(reason)")
    case .forgotten(let peer): return "forgot the bond with \(peer)"
    case .pairing(let peer, .enterPasskey):
      return "\(peer) shows a passkey: type \"passkey\" and its six digits within 30 s"
    case .pairing(let peer, .showPasskey(let value)):
      return "type \(sixDigits(value)) on \(peer) to pair"
    case .pairing(let peer, .compare(let value)):
      return "does \(peer) show \(sixDigits(value))? type \"confirm yes\" or \"confirm no\" within 30 s"
    }
  }

  static func eventJSON(_ event: PhoneEvent) -> JSON {
    switch event {
    case .connected(let session, let link):
      return .object([("event", .string("connected")), ("session", .number(Double(session))), ("link", .string(link))])
    case .identified(let session, let mtu, let name, let problem):
      return .object(
        [("event", .string("identified")), ("session", .number(Double(session))), ("mtu", .number(Double(mtu)))]
          + (name.map { [("name", JSON.string($0))] } ?? []) + (problem.map { [("problem", JSON.string($0))] } ?? []))
    case .sessionStarted(let session, let count):
      return .object([
        ("event", .string("sessionStarted")), ("session", .number(Double(session))),
        ("preExisting", .number(Double(count))),
      ])
    case .sessionEnded(let session):
      return .object([("event", .string("sessionEnded")), ("session", .number(Double(session)))])
    case .answered(let session, let command):
      return .object([
        ("event", .string("answered")), ("session", .number(Double(session))), ("command", .string(command)),
      ])
    case .refused(let session, let command, let code):
      return .object([
        ("event", .string("refused")), ("session", .number(Double(session))), ("command", .string(command)),
        ("code", .number(Double(code))),
      ])
    case .action(let session, let uid, let action, let title, let outcome):
      return .object([
        ("event", .string("action")), ("session", .number(Double(session))), ("uid", .number(Double(uid))),
        ("action", .string(action)), ("title", .string(title)), ("outcome", .string(outcome)),
      ])
    case .disconnected(let session):
      return .object([("event", .string("disconnected")), ("session", .number(Double(session)))])
    case .quirk(let text): return .object([("event", .string("quirk")), ("text", .string(text))])
    case .sharingRequested(let session, let name):
      return .object(
        [("event", .string("sharingRequested")), ("session", .number(Double(session)))]
          + (name.map { [("name", JSON.string($0))] } ?? []))
    case .sharingChanged(let session, let allowed):
      return .object([
        ("event", .string("sharingChanged")), ("session", .number(Double(session))), ("allowed", .bool(allowed)),
      ])
    case .connectionParameters(let session, let link, let request, let broken):
      return .object(
        [("event", .string("connectionParameters"))] + (session.map { [("session", JSON.number(Double($0)))] } ?? [])
          + [
            ("link", .string(link)),
            ("intervalMin", .number(Double(request.intervalMin) * 1.25)),
            ("intervalMax", .number(Double(request.intervalMax) * 1.25)), ("latency", .number(Double(request.latency))),
            ("timeout", .number(Double(request.timeout) * 10)), ("accepted", .bool(broken.isEmpty)),
            ("broken", .array(broken.map { .string($0) })),
          ])
    case .bond(let event): return event.json
    case .remoteCommand(let session, let command, let outcome):
      return .object([
        ("event", .string("remoteCommand")), ("session", .number(Double(session))), ("command", .string(command)),
        ("outcome", .string(outcome)),
      ])
    case .trackEnded(let now): return .object([("event", .string("trackEnded")), ("now", .string(now))])
    }
  }

}

/// Where `ancs phone` gets its watches: a listener's connections, or a central's.
protocol PhoneLinks: Sendable {
  var name: String { get }
  /// Serve one link before taking the next (a central connects to one watch at a time).
  var oneAtATime: Bool { get }
  /// The next watch's link; nil once closed, or when no more can come (`failure` says why).
  func next() async -> (any ATTBearer)?
  func close()
  /// Closes, leaving a controller as it was found.
  func finish() async
  /// Why no link can come any more (a controller that refuses to scan), if that is so.
  var failure: String? { get }
}

extension PhoneLinks {
  func finish() async { close() }
  var failure: String? { nil }
}

/// The connections of a simulated-link listener, served side by side.
struct ListenerLinks: PhoneLinks {
  let listener: any LinkListener
  /// Where the links the listener accepts keep bonds, if they do.
  var bondBook: (any BondBook)? = nil
  var name: String { listener.name }
  var oneAtATime: Bool { false }
  func next() async -> (any ATTBearer)? { try? await listener.accept() }
  func close() { listener.close() }
}

/// A Bluetooth central's connections: scan for `filter`, connect, and again once it ends.
struct CentralLinks: PhoneLinks {
  let host: any BluetoothRadio
  let filter: ScanFilter
  private let failed = Locked<String?>(nil)
  var name: String { "\(host.name), looking for \(filter)" }
  var oneAtATime: Bool { true }

  init(host: any BluetoothRadio, filter: ScanFilter) {
    self.host = host
    self.filter = filter
  }

  func next() async -> (any ATTBearer)? {
    while host.closedReason == nil && !Task.isCancelled {
      do {
        return try await host.connectLink(scanningFor: filter, timeout: .seconds(60))
      } catch {
        if case .timedOut = error { continue }
        // Stopping (quit, a signal) is no failure.
        if case .cancelled = error { return nil }
        if host.closedReason == nil && !Task.isCancelled { failed.withLock { $0 = "\(host.name): \(error)" } }
        return nil
      }
    }
    return nil
  }

  var failure: String? { failed.withLock { $0 } }
  func close() { host.close() }
  func finish() async { await host.leave() }
}

extension ConnectionParameterRequest {
  init(_ parameters: ConnectionParameters) {
    self.init(
      intervalMin: parameters.intervalMin, intervalMax: parameters.intervalMax, latency: parameters.maxLatency,
      timeout: parameters.supervisionTimeout)
  }
}
