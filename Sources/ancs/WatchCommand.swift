import AMS
import ANCS
import ATT
import HCI
import Links
import Processes
import Runtime
import Sockets
import Watch
import Wire

enum WatchCommand {
  static let usage = """
    usage: ancs watch --connect ADDRESS [options]
           ancs watch --bluetooth TRANSPORT [options]

    Runs a simulated watch (the ANCS client) against a phone: pairs, discovers ANCS,
    subscribes, and shows the notifications. Like a real watch it waits for its phone: one
    that is not up yet, or goes away, is tried again with the reconnect back-off. With
    --headless (or when standard output is not a terminal) it prints one JSON object per
    event (Protocol/events.md) and takes commands on standard input, one per line:
    `positive UID`, `negative UID`, `media COMMAND` (a remote command to the phone's
    media player: play, pause, toggle, next, previous, volume-up, volume-down, repeat,
    shuffle, forward, back, like, dislike, bookmark), `forget` (forget every bond, as
    resetting a watch does), `passkey NNNNNN` and `confirm yes|no` (answers to a pairing
    that asks: the event bond with change pairing), `quit`.

    options:
      --connect ADDRESS       unix:PATH or tcp:HOST:PORT of a running `ancs phone`
    \(BluetoothCommandLine.usage)
      --io CAPABILITY         with --bluetooth hci-*: what the watch can show and type when
                              it pairs: no-input-no-output (default), display-only,
                              display-yesno, keyboard-only, keyboard-display
      --security LEVEL        just-works (default) or mitm: ask for MITM protection, refuse
                              a pairing without it, and use no link encrypted with a key
                              made without it (over hci-* and the simulated links)
      --passkey N             with --bluetooth hci-*: the six digits to type when the phone
                              shows a passkey (else typed on stdin: passkey NNNNNN)
      --confirm yes|no        with --bluetooth hci-*: the answer when the phone shows a
                              number to compare (else on stdin: confirm yes)
      --name NAME             the watch's GAP Device Name, which the phone reads and
                              shows, and with --bluetooth the name advertised
                              (default ancs-sim watch)
      --headless              JSON lines on stdout instead of the watch face
    \(FaceCommandLine.usage(column: 26))
      --title-max N           byte maximum asked for titles (default 65535; also
      --subtitle-max N        subtitles and messages: use small values to emulate
      --message-max N         a small firmware)
      --preexisting POLICY    all (default), newest:N, or list (list without fetching)
      --subscribe-order ORDER ds-first (default) or ns-first
      --command-timeout S     seconds allowed per Control Point command (default 10)
      --liveness S            seconds of silence before checking that the phone still has
                              the subscriptions (default 30)
      --call-recheck S        seconds between checks that a ringing call still exists
                              (default 20)
      --resubscribe-after S   seconds without a Notification Source event after which
                              the watch writes its subscriptions again, since a phone
                              can fall silent while it still reads subscribed (default
                              21600, 6 hours)
      --sharing-recheck S     seconds between checks whether a phone that does not share
                              its notifications now does (default 10)
      --no-reconnect          exit when the link drops instead of reconnecting
      --no-media              leave the phone's Apple Media Service alone (no now
                              playing, no remote commands)
      --reconnect-delay S     first wait before reconnecting, doubled per failed
                              attempt up to 30 s (default 0.5)
      --capture FILE          record a btsnoop capture (Wireshark, btmon) of the link
      --fault NAME            (testing) break one rule on purpose, to prove a conformance
                              case can fail (repeatable); the names are in
                              Protocol/conformance.md, Fault switches
      -v, -vv                 log to stderr (info, debug)

    example:
      ancs phone --listen unix:/tmp/phone.sock        # in one terminal
      ancs watch --connect unix:/tmp/phone.sock       # in another
      ancs watch --connect unix:/tmp/phone.sock --mute news --quiet-hours 22:00-07:00

    exit codes: 0 after `quit` or end of input, 1 when the link is lost (or the phone
    cannot be reached) with --no-reconnect, 2 for bad usage
    """

