import AMS
import ANCS
import ATT
import GATT
import Runtime
import Synchronization
import Wire

/// Why the watch could not use a phone's GATT database.
public struct WatchSetupError: Error, CustomStringConvertible {
  public var description: String
}

/// The ANCS client: connects (and reconnects with back-off), pairs, discovers ANCS inside
/// its service range, subscribes, and runs `WatchMachine` on everything the phone sends.
/// The display reads `state` and `events()`; the engine never waits on them.
///
/// **One loop.** The engine's loop (`Loop`, `Core`, `submit`) runs the machine, one event at
/// a time. Everything the machine reacts to reaches it there as one `Event`, in the order it
/// was submitted: the phone's notifications and the answers to the watch's writes (from the
/// connection's receive loop), the ticks of its one timer (which sleeps until the machine's
/// `deadline`, and parks while there is none), the wearer's actions, the link's changes. The loop
/// hands each to the machine and performs the actions it returns without waiting for any
/// answer (an answer comes back later as another event), so no input can overtake another.
/// An input from a link carries its `Session`'s tag; once that session is over (the link
/// went, or Service Changed set ANCS up again) the loop knows it by identity and drops it.
///
/// The loop is an actor, and each connection the engine makes runs on its executor
/// (`ATTConnection(executorOf:)`), with its GATT client and the session of the watch's own
/// server: a PDU goes from the connection to the machine and its actions back to the link on
/// one serial executor, with no lock and no hop. Readers elsewhere (the display) read the
/// state there too (`state` is awaited); what synchronous code needs of it, the session
/// shown, is published in an atomic.
public final class WatchEngine: Sendable {
  public typealias Connector = @Sendable () async throws -> any ATTBearer

  /// What one connection's session loop reacts to.
  enum Control: Sendable {
    case closed
    case serviceChanged
  }

  /// ANCS set up on one link: what the machine's actions need. A rediscovery after Service
  /// Changed makes a new one on the same link.
  final class Session: Sendable {
    let client: GATTClient
    let controlPoint: UInt16
    /// The CCCDs to write on subscribing, in the order the options ask for.
    let cccds: [UInt16]
    let sourceCCCD: UInt16

    init(client: GATTClient, controlPoint: UInt16, sourceCCCD: UInt16, dataCCCD: UInt16, dataFirst: Bool) {
      self.client = client
      self.controlPoint = controlPoint
      self.sourceCCCD = sourceCCCD
      cccds = dataFirst ? [dataCCCD, sourceCCCD] : [sourceCCCD, dataCCCD]
    }

    var connection: ATTConnection { client.connection }

    /// What the inputs from this session carry: the session's identity, without the
    /// session (a handler the client keeps must not keep the client).
    final class Tag: Sendable {}
    let tag = Tag()
  }

  /// The value handles of AMS's three characteristics, and the CCCDs of the two that notify.
  struct MediaHandles: Sendable {
    var remoteCommand: UInt16
    var entityUpdate: UInt16
    var entityAttribute: UInt16
    var cccds: [UInt16]
    /// The value handles whose characteristic takes Write Command but not Write Request (no
    /// write property): the AMS spec has each written with response, but a phone may
    /// publish otherwise (Bumble's `Ams` template service does so for Remote Command and
    /// Entity Attribute), and a client writes as the properties say (Core Vol 3 Part G
    /// 3.3.1.1).
    var commandOnly: Set<UInt16> = []
  }

  /// What the engine's loop takes, in order.
  enum Event: Sendable {
    /// An input for the machine: from a session's link (void once that session is over), or
    /// from no link (nil: ticks, link changes, the wearer).
    case input(WatchMachine.Input, from: Session.Tag?)
    /// A session set up and about to subscribe: the machine begins a session, and its
    /// actions go to this link from now on.
    case began(Session)
    /// The session's link went (or it was replaced).
    case ended(Session)
    /// The Apple Media Service found on a session's link, after its ANCS subscriptions:
    /// the loop keeps its handles for the media requests it performs (submitted before the
    /// machine hears that AMS started).
    case mediaFound(MediaHandles, from: Session.Tag)
  }

  /// What the connection loop, `stop()` and the bond commands share; never touched on the
  /// path of a PDU.
  struct Shared {
    var stopped = false
    var connection: ATTConnection?
    /// The wait before the next connection attempt, which `stop()` cuts short.
    var backOff: Task<Void, Never>?
    /// Sessions that got as far as subscribing, ever.
    var sessionsStarted = 0
  }

