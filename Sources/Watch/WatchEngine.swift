import ANCS
import ATT
import GATT
import Wire

/// Why the watch could not use a phone's GATT database.
public struct WatchSetupError: Error, CustomStringConvertible {
  public var description: String
}

/// The ANCS client: connects (and reconnects with back-off), pairs, discovers ANCS inside
/// its service range, subscribes, and runs `WatchMachine` on everything the phone sends.
/// The display reads `state` and `events()`; the engine never waits on them.
public final class WatchEngine: Sendable {
  public typealias Connector = @Sendable () async throws -> any ATTBearer

  /// What one connection's session loop reacts to.
  enum Control: Sendable {
    case closed
    case serviceChanged
  }

  /// The live connection, for the actions the machine asks for.
  struct Context: Sendable {
    var generation: Int
    var client: GATTClient
    var controlPoint: UInt16
    var sourceCCCD: UInt16
    var dataCCCD: UInt16
    var subscribe: @Sendable () async throws -> Void
  }

  struct Shared {
    var machine: WatchMachine
    var context: Context?
    var generation = 0
    var stopped = false
    var connection: ATTConnection?
    /// The wait before the next connection attempt, which `stop()` cuts short.
    var backOff: Task<Void, Never>?
    /// Sessions that got as far as subscribing, ever.
    var sessionsStarted = 0
  }

  public let options: WatchOptions
  /// The watch's own small database, which a phone reads: GAP with its Device Name.
  let server: GATTServer
  let connect: Connector
  let clock: any EngineClock
  let logger: Logger
  let shared: Locked<Shared>
  private let hub = EventHub<WatchEvent>()
  /// Where the links keep the watch's bonds, once told.
  private let bondBook = Locked<(any BondBook)?>(nil)
  /// Work for the processor task: inputs that do not come from the receive loop, and actions
  /// the receive loop must not wait for (a Control Point write while another request is
  /// outstanding, a probe, a resubscription).
  enum Job: Sendable {
    case input(WatchMachine.Input, generation: Int?)
    /// An action for the link of `context`, and no other.
    case action(WatchMachine.Action, context: Context)
  }
  let jobs: AsyncStream<Job>
  let jobQueue: AsyncStream<Job>.Continuation

  public init(
    options: WatchOptions = WatchOptions(), clock: any EngineClock = SystemClock(), logger: Logger = .none,
    connect: @escaping Connector
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
    shared = Locked(Shared(machine: WatchMachine(options: options)))
    (jobs, jobQueue) = AsyncStream.makeStream()
  }

  /// A snapshot of the watch face's model.
  public var state: WatchState { shared.withLock { $0.machine.state } }

  /// The engine clock's time, the clock of `receivedAt` and `PhoneTime`.
  public var now: Duration { clock.now }

  /// Everything the watch reports from now on.
  public func events() -> AsyncStream<WatchEvent> { hub.stream() }

  /// Asks the phone to perform the notification's positive or negative action. `session`
  /// is the `WatchState.session` in which the wearer saw the notification (nil: the session
  /// now): should a new session have begun since, the UID is void and the action dropped
  /// (with an `error` event), never performed on whatever that UID names now.
  public func perform(_ action: ActionID, on uid: UInt32, session: Int? = nil) {
    let session = session ?? shared.withLock { $0.machine.state.session }
    feed(.perform(uid: uid, action: action, session: session))
  }

  /// Hands an input to the processor task.
  private func feed(_ input: WatchMachine.Input, generation: Int? = nil) {
    jobQueue.yield(.input(input, generation: generation))
  }

  /// Ends `run()`: closes the link and stops reconnecting.
  public func stop() {
    let (connection, backOff) = shared.withLock { shared in
      shared.stopped = true
      return (shared.connection, shared.backOff)
    }
    connection?.close()
    backOff?.cancel()
    feed(.link(.stopped))
    jobQueue.finish()
  }

  var stopped: Bool { shared.withLock { $0.stopped } }

  // MARK: - Running