  static func options(_ args: inout Arguments) throws(UsageError) -> WatchOptions {
    var options = WatchOptions()
    if let n = try args.integer("--title-max", in: 0...65535) { options.titleMaximum = UInt16(n) }
    if let n = try args.integer("--subtitle-max", in: 0...65535) { options.subtitleMaximum = UInt16(n) }
    if let n = try args.integer("--message-max", in: 0...65535) { options.messageMaximum = UInt16(n) }
    if let policy = try args.value("--preexisting") {
      switch policy {
      case "all": options.preExisting = .fetchAll
      case "list": options.preExisting = .listOnly
      case _ where policy.hasPrefix("newest:"):
        guard let n = Int(policy.dropFirst(7)), n >= 0 else {
          throw UsageError("--preexisting newest:N needs a whole number N")
        }
        options.preExisting = .fetchNewest(n)
      default: throw UsageError("--preexisting takes all, newest:N or list, not '\(policy)'")
      }
    }
    if let order = try args.value("--subscribe-order") {
      switch order {
      case "ds-first": options.dataSourceFirst = true
      case "ns-first": options.dataSourceFirst = false
      default: throw UsageError("--subscribe-order takes ds-first or ns-first, not '\(order)'")
      }
    }
    if let seconds = try args.seconds("--command-timeout", in: 0.1...600) {
      options.commandTimeout = .milliseconds(Int(seconds * 1000))
    }
    if args.flag("--no-reconnect") { options.reconnect = false }
    if args.flag("--no-media") { options.usesMedia = false }
    if let seconds = try args.seconds("--liveness", in: 0.1...3600) {
      options.livenessInterval = .milliseconds(Int64(seconds * 1000))
    }
    if let seconds = try args.seconds("--call-recheck", in: 0.1...3600) {
      options.callRecheckInterval = .milliseconds(Int64(seconds * 1000))
    }
    if let seconds = try args.seconds("--resubscribe-after", in: 0.1...604_800) {
      options.resubscribeAfterSilence = .milliseconds(Int64(seconds * 1000))
    }
    if let seconds = try args.seconds("--sharing-recheck", in: 0.1...3600) {
      options.sharingRecheckInterval = .milliseconds(Int64(seconds * 1000))
    }
    for name in args.values("--fault") {
      do { try options.faults.enable(name) } catch { throw UsageError("\(error)") }
    }
    if let seconds = try args.seconds("--reconnect-delay", in: 0.001...30) {
      options.reconnectDelay = .microseconds(Int64(seconds * 1_000_000))
    }
    return options
  }