  /// The engine's loop: the serial executor the machine, the engine's connections, their
  /// GATT clients and the sessions of the watch's own server run on, and the state only code
  /// on it touches.
  actor Loop: HomedActor {
    /// Unchecked for exclusivity at run time, as `ATTConnection`'s machine is (every event
    /// steps it): only `withCore` and the loop's own code reach it, one step at a time.
    @exclusivity(unchecked) var core: Core
    /// The engine's one timer: it sleeps until the machine's deadline, then ticks it.
    let timer: OwnedTimer
    /// The serial executor the loop runs on.
    private nonisolated let home: ExecutorHome
    nonisolated var unownedExecutor: UnownedSerialExecutor { home.executor }
    nonisolated var executorHome: ExecutorHome { home }
    init(_ core: Core, clock: any EngineClock, executor: (any SerialExecutor)?) {
      self.core = core
      home = ExecutorHome(executor)
      timer = OwnedTimer(clock: clock, timers: home.timers)
    }
    var state: WatchState { core.machine.state }

    /// The core by reference for one whole step: one access to the actor's property, not
    /// one per use.
    @inline(__always)
    func withCore<T>(_ body: (inout Core) -> T) -> T { body(&core) }
  }

  public let options: WatchOptions
  /// The watch's own small database, which a phone reads: GAP with its Device Name.
  let server: GATTServer
  let connect: Connector
  let clock: any EngineClock
  let logger: Logger
  let shared = Locked(Shared())
  /// What the engine's loop keeps: the machine, the session its actions go to, and the
  /// events waiting their turn. There is no task of its own: a submitter that finds no event
  /// running runs its event itself, then every event submitted meanwhile, and only then
  /// returns; one that finds an event running leaves its event to that one. Performing an
  /// event never suspends, so only a call made while it runs, on the same stack (an answer
  /// a send brings at once, a failure), finds one running. So a PDU arriving while nothing
  /// else happens is run on the receive loop that read it, with no task switch.
  struct Core {
    var machine: WatchMachine
    var session: Session?
    /// The Apple Media Service's handles on the session's link, once found (nil: not yet,
    /// the phone publishes none, or the watch does not use it).
    var media: MediaHandles?
    var waiting = FIFO<Event>()
    /// An event is being run (its actions performed); the one running it takes the next.
    var running = false
    /// `stop()` was called: no new event is taken (those waiting still run).
    var finished = false
    var whenDone: [CheckedContinuation<Void, Never>] = []

    /// Once stopped and idle: lets the last session go (its link, its socket) and returns the
    /// callers waiting for that.
    mutating func ended() -> [CheckedContinuation<Void, Never>] {
      guard finished && !running else { return [] }
      session = nil
      defer { whenDone = [] }
      return whenDone
    }

    /// Takes `event` to run now (returns its actions), or queues it behind the one running.
    mutating func begin(_ event: Event, now: Duration) -> Decision? {
      enqueue(event) ? next(now: now) : nil
    }

    /// Queues `event` for the loop; true when none is running, so the caller must run the
    /// queue (nothing waits then but `event`).
    mutating func enqueue(_ event: Event) -> Bool {
      if finished { return false }
      if running, case .input(.tick, _) = event { tickWaiting = true }
      waiting.append(event)
      if running { return false }
      running = true
      return true
    }

    /// The next waiting event's actions; nil (and nothing runs any more) when none waits.
    mutating func next(now: Duration) -> Decision? {
      if let event = waiting.popFirst() { return decide(event, now: now) }
      running = false
      return nil
    }

    /// What the timer sleeps until, as far as the loop knows (nil: it parks, or has not
    /// asked yet).
    var timerTarget: Duration?
    /// A tick waits behind the event running: the timer parks until it has run, so that a
    /// busy loop does not gather a tick every 10 ms.
    var tickWaiting = false

    /// Runs `event` through the machine: the actions, and the session they are for, and the
    /// machine's deadline if the event brought it before the timer's. A later one is not
    /// news: the timer wakes at its own, ticks (nothing is due) and asks again; so a stream
    /// of events, each moving the deadlines a little later, wakes it about once per command
    /// timeout, not once per event.
    mutating func decide(_ event: Event, now: Duration) -> Decision {
      if case .input(.tick, _) = event { tickWaiting = false }
      var decision = run(event, now: now)
      // While a tick waits, its own decision wakes the parked timer: events ahead of it do not.
      if !tickWaiting, let after = machine.deadline, timerTarget.map({ after < $0 }) ?? true {
        timerTarget = after
        decision.deadline = after
      }
      return decision
    }

    /// The timer asks when to wake (`now`): the machine's deadline, but not before
    /// `earliest`. When the machine has none for now, a target still ahead is kept: the
    /// deadline comes and goes with each command (none while a write awaits its response),
    /// and parking would cost a wake-up for every command; waking at the old target costs
    /// one tick that finds nothing due.
    mutating func timerAsks(now: Duration, earliest: Duration) -> Duration? {
      if tickWaiting {
        // The tick's decision wakes the timer again (its target is gone).
        timerTarget = nil
      } else if let deadline = machine.deadline {
        timerTarget = max(deadline, earliest)
      } else if let target = timerTarget, target <= now {
        timerTarget = nil
      }
      return timerTarget
    }