  /// Connects and serves sessions until `stop()` (or the first loss, without `reconnect`).
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.process() }
      group.addTask { await self.ticker() }
      await connectionLoop()
      stop()
      group.cancelAll()
    }
    hub.finish()
  }

  private func connectionLoop() async {
    var attempt = 0
    // Link changes are applied here, in order with the sessions, never queued behind other
    // work: a new session's first fetch must find the old link's loss already taken in.
    while !stopped {
      await apply(.link(.connecting), generation: nil, onLoop: false)
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
        await apply(.link(.reconnecting(attempt: 0, retryIn: .zero, reason: reason)), generation: nil, onLoop: false)
        continue
      }
      attempt += 1
      let delay = min(options.maximumReconnectDelay, options.reconnectDelay * (1 << min(attempt - 1, 16)))
      await apply(
        .link(.reconnecting(attempt: attempt, retryIn: delay, reason: reason)), generation: nil, onLoop: false)
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
    let connection = ATTConnection(bearer: bearer, clock: clock, options: .init(localMTU: options.mtu), logger: logger)
    let client = GATTClient(connection: connection)
    server.attach(connection)
    let (controls, control) = AsyncStream<Control>.makeStream()
    let runner = Task {
      await connection.run()
      control.yield(.closed)
    }
    let stoppedNow = shared.withLock { shared -> Bool in
      shared.connection = connection
      return shared.stopped
    }
    defer {
      connection.close()
      server.detach(connection)
      // What is still queued for this link (answers, deferred writes) is void from now on.
      shared.withLock {
        $0.context = nil
        $0.connection = nil
        $0.generation += 1
      }
    }
    if stoppedNow { return }
    do {
      // FAULT skip-pairing: breaks "use ANCS over an encrypted link".
      // FAULT discover-before-pairing: pairs in setUp, after discovery.
      if options.faults.isDisjoint(with: [.skipPairing, .discoverBeforePairing]) { try await pair(bearer) }
      try await connection.exchangeMTU()
      // FAULT no-service-changed: breaks "subscribe to Service Changed".
      if !options.faults.contains(.noServiceChanged) { try await watchServiceChanged(client, control) }
      try await setUp(client, connection)
      await readPhoneStatus(client)
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
        do { try await setUp(client, connection) } catch { emit(.error("rediscovery failed: \(error)")) }
      }
    }
  }

  /// Discovers ANCS inside its service range, installs handlers and subscribes.
  private func setUp(_ client: GATTClient, _ connection: ATTConnection) async throws {
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
    func find(_ uuid: String) throws -> DiscoveredCharacteristic {
      guard let found = characteristics.first(where: { $0.uuid == BluetoothUUID(uuid)! }) else {
        throw WatchSetupError(description: "ANCS has no characteristic \(uuid)")
      }
      return found
    }
    let source = try find(ANCSUUID.notificationSource)
    let control = try find(ANCSUUID.controlPoint)
    let data = try find(ANCSUUID.dataSource)
    let sourceCCCD = try await cccd(of: source, client)
    let dataCCCD = try await cccd(of: data, client)
    if options.faults.contains(.discoverBeforePairing) && connection.bearer.securityLevel < .encrypted {
      try await pair(connection.bearer)
    }
    let generation = shared.withLock { shared in
      shared.generation += 1
      return shared.generation
    }
    // Events and answers are handled on the receive loop itself, in arrival order.
    client.onValue(source.valueHandle) { [unowned self] in
      await apply(.notificationSource($0.value), generation: generation, onLoop: true)
    }
    client.onValue(data.valueHandle) { [unowned self] in
      await apply(.dataSource($0.value), generation: generation, onLoop: true)
    }
    let dataFirst = options.dataSourceFirst
    let mtu = connection.mtu
    let subscribe: @Sendable () async throws -> Void = { [unowned self] in
      // The session starts before the events it brings.
      await apply(.sessionStarted(mtu: mtu), generation: generation, onLoop: false)
      for handle in dataFirst ? [dataCCCD, sourceCCCD] : [sourceCCCD, dataCCCD] {
        try await client.configure(cccd: handle, .notifications)
      }
    }
    shared.withLock {
      $0.context = Context(
        generation: generation, client: client, controlPoint: control.valueHandle, sourceCCCD: sourceCCCD,
        dataCCCD: dataCCCD, subscribe: subscribe)
    }
    try await subscribe()
    shared.withLock { $0.sessionsStarted += 1 }
    await apply(.link(.connected(connection.bearer.name)), generation: generation, onLoop: false)
  }

  private func pair(_ bearer: any ATTBearer) async throws {
    do {
      _ = try await bearer.pair(options.security == .authenticated ? .authenticated : .encrypted)
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

  /// Forgets every bond, as resetting a watch does, and drops the link: the phone, if it
  /// still holds its bond, meets a missing key. Returns the addresses forgotten; nil when the
  /// watch keeps no bonds.
  public func forgetBonds() throws -> [String]? {
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
    try await client.subscribe(changed, indications: true) { _ in control.yield(.serviceChanged) }
  }

  /// Current Time and battery level, read once and then followed.
  private func readPhoneStatus(_ client: GATTClient) async {
    for (service, characteristic) in [(BluetoothUUID(0x1805), BluetoothUUID(0x2A2B)), (0x180F, 0x2A19)] {
      do {
        guard let found = try await client.discoverPrimaryServices(service).first,
          let value = try await client.discoverCharacteristics(of: found).first(where: { $0.uuid == characteristic })
        else { continue }
        let generation = shared.withLock { $0.generation }
        let wrap: @Sendable ([UInt8]) -> WatchMachine.Input = {
          characteristic == 0x2A19 ? .battery($0.first ?? 0) : .currentTime($0)
        }
        feed(wrap(try await client.read(value.valueHandle)), generation: generation)
        if value.properties.contains(.notify) {
          try await client.subscribe(value) { [unowned self] in feed(wrap($0.value), generation: generation) }
        }
      } catch {
        emit(.error("reading \(characteristic): \(error)"))
      }
    }
  }

  // MARK: - The machine

  /// Performs the jobs handed to it, in order.
  private func process() async {
    for await job in jobs {
      switch job {
      case .input(let input, let generation): await apply(input, generation: generation, onLoop: false)
      case .action(let action, let context):
        if shared.withLock({ $0.generation }) == context.generation {
          await perform(action, on: context, decidedIn: context.generation, onLoop: false)
        }
      }
    }
  }

  /// Runs one input through the machine and performs its actions. `onLoop` is true on the
  /// connection's receive loop, which must never wait for an answer only it can deliver.
  private func apply(_ input: WatchMachine.Input, generation: Int?, onLoop: Bool) async {
    let now = clock.now
    // The link the actions are for is the one up when the machine decided them, taken under
    // the same lock: if it goes meanwhile, a write fails on it, never lands on the next one.
    let decided = shared.withLock { shared -> ([WatchMachine.Action], Context?, Int)? in
      if let generation, generation != shared.generation { return nil }
      return (shared.machine.handle(input, now: now), shared.context, shared.generation)
    }
    guard case (var actions, let context, let decidedIn)? = consume decided else { return }
    // Popped from the reversed list, so each action is moved out rather than copied (an
    // event carries a whole notification, a dozen strings).
    actions.reverse()
    while let action = actions.popLast() {
      switch consume action {
      // Events (most actions) are reported here, without `perform`'s async call.
      case .emit(let event): emit(event)
      case let other: await perform(other, on: context, decidedIn: decidedIn, onLoop: onLoop)
      }
    }
  }

  /// Performs `action` on the link of `context` (nil: no link was up when the machine
  /// decided it, in generation `decidedIn`).
  private func perform(_ action: WatchMachine.Action, on context: Context?, decidedIn: Int, onLoop: Bool) async {
    if case .disconnect(let reason) = action {
      emit(.error("closing the link: \(reason)"))
      // The link it was decided for, or one still being set up.
      (context?.client.connection ?? shared.withLock { $0.connection })?.close()
      return
    }
    guard let context else {
      // Between links: a write fails, unless a link has come up since (then the machine
      // has started a new session and this write is long void).
      if case .write = action { await apply(.writeFailed("not connected"), generation: decidedIn, onLoop: onLoop) }
      return
    }
    switch action {
    case .emit(let event): emit(event)
    case .disconnect: break  // above
    case .write(let bytes):
      // Sent now or queued behind the request outstanding on this link; the answer is
      // applied on the receive loop, before the Data Source notifications that follow it.
      await context.client.startWrite(context.controlPoint, bytes) { [unowned self] result in
        let input: WatchMachine.Input
        switch result {
        case .success: input = .written(nil)
        case .failure(let error): input = error.errorCode.map { .written($0.rawValue) } ?? .writeFailed("\(error)")
        }
        await apply(input, generation: context.generation, onLoop: true)
      }
    case .probe where onLoop, .resubscribe where onLoop:
      jobQueue.yield(.action(action, context: context))
    case .probe:
      let value = try? await context.client.read(context.sourceCCCD)
      let subscribed = value.map { $0.first.map { $0 & 1 == 1 } ?? false } ?? true
      await apply(.probed(subscribed: subscribed), generation: context.generation, onLoop: false)
    case .resubscribe:
      do { try await context.subscribe() } catch { emit(.error("subscribing again failed: \(error)")) }
    }
  }

  func emit(_ event: consuming WatchEvent) {
    // Failures caused by stopping are not news.
    if case .error = event, stopped { return }
    if logger.enabled(.debug) { logger.debug("watch: \(event.json)") }
    hub.yield(event)
  }

  /// One `.tick` a second on the engine clock (command timeouts, liveness, call and sharing
  /// checks, the rewrite after silence), or more often when one of those intervals is under
  /// two seconds, so each fires within half its length of being due.
  private func ticker() async {
    let period = max(
      .milliseconds(10),
      min(
        .seconds(1), options.commandTimeout / 2, options.livenessInterval / 2, options.callRecheckInterval / 2,
        options.sharingCheckDelay / 2, options.sharingRecheckInterval / 2,
        (options.resubscribeAfterSilence ?? .seconds(1)) / 2))
    while !stopped {
      do { try await clock.sleep(until: clock.now + period) } catch { return }
      feed(.tick)
    }
  }
}