  static func run(_ arguments: [String], loops: any EventLoopGroup) async throws -> Int32 {
    var args = Arguments(arguments, command: "watch")
    if args.flag("--help", "-h") {
      printLine(usage)
      return 0
    }
    let text = try args.value("--connect")
    let bluetooth = try BluetoothCommandLine.settings(&args, role: "watch")
    let name = try args.value("--name")
    if text == nil && bluetooth == nil {
      throw UsageError(
        "watch needs --connect unix:PATH or tcp:HOST:PORT, or --bluetooth TRANSPORT; try 'ancs watch --help'")
    }
    if text != nil && bluetooth != nil { throw UsageError("--connect and --bluetooth: give one, not both") }
    // "The Device Name characteristic value shall be 0 to 248 octets" (Vol 3 Part C 12.1).
    if let name, name.utf8.count > 248 { throw UsageError("--name takes at most 248 bytes of UTF-8") }
    let headless = args.flag("--headless")
    let answers = try BluetoothCommandLine.pairingAnswers(&args, bluetooth: bluetooth)
    let security = try BluetoothCommandLine.accessorySecurity(&args, bluetooth: bluetooth)
    var options = try options(&args)
    if let name { options.deviceName = name }
    // Subscribes only once the link is authenticated: a bond made by Just Works is not enough.
    if security.mitm { options.security = .authenticated }
    let face = try FaceCommandLine.settings(&args)
    let capture = try args.value("--capture")
    let logger = args.logger()
    try args.finish()
    let engine: WatchEngine
    var radio: (any BluetoothRadio)?
    if let bluetooth {
      // FAULT refuse-repairing: breaks "pairs again with a phone that forgot the bond".
      // FAULT mitm-not-required: neither asks for MITM protection nor refuses a pairing without it.
      // FAULT wrong-passkey-misreported: a wrong passkey answered with Unspecified Reason.
      let mitm = security.mitm && !options.faults.contains(.mitmNotRequired)
      var smp = SMPSecurityManager.Options(
        acceptRepairing: !options.faults.contains(.refuseRepairing), ioCapability: security.io, mitm: mitm,
        requireMITM: mitm, passkey: answers.passkey, confirmsNumbers: answers.confirm)
      if options.faults.contains(.wrongPasskeyMisreported) { smp.wrongPasskeyReason = .unspecifiedReason }
      // The engine runs on the loop that reads the controller, which hands it each PDU in
      // place, as over a socket link.
      let loop = loops.next()
      let host = try await BluetoothCommandLine.open(
        bluetooth, on: loop, capture: capture, logger: logger, security: smp)
      let advertisement = Advertisement(
        name: options.deviceName, solicitedServices: [BluetoothCommandLine.ancs])
      // A peripheral, as a watch is: advertise the ANCS solicitation, take the phone's
      // connection; the engine then pairs (a Security Request) and goes on as over any link.
      engine = WatchEngine(options: options, logger: logger, executor: loop) {
        try await host.acceptLink(advertisement, timeout: nil)
      }
      if let store = BluetoothCommandLine.bonds(of: host) { engine.keepBonds(in: store) }
      radio = host
      onTerminationSignal { blocking { await host.leave() } }
    } else {
      engine = try socketWatch(
        try twoProcessAddress(text ?? ""), on: loops, options, capture: capture, logger: logger,
        announce: headless || !stdoutIsTerminal)
    }
    let code: Int32
    if !headless && stdoutIsTerminal, let shown = await FaceCommandLine.run(engine, face, until: nil) {
      code = shown
    } else {
      code = await runHeadless(engine, expectReconnect: options.reconnect)
    }
    // The controller as it was found: no connection, no advertising.
    await radio?.leave()
    return code
  }

  /// A watch over a simulated link to `address`. As a real watch waits for its phone, a
  /// phone that is not up yet is tried again with the reconnect back-off (the face shows the
  /// waiting screen); with `announce`, the first failure and the first success after it are
  /// said on stderr.
  static func socketWatch(
    _ address: LinkAddress, on loops: any EventLoopGroup, _ options: WatchOptions, capture: String?, logger: Logger,
    announce: Bool
  ) throws(UsageError) -> WatchEngine {
    let writer = try capture.map(captureWriter)
    let waiting = Locked(false)
    // The watch's bonds last while it runs (`forget` drops them, as resetting a watch does).
    // FAULT refuse-repairing: breaks "pairs again with a phone that forgot the bond".
    let keyring = Keyring(
      behaviour: .init(
        acceptRepairing: !options.faults.contains(.refuseRepairing),
        wrongPasskeyReason: options.faults.contains(.wrongPasskeyMisreported)
          ? LinkFraming.RejectReason.unspecifiedReason : LinkFraming.RejectReason.confirmValueFailed))
    // The engine runs on the loop that reads its links, which hands it each PDU in place.
    let loop = loops.next()
    let engine = WatchEngine(options: options, logger: logger, executor: loop) {
      let bearer: SocketBearer
      do {
        bearer = try await address.connect(on: loop, keyring: keyring)
      } catch {
        let first = waiting.withLock { waiting in
          defer { waiting = true }
          return !waiting
        }
        if announce && first {
          printError(
            "ancs: waiting for the phone: \(error); trying again\(options.reconnect ? "" : " never (--no-reconnect)")")
        }
        throw error
      }
      if announce, waiting.withLock({ $0 }) { printError("ancs: connected to \(address)") }
      waiting.withLock { $0 = false }
      return writer.map { CapturingBearer(bearer, writer: $0, role: .peripheral) } ?? bearer
    }
    engine.keepBonds(in: keyring)
    return engine
  }