    private mutating func run(_ event: Event, now: Duration) -> Decision {
      switch event {
      case .input(let input, let from):
        // An input from a session that is over names what is gone (its UIDs, its writes).
        if let from, from !== session?.tag { return Decision(actions: [], session: nil) }
        return Decision(actions: machine.handle(input, now: now), session: session, media: media)
      case .began(let new):
        session = new
        media = nil
        return Decision(actions: machine.handle(.sessionStarted(mtu: new.connection.mtu), now: now), session: new)
      case .ended(let old):
        if old === session { (session, media) = (nil, nil) }
        return Decision(actions: [], session: nil)
      case .mediaFound(let handles, let from):
        if from === session?.tag { media = handles }
        return Decision(actions: [], session: nil)
      }
    }
  }

  /// What the machine decided, for the session it decided it in.
  struct Decision: Sendable {
    var actions: [WatchMachine.Action]
    var session: Session?
    /// AMS's handles on that session's link, if found.
    var media: MediaHandles?
    /// The machine's deadline, when the event brought it before the timer's: the timer must
    /// hear of it.
    var deadline: Duration?
  }

  let loop: Loop
  /// The machine's session (`WatchState.session`) as of its last step, for `perform`.
  private let shownSession = Atomic(0)
  private let hub = EventHub<WatchEvent>()
  /// Where the links keep the watch's bonds, once told.
  private let bondBook = Locked<(any BondBook)?>(nil)

  /// An engine that connects with `connect`. With `executor` (the event loop that reads the
  /// links `connect` opens), its loop and connections run there, and the event loop hands
  /// each PDU it reads to the connection in place; otherwise they run on an executor of
  /// their own.
  public init(
    options: WatchOptions = WatchOptions(), clock: any EngineClock = SystemClock(), logger: Logger = .none,
    executor: (any SerialExecutor)? = nil, connect: @escaping Connector
  ) {
    self.options = options
    self.connect = connect
    self.clock = clock
    self.logger = logger
    // GAP Appearance 0x00C0, Generic Watch (Bluetooth Assigned Numbers, Appearance Values).
    // FAULT no-device-name: breaks "the phone reads the accessory's Device Name".
    let name: [CharacteristicDefinition] =
      options.faults.contains(.noDeviceName) ? [] : [.constant(0x2A00, Array(options.deviceName.utf8.prefix(248)))]
    let gap = ServiceDefinition(uuid: 0x1800, characteristics: name + [.constant(0x2A01, [0xC0, 0x00])])
    // Two services cannot need more than a handful of handles.
    server = try! GATTServer(leading: [gap], services: [], serviceChanged: false)
    loop = Loop(Core(machine: WatchMachine(options: options)), clock: clock, executor: executor)
  }

  /// A snapshot of the watch face's model, read on the engine's loop. Every event is
  /// reported after the step that made it, so a reader that saw the event sees its effect.
  /// (A snapshot shares the machine's storage until the machine next changes it, which then
  /// copies what it changes: read it when it is needed, not after every event.)
  public var state: WatchState {
    get async { await loop.state }
  }

  /// The engine clock's time, the clock of `receivedAt` and `PhoneTime`.
  public var now: Duration { clock.now }

  /// Everything the watch reports from now on.
  public func events() -> EventStream<WatchEvent> { hub.stream() }

  /// Has `body` called with everything the watch reports from now on, in the step that
  /// reports it (`EventHub.observe`): on the engine's executor; bond events on the thread
  /// of the link's bond book, and a failure to connect on the task that runs `run()` (in
  /// `ancs`, all of them the loop's thread), with no queue or task between. One observer
  /// per engine, for its life (it still hears what comes after `run()` ends): false when one
  /// is set already. `body` must not block, and must bear calls from two threads.
  @discardableResult
  public func observe(_ body: @escaping @Sendable (WatchEvent) -> Void) -> Bool { hub.observe(body) }

  /// Asks the phone to perform the notification's positive or negative action. `session`
  /// is the `WatchState.session` in which the wearer saw the notification (nil: the session
  /// shown now): should a new session have begun since, the UID is void and the action
  /// dropped (with an `error` event), never performed on whatever that UID names now.
  public func perform(_ action: ActionID, on uid: UInt32, session: Int? = nil) {
    let session = session ?? shownSession.load(ordering: .acquiring)
    submitDetached(.input(.perform(uid: uid, action: action, session: session), from: nil))
  }

  /// Sends a remote command to the phone's media player (AMS), if it takes it now; an
  /// `error` event says why not otherwise.
  public func media(_ command: RemoteCommandID) {
    submitDetached(.input(.media(.command(command)), from: nil))
  }

  /// Ends `run()`: closes the link and stops reconnecting.
  public func stop() {
    let (connection, backOff) = shared.withLock { shared in
      shared.stopped = true
      return (shared.connection, shared.backOff)
    }
    connection?.close()
    backOff?.cancel()
    post(nil)
  }

  var stopped: Bool { shared.withLock { $0.stopped } }

  // MARK: - Running

  /// Connects and serves sessions until `stop()` (or the first loss, without `reconnect`).
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.ticker(in: self.loop) }
      await connectionLoop()
      stop()
      await stopTimer(in: loop)
    }
    await loopDone(in: loop)
    hub.finish()
  }

  private func connectionLoop() async {
    var attempt = 0
    // Link changes go to the engine's loop in order with the sessions: a new session's first
    // fetch finds the old link's loss already taken in.
    while !stopped {
      await submit(.input(.link(.connecting), from: nil))
      var reason = "link closed"
      let sessionsBefore = shared.withLock { $0.sessionsStarted }
      do {
        // The back-off starts again only once a session ran: a link that connects and then
        // fails (pairing refused, a bond the phone lacks) must not be tried at full speed.
        let bearer = try await connect()
        try await session(bearer)
      } catch {
        reason = "\(error)"
        logger.info("watch: \(reason)")
      }
      if stopped || !options.reconnect { break }
      // A session that ran is followed at once by a new try, as a watch advertises again as
      // soon as its phone goes; a link that never got that far backs off.
      if shared.withLock({ $0.sessionsStarted }) > sessionsBefore {
        attempt = 0
        await submit(.input(.link(.reconnecting(attempt: 0, retryIn: .zero, reason: reason)), from: nil))
        continue
      }
      attempt += 1
      let delay = min(options.maximumReconnectDelay, options.reconnectDelay * (1 << min(attempt - 1, 16)))
      await submit(.input(.link(.reconnecting(attempt: attempt, retryIn: delay, reason: reason)), from: nil))
      if await !backOff(until: clock.now + delay) { break }
    }
  }

  /// Waits until `deadline` before the next attempt; false when `stop()` or the cancellation
  /// of `run()` cut the wait short.
  private func backOff(until deadline: Duration) async -> Bool {
    let clock = self.clock
    let wait = Task {
      do { try await clock.sleep(until: deadline) } catch { return }
    }
    let stoppedNow = shared.withLock { shared -> Bool in
      shared.backOff = wait
      return shared.stopped
    }
    if stoppedNow { wait.cancel() }
    await withTaskCancellationHandler {
      await wait.value
    } onCancel: {
      wait.cancel()
    }
    shared.withLock { $0.backOff = nil }
    return !wait.isCancelled && !Task.isCancelled
  }

  /// One connection: set up, then react to Service Changed until the link closes.
  private func session(_ link: any ATTBearer) async throws {
    // Faults that change bytes change them on the bearer, after the machine.
    let bearer = options.faults.outgoingRewrite.map { RewritingBearer(link, outgoing: $0) } ?? link
    let connection = ATTConnection(
      bearer: bearer, clock: clock, options: .init(localMTU: options.mtu), logger: logger, executorOf: loop)
    let client = await GATTClient(connection: connection)
    await server.attach(connection)
    let (controls, control) = AsyncStream<Control>.makeStream()
    let runner = Task {
      await connection.run()
      control.yield(.closed)
    }
    let stoppedNow = shared.withLock { shared -> Bool in
      shared.connection = connection
      return shared.stopped
    }
    var current: Session?
    var outcome: Result<Void, any Error> = .success(())
    if !stoppedNow {
      do {
        try await serve(connection, client, runner: runner, controls: controls, control: control, current: &current)
      } catch {
        outcome = .failure(error)
      }
    }
    connection.close()
    server.detach(connection)
    shared.withLock { $0.connection = nil }
    // What is still on its way from this link (answers, notifications) is void from now on.
    if let current { await submit(.ended(current)) }
    try outcome.get()
  }

  /// Sets ANCS up on `connection`, then reacts to Service Changed until the link closes.
  /// `current` is the session begun on it.
  private func serve(
    _ connection: ATTConnection, _ client: GATTClient, runner: Task<Void, Never>, controls: AsyncStream<Control>,
    control: AsyncStream<Control>.Continuation, current: inout Session?
  ) async throws {
    let bearer = connection.bearer
    do {
      // FAULT skip-pairing: breaks "use ANCS over an encrypted link".
      // FAULT discover-before-pairing: pairs in setUp, after discovery.
      if options.faults.isDisjoint(with: [.skipPairing, .discoverBeforePairing]) { try await pair(bearer) }
      try await connection.exchangeMTU()
      // FAULT no-service-changed: breaks "subscribe to Service Changed".
      if !options.faults.contains(.noServiceChanged) { try await watchServiceChanged(client, control) }
      let first = try await setUp(client, connection)
      current = first
      try await subscribe(first)
      await readPhoneStatus(client)
      await startMedia(first)
    } catch {
      connection.close()
      await runner.value
      throw error
    }
    for await event in controls {
      switch event {
      case .closed:
        await runner.value
        return
      case .serviceChanged:
        // FAULT ignore-service-changed: breaks "on Service Changed, discover again".
        if options.faults.contains(.ignoreServiceChanged) { continue }
        logger.info("watch: Service Changed; discovering ANCS again")
        do {
          let next = try await setUp(client, connection)
          current = next
          try await subscribe(next)
          await startMedia(next)
        } catch {
          emit(.error("rediscovery failed: \(error)"))
          // AMS is not set up again either: what it had in flight is dropped with it.
          if let current { await submit(.input(.media(.started(available: false)), from: current.tag)) }
        }
      }
    }
  }

  /// Discovers ANCS inside its service range and installs handlers; returns the session to
  /// begin.
  private func setUp(_ client: GATTClient, _ connection: ATTConnection) async throws -> Session {
    guard let service = try await client.discoverPrimaryServices(BluetoothUUID(ANCSUUID.service)!).first else {
      throw WatchSetupError(description: "the phone publishes no ANCS service")
    }
    // FAULT discover-whole-database: breaks "discovery inside the ANCS service's handle range".
    let searched =
      options.faults.contains(.discoverWholeDatabase)
      ? DiscoveredService(uuid: service.uuid, range: HandleRange(service.range.start, 0xFFFF)) : service
    let characteristics = try await client.discoverCharacteristics(of: searched).filter {
      service.range.start...service.range.end ~= $0.declarationHandle
    }
    let find = { (uuid: String) throws in try Self.characteristic(uuid, of: "ANCS", in: characteristics) }
    let source = try find(ANCSUUID.notificationSource)
    let control = try find(ANCSUUID.controlPoint)
    let data = try find(ANCSUUID.dataSource)
    let sourceCCCD = try await cccd(of: source, client)
    let dataCCCD = try await cccd(of: data, client)
    if options.faults.contains(.discoverBeforePairing) && connection.bearer.securityLevel < .encrypted {
      try await pair(connection.bearer)
    }
    let session = Session(
      client: client, controlPoint: control.valueHandle, sourceCCCD: sourceCCCD, dataCCCD: dataCCCD,
      dataFirst: options.dataSourceFirst)
    // The phone's events reach the engine's loop in the order the receive loop takes them,
    // with the answers to the watch's writes.
    let tag = session.tag
    await client.onValue(source.valueHandle, feeding(WatchMachine.Input.notificationSource, from: tag))
    await client.onValue(data.valueHandle, feeding(WatchMachine.Input.dataSource, from: tag))
    return session
  }

  /// A handler that hands each value to the engine's loop as the input `wrap` makes of it. It
  /// runs on the client's executor, which is the loop's: the value reaches the machine with
  /// no hop.
  private func feeding(_ wrap: @escaping @Sendable ([UInt8]) -> WatchMachine.Input, from tag: Session.Tag?)
    -> GATTClient.ValueHandler
  {
    let loop = self.loop
    return { [unowned self] _, event in submit(.input(wrap(event.value), from: tag), from: loop) }
  }

  /// Begins `session` on the engine's loop, then subscribes: the session begins before the
  /// events its subscription brings.
  private func subscribe(_ session: Session) async throws {
    await submit(.began(session))
    for handle in session.cccds { try await session.client.configure(cccd: handle, .notifications) }
    shared.withLock { $0.sessionsStarted += 1 }
    await submit(.input(.link(.connected(session.connection.bearer.name)), from: session.tag))
  }

  /// The Apple Media Service on `session`'s link, last: after ANCS and the phone's time and
  /// battery, so that its discovery and its trouble never hold them back.
  private func startMedia(_ session: Session) async {
    let media = options.usesMedia ? await discoverMedia(session.client) : nil
    var available = media != nil
    if let media {
      let tag = session.tag
      await session.client.onValue(media.remoteCommand, feeding({ .media(.commands($0)) }, from: tag))
      await session.client.onValue(media.entityUpdate, feeding({ .media(.update($0)) }, from: tag))
      await submit(.mediaFound(media, from: tag))
    }
    if let media, options.faults.contains(.mediaRegisterBeforeSubscribe) {
      // FAULT media-register-before-subscribe: breaks "subscribe to Entity Update before
      // writing it" (the registrations are written again, in order, once subscribed).
      for registration in MediaClient.registrations {
        _ = try? await session.client.write(media.entityUpdate, registration.encoded())
      }
    }
    do {
      for handle in media?.cccds ?? [] { try await session.client.configure(cccd: handle, .notifications) }
    } catch {
      emit(.error("subscribing to the Apple Media Service failed: \(error)"))
      available = false
    }
    await submit(.input(.media(.started(available: available)), from: session.tag))
  }

  /// The characteristic `uuid` of `service` among those discovered, or why not.
  static func characteristic(_ uuid: String, of service: String, in characteristics: [DiscoveredCharacteristic])
    throws(WatchSetupError) -> DiscoveredCharacteristic
  {
    guard let found = characteristics.first(where: { $0.uuid == BluetoothUUID(uuid)! }) else {
      throw WatchSetupError(description: "\(service) has no characteristic \(uuid)")
    }
    return found
  }

  /// The phone's Apple Media Service, if it publishes one the watch can use (an `error`
  /// event says what is wrong with one it cannot).
  private func discoverMedia(_ client: GATTClient) async -> MediaHandles? {
    do {
      guard let service = try await client.discoverPrimaryServices(BluetoothUUID(AMSUUID.service)!).first else {
        return nil
      }
      let characteristics = try await client.discoverCharacteristics(of: service)
      let find = { (uuid: String) throws in try Self.characteristic(uuid, of: "AMS", in: characteristics) }
      let remoteCommand = try find(AMSUUID.remoteCommand)
      let entityUpdate = try find(AMSUUID.entityUpdate)
      let entityAttribute = try find(AMSUUID.entityAttribute)
      let commandOnly = [remoteCommand, entityUpdate, entityAttribute].filter {
        !$0.properties.contains(.write) && $0.properties.contains(.writeWithoutResponse)
      }
      return MediaHandles(
        remoteCommand: remoteCommand.valueHandle, entityUpdate: entityUpdate.valueHandle,
        entityAttribute: entityAttribute.valueHandle,
        cccds: [try await cccd(of: remoteCommand, client), try await cccd(of: entityUpdate, client)],
        commandOnly: Set(commandOnly.map(\.valueHandle)))
    } catch {
      emit(.error("the phone's Apple Media Service cannot be used: \(error)"))
      return nil
    }
  }

  private func pair(_ bearer: any ATTBearer) async throws {
    // FAULT mitm-not-required: breaks "uses no link encrypted without MITM protection".
    let needed: SecurityLevel =
      options.security == .authenticated && !options.faults.contains(.mitmNotRequired) ? .authenticated : .encrypted
    do {
      let level = try await bearer.pair(needed)
      // A link may come back below what was asked (a phone that paired without MITM
      // protection): it is not used.
      guard level >= needed else {
        throw BearerError.pairingFailed("the link is \(level); this watch needs it \(needed)")
      }
    } catch {
      // FAULT pairing-failure-fatal: breaks "comes back once the phone forgot the bond".
      if options.faults.contains(.pairingFailureFatal) { stop() }
      throw error
    }
  }

  // MARK: - Bonds

  /// Keeps the watch's bonds in `book` (its links' keyring, or the Bluetooth host's bond
  /// store), reporting what happens to them as `.bond` events.
  public func keepBonds(in book: any BondBook) {
    bondBook.withLock { $0 = book }
    book.observe { [weak self] event in self?.emit(.bond(event)) }
  }

  /// The wearer's answer to the pairing that asks (a passkey the phone shows, or yes or no
  /// to a number both show): true when one was waiting for it; nil when the watch keeps no
  /// bonds.
  public func answerPairing(_ answer: PairingAnswer) -> Bool? {
    bondBook.withLock { $0 }?.answer(answer, for: nil)
  }

  /// Forgets every bond, as resetting a watch does, and drops the link: the phone, if it
  /// still holds its bond, meets a missing key. Returns the addresses forgotten; nil when the
  /// watch keeps no bonds.
  public func forgetBonds() throws(BondBookError) -> [String]? {
    guard let book = bondBook.withLock({ $0 }) else { return nil }
    let forgotten = try book.forget(nil)
    shared.withLock { $0.connection }?.close()
    return forgotten
  }

  private func cccd(of characteristic: DiscoveredCharacteristic, _ client: GATTClient) async throws -> UInt16 {
    let descriptors = try await client.discoverDescriptors(of: characteristic)
    guard let cccd = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration }) else {
      throw WatchSetupError(description: "\(characteristic.uuid) has no Client Characteristic Configuration descriptor")
    }
    return cccd.handle
  }

  /// Subscribes to Service Changed when the phone has it.
  private func watchServiceChanged(_ client: GATTClient, _ control: AsyncStream<Control>.Continuation) async throws {
    guard let gatt = try await client.discoverPrimaryServices(.genericAttributeService).first,
      let changed = try await client.discoverCharacteristics(of: gatt).first(where: { $0.uuid == .serviceChanged })
    else { return }
    try await client.subscribe(changed, indications: true) { _, _ in control.yield(.serviceChanged) }
  }

  /// Current Time and battery level, read once and then followed. They belong to the link,
  /// not to an ANCS session: a rediscovery keeps them.
  private func readPhoneStatus(_ client: GATTClient) async {
    for (service, characteristic) in [(BluetoothUUID(0x1805), BluetoothUUID(0x2A2B)), (0x180F, 0x2A19)] {
      do {
        guard let found = try await client.discoverPrimaryServices(service).first,
          let value = try await client.discoverCharacteristics(of: found).first(where: { $0.uuid == characteristic })
        else { continue }
        let wrap: @Sendable ([UInt8]) -> WatchMachine.Input = {
          characteristic == 0x2A19 ? .battery($0.first ?? 0) : .currentTime($0)
        }
        await submit(.input(wrap(try await client.read(value.valueHandle)), from: nil))
        if value.properties.contains(.notify) {
          try await client.subscribe(value, handler: feeding(wrap, from: nil))
        }
      } catch {
        emit(.error("reading \(characteristic): \(error)"))
      }
    }
  }

  // MARK: - The engine's loop

  /// Runs `event` after every event submitted before it: here and now (with whatever is
  /// submitted while it runs) when none is running, otherwise by the call running them,
  /// further up the same stack.
  /// Dropped after `stop()`. From the engine's connections this is no hop: they run on the
  /// loop's executor.
  private func submit(_ event: Event) async {
    await submit(event, in: loop)
  }

  @inline(__always)
  private func submit(_ event: Event, in loop: isolated Loop) {
    let now = clock.now
    guard let decision = loop.withCore({ stepped($0.begin(event, now: now), $0) }) else { return }
    runLoop(from: decision, in: loop)
  }

  /// `submit` from a callback of one of the engine's connections or GATT clients: they run
  /// on the loop's executor, so this is a plain call, not a hop.
  private nonisolated func submit(_ event: Event, from loop: Loop) {
    loop.assumeIsolated(passing: (self, event)) { loop, submitted in submitted.0.submit(submitted.1, in: loop) }
  }

  /// `submit` for synchronous code (the wearer's).
  private func submitDetached(_ event: Event) { post(event) }

  /// What synchronous callers (the wearer, `stop()`) submitted, in the order they called:
  /// an event, or nil for `stop()` (the link's end is the last event the loop takes). Never
  /// on the path of a PDU.
  private let posted = Locked<[Event?]>([])

  /// Queues `item` and starts a task that takes, on the loop, everything posted so far: the
  /// loop takes them in the callers' order, whichever task runs first.
  private func post(_ item: Event?) {
    posted.withLock { $0.append(item) }
    Task { await takePosted(in: loop) }
  }

  private func takePosted(in loop: isolated Loop) async {
    let items = posted.withLock { items in
      defer { items = [] }
      return items
    }
    // All queued before any runs, so no later post overtakes them while one runs.
    var mustRun = false
    for item in items {
      if let event = item {
        mustRun = loop.core.enqueue(event) || mustRun
      } else {
        mustRun = loop.core.enqueue(.input(.link(.stopped), from: nil)) || mustRun
        loop.core.finished = true
      }
    }
    if mustRun { runLoop(from: nil, in: loop) }
  }

  /// Performs `first`, then the events that came meanwhile, until none waits. Each decision
  /// (and the session it holds) is let go before the next is taken, and the last before
  /// the callers waiting for the loop to end hear of it.
  @inline(__always)
  private func runLoop(from first: consuming Decision?, in loop: isolated Loop) {
    var next = consume first
    if case .none = next {
      let now = clock.now
      next = loop.withCore { stepped($0.next(now: now), $0) }
    }
    while var decision = next.take() {
      perform(&decision, in: loop)
      let now = clock.now
      next = loop.withCore { stepped($0.next(now: now), $0) }
    }
    for waiter in loop.core.ended() { waiter.resume() }
  }

  /// Publishes the session the machine is in after deciding `decision`, before any of its
  /// events is reported (a wearer who saw a notification acts in its session).
  @inline(__always)
  private func stepped(_ decision: consuming Decision?, _ core: borrowing Core) -> Decision? {
    let session = core.machine.state.session
    if shownSession.load(ordering: .relaxed) != session { shownSession.store(session, ordering: .releasing) }
    return decision
  }

  /// Ends the ticker's timer, once the connection loop has ended.
  private func stopTimer(in loop: isolated Loop) { loop.timer.stop() }

  /// Returns once `stop()` was called and the last event has run.
  private func loopDone(in loop: isolated Loop) async {
    if loop.core.finished && !loop.core.running { return }
    await withCheckedContinuation { loop.core.whenDone.append($0) }
  }

  /// Runs an input the loop itself brings (it is the one running): at once, before the
  /// events waiting.
  private func step(_ input: WatchMachine.Input, in loop: isolated Loop) {
    let now = clock.now
    var decision = loop.withCore { stepped($0.decide(.input(input, from: nil), now: now), $0)! }
    perform(&decision, in: loop)
  }

  /// Performs the machine's actions on the link of the session they were decided for (if
  /// one was up). Nothing here waits for the phone, nor suspends: the session's client and
  /// connection run on the loop's executor, so each is a plain call, and each answer comes
  /// back to the loop as an event, after the decision being performed.
  @inline(__always)
  private func perform(_ decision: inout Decision, in loop: isolated Loop) {
    if let deadline = decision.deadline { loop.timer.wake(for: deadline) }
    let (session, media) = (decision.session, decision.media)
    // Taken out, so the list is not shared and is reversed in place; popped from the end,
    // so each action is moved out rather than copied (an event carries a whole
    // notification, a dozen strings).
    var actions = decision.actions
    decision.actions = []
    actions.reverse()
    while let action = actions.popLast() {
      switch consume action {
      case .emit(let event): emit(event)
      case .disconnect(let reason):
        emit(.error("closing the link: \(reason)"))
        // The link it was decided for, or one still being set up.
        (session?.connection ?? shared.withLock { $0.connection })?.close()
      case .write(let bytes):
        guard let session else {
          step(.writeFailed("not connected"), in: loop)
          continue
        }
        // Sent now or queued behind the request outstanding; the answer comes back as an
        // event, before the Data Source notifications that follow it.
        let loop = loop as Loop
        let written: GATTClient.Answer<Void> = { [unowned self, tag = session.tag] _, result in
          let answer: WatchMachine.Input
          switch result {
          case .success: answer = .written(nil)
          case .failure(let error): answer = error.errorCode.map { .written($0.rawValue) } ?? .writeFailed("\(error)")
          }
          submit(.input(answer, from: tag), from: loop)
        }
        session.client.assumeIsolated(passing: (session.controlPoint, bytes, written)) { client, write in
          client.startWrite(write.0, write.1, onAnswer: write.2)
        }
      case .probe:
        guard let session else { continue }
        let probe = ATTPDU.readRequest(ReadRequest(handle: session.sourceCCCD))
        let loop = loop as Loop
        let probed: ATTConnection.Answer = { [unowned self, tag = session.tag] _, result in
          // Only a value that says "not subscribed" is news; no answer proves nothing.
          var subscribed = true
          if case .success(.readResponse(let value)) = result { subscribed = (value.value.first ?? 0) & 1 == 1 }
          submit(.input(.probed(subscribed: subscribed), from: tag), from: loop)
        }
        session.connection.assumeIsolated(passing: (probe, probed)) { connection, probe in
          connection.request(probe.0, onAnswer: probe.1)
        }
      case .media(let request):
        perform(request, on: session, media: media, in: loop)
      case .resubscribe:
        guard let session else { continue }
        // The new session begins where the subscriptions are written again: after what the
        // phone sent before (waiting now, it belongs to the old one), before what it sends
        // after.
        submit(.input(.sessionStarted(mtu: session.connection.mtu), from: session.tag), in: loop)
        // The phone dropped every subscription: AMS's too, which then registers afresh.
        session.client.assumeIsolated { client in
          for handle in session.cccds + (media?.cccds ?? []) {
            client.startWrite(handle, CCCDValue.notifications.bytes) { [self] _, result in
              if case .failure(let error) = result { emit(.error("subscribing again failed: \(error)")) }
            }
          }
        }
        if media != nil { step(.media(.started(available: true)), in: loop) }
      }
    }
  }

  /// Sends an AMS request; its answer comes back to the loop as `.answered`.
  private func perform(_ request: MediaRequest, on session: Session?, media: MediaHandles?, in loop: isolated Loop) {
    guard let session, let media else {
      step(.media(.answered(request, .failure(MediaFailure(code: nil, reason: "not connected")))), in: loop)
      return
    }
    let loop = loop as Loop
    let answer: GATTClient.Answer<[UInt8]> = { [unowned self, tag = session.tag] _, result in
      let failure = result.mapError { MediaFailure(code: $0.errorCode?.rawValue, reason: "\($0)") }
      submit(.input(.media(.answered(request, failure)), from: tag), from: loop)
    }
    session.client.assumeIsolated { client in
      // With response; with a Write Command where the characteristic takes only that,
      // answered once put on the link or queued for it (the phone says nothing; a queued
      // one that fails later is logged, and the link's end follows), and still ahead of any
      // request sent after it.
      let write = { (handle: UInt16, value: [UInt8], then: @escaping GATTClient.Answer<Void>) in
        guard media.commandOnly.contains(handle) else { return client.startWrite(handle, value, onAnswer: then) }
        then(client, Result { () throws(ATTError) in try client.writeWithoutResponse(handle, value) })
      }
      switch request {
      case .register(let registration):
        write(media.entityUpdate, registration.encoded()) { answer($0, $1.map { [] }) }
      case .remote(let command):
        write(media.remoteCommand, RemoteCommand(command).encoded()) { answer($0, $1.map { [] }) }
      case .readWhole(let attribute):
        // Select, then read: the loop has one such pair in flight at a time.
        write(media.entityAttribute, EntityAttributeSelection(attribute).encoded()) { client, result in
          switch result {
          case .success: client.startRead(media.entityAttribute, onAnswer: answer)
          case .failure(let error): answer(client, .failure(error))
          }
        }
      }
    }
  }

  func emit(_ event: consuming WatchEvent) {
    // Failures caused by stopping are not news.
    if case .error = event, stopped { return }
    if logger.enabled(.debug) { logger.debug("watch: \(event.json)") }
    hub.yield(event)
  }

  /// Ticks the machine when its deadline comes (a command's timeout, the liveness probe,
  /// the call and sharing checks, the rewrite after silence), and not otherwise: an idle
  /// watch costs no wake-ups. Never twice within 10 ms, whatever the machine says, so a
  /// deadline that a tick fails to move cannot make the timer spin.
  private func ticker(in loop: isolated Loop) async {
    var earliest = Duration.zero
    await loop.timer.run(
      next: { [clock] in loop.core.timerAsks(now: clock.now, earliest: earliest) },
      fire: { now in
        earliest = now + .milliseconds(10)
        submit(.input(.tick, from: nil), in: loop)
      })
  }
}