  /// Prints events as JSON lines and takes `positive UID`, `negative UID`, `media COMMAND`,
  /// `forget`, `quit` on stdin.
  /// End of input stops the watch, as `quit` does, unless a `deadline` ends it (the demo).
  /// `deadline`: stop then (standard input's end does not stop it); without one, the end of
  /// standard input stops it unless `endOfInputStops` is false (someone else stops it).
  static func runHeadless(
    _ engine: WatchEngine, expectReconnect: Bool, until deadline: Duration? = nil, endOfInputStops: Bool = true
  ) async -> Int32 {
    // Each event is printed as the watch reports it, with no queue or task between.
    let link = Locked((lost: false, connected: false))
    engine.observe { event in
      printLine(event.json.description)
      if case .disconnected = event { link.withLock { $0.lost = true } }
      if case .connected = event { link.withLock { $0.connected = true } }
    }
    let running = Task { await engine.run() }
    // Nobody reads the events any more (`ancs watch --headless | tool` and the tool ended):
    // stop, rather than reconnect forever in silence.
    whenStandardOutputCloses { engine.stop() }
    let input = Task {
      defer { if deadline == nil && endOfInputStops { engine.stop() } }
      for await line in standardInputLines() {
        let words = line.split(separator: " ").map(String.init)
        switch words.first {
        case nil: continue
        case "quit", "q":
          engine.stop()
          return
        case "positive", "negative":
          guard words.count == 2, let uid = UInt32(words[1]) else {
            printError("ancs: usage: \(words[0]) UID (a number from the events)")
            continue
          }
          engine.perform(words[0] == "positive" ? .positive : .negative, on: uid)
        case "media":
          guard words.count == 2, let command = RemoteCommandID(word: words[1]) else {
            let known = RemoteCommandID.words.map(\.key).joined(separator: ", ")
            printError("ancs: usage: media COMMAND, one of \(known)")
            continue
          }
          engine.media(command)
        case "passkey", "confirm":
          let answer: PairingAnswer?
          if words[0] == "passkey" {
            answer = words.count == 2 ? ATT.passkey(digits: words[1]).map(PairingAnswer.passkey) : nil
          } else {
            answer = words.count == 2 && ["yes", "no"].contains(words[1]) ? .confirm(words[1] == "yes") : nil
          }
          guard let answer else {
            printError(
              "ancs: usage: "
                + (words[0] == "passkey" ? "passkey NNNNNN (the six digits the phone shows)" : "confirm yes|no"))
            continue
          }
          if engine.answerPairing(answer) != true {
            printError("ancs: no pairing waits for \(words[0] == "passkey" ? "a passkey" : "a numeric comparison")")
          }
        case "forget":
          guard words.count == 1 else {
            printError("ancs: usage: forget (forgets every bond; it takes nothing after it)")
            continue
          }
          do {
            if try engine.forgetBonds() == nil {
              printError("ancs: this watch keeps no bonds here (over l2cap:hciN the kernel keeps them)")
            }
          } catch {
            printError("ancs: forget: \(error)")
          }
        default:
          printError(
            "ancs: unknown command '\(words[0])'; commands: positive UID, negative UID, media COMMAND, forget, "
              + "passkey NNNNNN, confirm yes|no, quit")
        }
      }
    }
    if let deadline {
      let clock = ContinuousClock()
      try? await clock.sleep(for: deadline)
      engine.stop()
    }
    await running.value
    input.cancel()
    // Without reconnecting, never reaching the phone is a lost link too.
    let lost = link.withLock { $0.lost || !$0.connected }
    return !expectReconnect && lost ? 1 : 0
  }
}
