import ANCS
import ATT
import GATT
import Runtime
import Synchronization
import Wire

/// What happened on the phone, for its console and for tests.
public enum PhoneEvent: Hashable, Sendable {
  case connected(session: Int, link: String)
  /// The phone's first steps on a new link are done, as an iPhone's: the ATT MTU agreed in
  /// the Exchange MTU it started, and the accessory's GAP Device Name (nil when it
  /// publishes none, or the read failed: `problem` says why).
  case identified(session: Int, mtu: Int, name: String?, problem: String?)
  /// The watch enabled Notification Source notifications: an ANCS session began.
  case sessionStarted(session: Int, preExisting: Int)
  case sessionEnded(session: Int)
  /// A Control Point command was answered on the Data Source.
  case answered(session: Int, command: String)
  /// A Control Point command was refused with this ATT error code.
  case refused(session: Int, command: String, code: UInt8)
  /// The watch performed an action; `outcome` says what it did ("answered", "declined", ...).
  case action(session: Int, uid: UInt32, action: String, title: String, outcome: String)
  case disconnected(session: Int)
  /// A quirk did something visible on the wire.
  case quirk(String)
  /// An accessory subscribed to ANCS; the user must allow it to receive notifications
  /// (`allow N`), as iOS 13 and later ask.
  case sharingRequested(session: Int, name: String?)
  /// The user allowed or revoked notification sharing for this accessory.
  case sharingChanged(session: Int, allowed: Bool)
  /// The accessory asked for other connection parameters (over the air); `broken` lists the
  /// rules of the Accessory Design Guidelines it broke, empty when they were accepted.
  case connectionParameters(session: Int?, link: String, request: ConnectionParameterRequest, broken: [String])
  /// Something happened to a bond: an accessory paired, encrypted with its bond, had lost
  /// it ("Peer removed pairing information" on an iPhone), or the user forgot it.
  case bond(BondEvent)
  /// An accessory sent an AMS Remote Command; `outcome` says what the player does now, or
  /// that it does not take that command now.
  case remoteCommand(session: Int, command: String, outcome: String)
  /// The track played to its end and the player went on by itself; `now` says what plays.
  case trackEnded(now: String)
}

/// The simulated iPhone: a notification center served as ANCS, with the Current Time and
/// Battery services, to any number of watches at once.
///
/// One loop: the phone is an actor, and every connection it serves runs on its executor
/// (`ATTConnection(executorOf:)`), with the GATT sessions on them. A request from any watch,
/// a change from the console or a scenario, and a timer all reach the phone's state there,
/// one at a time, in a plain call: the phone takes no lock on the path of a PDU (what it
/// reports to its observers, `events()`, goes through the event hub's). The characteristics'
/// handlers, which the GATT session calls isolated to itself, are on that executor too and
/// enter the phone with `assumeIsolated`, and so does what follows a write's answer (a
/// write's `then`, `afterResponse`): a PDU goes from the link to the phone's state, and
/// what that decides back onto the links, in one synchronous step. Whoever is elsewhere (the
/// console, a scenario, a test) reaches it with `await`. Given an event loop as its
/// executor (`init(executor:)`), the phone and its connections run on the loop's thread, and
/// the loop hands each PDU it reads to the connection in place, with no queue between.
public actor Phone: HomedActor {
  static let ancsService = BluetoothUUID(ANCSUUID.service)!
  static let currentTimeService: BluetoothUUID = 0x1805
  static let batteryService: BluetoothUUID = 0x180F

  struct Session {
    var id: Int
    var gatt: GATTSession
    var started = false
    var answers = 0
    var commands = 0
    /// The user allowed this accessory to receive notifications (Sharing.swift).
    var shared: Bool
    /// Notification Source is enabled but sharing is not allowed: the session starts when it is.
    var waitingForSharing = false
    /// The user was asked about this accessory already.
    var asked = false
    /// The accessory's GAP Device Name, once read.
    var name: String?
    /// Quirk silent-source: Notification Source sends nothing until its CCCD is written again.
    var silent = false
    /// What this accessory asked of the Apple Media Service.
    var media = MediaSession()

    /// The ANCS session stops (sharing revoked, Notification Source unsubscribed). Nothing
    /// of it waits in the phone: what a step decided went out in that step (`deliver`), so
    /// a session that starts again begins with its pre-existing report.
    mutating func stop() { started = false }
  }

  /// One notification to send.
  struct Outgoing {
    var handle: UInt16
    var value: [UInt8]
  }

  /// Notifications for one session, decided in a step and sent before it ends (`deliver`).
  struct Delivery {
    var gatt: GATTSession
    var notifications: [Outgoing]
  }

  struct State {
    var center = NotificationCenter()
    var battery: UInt8 = 80
    var sessions: [ObjectIdentifier: Session] = [:]
    var nextSession = 1
    var serviceChanged = false
    /// UIDs announced and retracted at once (quirk retract-uid).
    var retracted: Set<UInt32> = []
    /// The user's answers about sharing, by accessory name, kept while the phone runs (an
    /// iPhone remembers them per bonded device).
    var sharingDecisions: [String: Bool] = [:]
    /// The policy for watches still to come: the settings', until `allow` or `revoke` for
    /// every watch changes it.
    var sharingPolicy = SharingPolicy.allow
    /// Quirk call-new-uid: the UID a call had before it was given a new one, to the new one,
    /// so the console and scenarios can still name it by the UID they were told.
    var renamedUIDs: [UInt32: UInt32] = [:]
    /// The media player the Apple Media Service shows.
    var player = MediaPlayer()
    /// The published ANCS and AMS value handles, once looked up (nil: to look up again).
    var handles: Handles?
    /// When the current track ends, and the task that finishes it then (Phone+Media.swift).
    var trackEnd: Double?
    var trackTimer: Task<Void, Never>?

    /// Changes the session of `key` in place (nil when there is none): one look-up, and the
    /// session is neither copied nor moved. The dictionary's own optional subscript moves a
    /// value this large out and back through a heap-allocated frame at every change, several
    /// times per notification.
    mutating func withSession<T>(_ key: ObjectIdentifier, _ body: (inout Session) -> T) -> T? {
      guard let index = sessions.index(forKey: key) else { return nil }
      return body(&sessions.values[index])
    }
  }

  public nonisolated let server: GATTServer
  public nonisolated let quirks: Quirks
  /// The database layout and the iOS generation.
  public nonisolated let settings: PhoneSettings
  /// Test-only fault switches (Faults.swift); none by default.
  public nonisolated let faults: PhoneFaults
  /// How the Control Point answers, from `faults` (by the rules without them).
  let controlPointPolicy: ControlPointPolicy
  /// Everything else `faults` changes (by the rules without them).
  let policy: PhonePolicy
  let wallClock: any WallClock
  /// The media player's time (elapsed time within a track).
  let mediaClock: any EngineClock
  let logger: Logger
  /// Everything that changes, on the phone's executor. Unchecked for exclusivity at run
  /// time, as `ATTConnection`'s machine is: read or changed for every Control Point command
  /// and every notification, in plain accesses (`withState`). Nothing inside such an access
  /// reaches the state again: the closures run in it (`modify`'s and `changeMedia`'s
  /// `change`) are given the notification or the player, never the phone.
  @exclusivity(unchecked) var state = State()
  /// Seconds added to the wall clock (a scenario's or console's "time" step), readable from
  /// anywhere: the Date attribute for "now" (`dateNow`) is asked for off the phone's executor.
  let timeShift = Atomic<Int64>(0)
  private let hub = EventHub<PhoneEvent>()
  /// Where the links keep this phone's bonds, once told.
  private let bondBook = Locked<(any BondBook)?>(nil)
  /// Each connected link's session number, by the link's name, for what the Bluetooth host
  /// reports from its own loop (`judgedConnectionParameters`): changed only when a watch
  /// connects or goes.
  let linkSessions = Locked<[String: Int]>([:])
  /// The serial executor the phone and its connections run on.
  private nonisolated let home: ExecutorHome

  /// The phone's executor: the one given to `init`, or its own.
  public nonisolated var unownedExecutor: UnownedSerialExecutor { home.executor }
  public nonisolated var executorHome: ExecutorHome { home }

  /// A phone; `apps` are registered from the start (identifier to display name), as
  /// `register(app:name:)` does. With `executor` (the event loop that reads its links), it
  /// runs there rather than on an executor of its own.
  public init(
    quirks: Quirks = Quirks(), faults: PhoneFaults = [], settings: PhoneSettings = PhoneSettings(),
    wallClock: any WallClock = SystemWallClock(), mediaClock: any EngineClock = SystemClock(), logger: Logger = .none,
    apps: [String: String] = [:], executor: (any SerialExecutor)? = nil
  ) throws(DatabaseError) {
    home = ExecutorHome(executor)
    self.quirks = quirks
    self.faults = faults
    controlPointPolicy = ControlPointPolicy(faults)
    let policy = PhonePolicy(faults, settings: settings)
    self.policy = policy
    self.settings = settings
    var state = State()
    state.sharingPolicy = settings.sharing
    state.center.reusesRemovedUIDs = policy.reusesRemovedUIDs
    for (identifier, name) in apps { state.center.register(app: identifier, name: name) }
    self.wallClock = wallClock
    self.mediaClock = mediaClock
    self.logger = logger
    let iPhone = settings.layout == .iPhone
    server = try GATTServer(leading: iPhone ? [Self.genericAccessService(settings)] : [], services: [], logger: logger)
    if let flood = quirks.flood {
      // The flood is on the phone from the start: every session reports it as pre-existing.
      for index in 0..<flood { _ = state.center.post(Self.floodNotification(index)) }
    }
    self.state = state
    let currentTime = ServiceDefinition(
      uuid: Self.currentTimeService,
      characteristics: [
        CharacteristicDefinition(
          uuid: 0x2A2B, properties: [.read, .notify], read: { [unowned self] _ in self.currentTime() }),
        CharacteristicDefinition(
          uuid: 0x2A0F, properties: .read, read: { [unowned self] _ in localTimeInformation() }),
      ])
    // An iPhone answers Battery Level on an unpaired link with Insufficient Authentication.
    let battery = ServiceDefinition(
      uuid: Self.batteryService,
      characteristics: [
        CharacteristicDefinition(
          uuid: 0x2A19, properties: [.read, .notify], security: policy.batterySecurity,
          refusal: iPhone ? .insufficientAuthentication : nil,
          read: { [unowned self] _ in assumeIsolated(passing: ()) { phone, _ in [phone.state.battery] } })
      ])
    let services =
      iPhone
      ? Self.appleServices() + [battery, currentTime] + [Self.deviceInformationService(settings)].compactMap { $0 }
        + [ancsDefinition(), mediaService()]
      : [ancsDefinition(), currentTime, battery]
    for service in services { try server.add(service) }
  }

  nonisolated func ancsDefinition() -> ServiceDefinition {
    let source = CharacteristicDefinition(
      uuid: BluetoothUUID(ANCSUUID.notificationSource)!, properties: policy.sourceProperties,
      security: policy.sourceSecurity,
      subscribed: { [unowned self] session, value in
        assumeIsolated(passing: (session, value)) { $0.notificationSourceConfigured($1.0, $1.1) }
      })
    // An iPhone's Control Point has a descriptor of its own, taken to be Extended Properties.
    let control = CharacteristicDefinition(
      uuid: BluetoothUUID(policy.controlPointUUID)!, properties: policy.controlProperties,
      security: policy.controlSecurity,
      extendedProperties: settings.layout == .iPhone ? Self.reliableWrite : nil,
      write: { [unowned self] session, bytes in
        assumeIsolated(passing: (session, bytes)) { $0.controlPoint($1.0, $1.1) }
      })
    let data = CharacteristicDefinition(
      uuid: BluetoothUUID(ANCSUUID.dataSource)!, properties: policy.dataProperties, security: policy.dataSecurity)
    // An iPhone lists the Control Point first; the minimal layout keeps 1.0's order.
    let characteristics = settings.layout == .iPhone ? [control, source, data] : [source, control, data]
    return ServiceDefinition(
      uuid: Self.ancsService, characteristics: characteristics,
      shownFrom: policy.ancsHiddenUntilEncrypted ? .encrypted : .unencrypted)
  }

  /// Value handles of Notification Source, Control Point, Data Source as published now.
  var ancsHandles: ANCSHandles? { handles.ancs }

  /// The published handles, looked up in the server's database the first time after a
  /// change, then kept.
  var handles: Handles {
    if let known = state.handles { return known }
    let found = publishedHandles()
    state.handles = found
    return found
  }

  /// The published handles. Only this phone changes its server's database (when the quirk
  /// service-changed republishes ANCS, which forgets them), so they are kept in the state:
  /// a command or a change does not take the server's lock to find them.
  struct Handles {
    var ancs: ANCSHandles?
    var media: MediaHandles?
    /// Battery Level's and Current Time's value handles.
    var battery: UInt16?
    var time: UInt16?
  }

  /// Value handles of Notification Source, Control Point, Data Source.
  typealias ANCSHandles = (source: UInt16, control: UInt16, data: UInt16)

  /// The handles as the server publishes them now.
  nonisolated func publishedHandles() -> Handles {
    var found = Handles()
    if let handles = server.handles(of: Self.ancsService), handles.count == 3 {
      found.ancs =
        settings.layout == .iPhone
        ? (handles[1].value, handles[0].value, handles[2].value)
        : (handles[0].value, handles[1].value, handles[2].value)
    }
    if let handles = server.handles(of: IPhoneUUID.ams), handles.count == 3 {
      found.media = (handles[0].value, handles[1].value)
    }
    found.battery = server.handles(of: Self.batteryService)?.first?.value
    found.time = server.handles(of: Self.currentTimeService)?.first?.value
    return found
  }

  // A characteristic's handler enters the phone with `assumeIsolated(passing:)`
  // (Sources/Runtime): the GATT session that calls it runs on the phone's executor (`serve`
  // makes every connection so), which the call checks, trapping otherwise (a session of
  // this phone's server on a connection `serve` did not make), with no allocation.
  // The phone reaches a session of its own the same way: `cccd`, `notify`.

  /// This client's configuration for the characteristic at `valueHandle`.
  func cccd(_ gatt: GATTSession, _ valueHandle: UInt16) -> CCCDValue {
    gatt.assumeIsolated(passing: valueHandle) { $0.cccd(for: $1) }
  }

  /// Sends notifications of `values` on `gatt`, put on its link now (`GATTSession.notify`).
  func notify(_ gatt: GATTSession, _ valueHandle: UInt16, _ values: [[UInt8]]) -> Result<Bool, ATTError> {
    gatt.assumeIsolated(passing: (valueHandle, values)) { gatt, notification in
      Result { () throws(ATTError) in try gatt.notify(notification.0, values: notification.1) }
    }
  }

  /// The state, in place, for a step on the phone's executor.
  @inline(__always)
  func withState<T>(_ body: (inout State) -> T) -> T { body(&state) }

  // MARK: - Events

  deinit { state.trackTimer?.cancel() }

  /// A stream of everything that happens from now on.
  public nonisolated func events() -> EventStream<PhoneEvent> { hub.stream() }

  /// Has `body` called with everything that happens from now on, in the step that reports
  /// it (`EventHub.observe`): on the phone's executor, or for bond events and connection
  /// parameter requests on the thread that reports them (the Bluetooth host's loop), with
  /// no queue or task between. One observer per phone, for its life: false when one is set
  /// already. `body` must not block, and must bear calls from two threads.
  @discardableResult
  public nonisolated func observe(_ body: @escaping @Sendable (PhoneEvent) -> Void) -> Bool { hub.observe(body) }

  nonisolated func emit(_ event: PhoneEvent) { hub.yield(event) }

  // MARK: - Connections

  /// Serves one watch over `bearer` until the link closes.
  public func serve(_ bearer: any ATTBearer, clock: any EngineClock = SystemClock()) async {
    let connection = ATTConnection(
      bearer: bearer, clock: clock, options: .init(localMTU: settings.mtu), logger: logger, executorOf: self)
    let gatt = await server.attach(connection)
    let id = withState { state in
      defer { state.nextSession += 1 }
      state.sessions[ObjectIdentifier(gatt)] = Session(
        id: state.nextSession, gatt: gatt, shared: state.sharingPolicy == .allow)
      return state.nextSession
    }
    let link = bearer.name
    linkSessions.withLock { $0[link] = id }
    emit(.connected(session: id, link: link))
    if settings.layout == .iPhone {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await connection.run() }
        group.addTask { await self.greet(connection, session: id) }
      }
    } else {
      await connection.run()
    }
    server.detach(connection)
    linkSessions.withLock { if $0[link] == id { $0[link] = nil } }
    let started = withState { $0.sessions.removeValue(forKey: ObjectIdentifier(gatt))?.started ?? false }
    if started { emit(.sessionEnded(session: id)) }
    emit(.disconnected(session: id))
  }

  /// What an iPhone does first on a link (Protocol/iPhone.md, Behaviour on the link): it
  /// starts Exchange MTU, then reads the accessory's Device Name.
  private func greet(_ connection: ATTConnection, session id: Int) async {
    do {
      if policy.exchangesMTU { try await connection.exchangeMTU() }
    } catch {
      // The link went, or the accessory never answered (ATT then closes the link).
      logger.info("session \(id): Exchange MTU failed: \(error)")
      return
    }
    var name: String?
    var problem: String?
    if !policy.readsDeviceName { return }
    do {
      let found = try await GATTClient(connection: connection).read(type: 0x2A00)
      if let value = found.first?.value {
        name = String(decoding: value, as: UTF8.self)
      } else {
        problem = "no Device Name published"
      }
    } catch {
      if await connection.closedReason != nil { return }
      problem = error.errorCode.map { "Device Name read answered \($0)" } ?? "Device Name read failed: \(error)"
    }
    emit(.identified(session: id, mtu: connection.mtu, name: name, problem: problem))
    if let name { named(id, name) }
  }

  /// Number of connected watches.
  public var connectionCount: Int { withState { $0.sessions.count } }

  // MARK: - The notification center

  public var notifications: [PhoneNotification] { withState { $0.center.notifications } }
  public var apps: [String: String] { withState { $0.center.apps } }

  /// Registers an app (its identifier and display name); with `unlessKnown`, only if it is
  /// not registered yet.
  public func register(app identifier: String, name: String, unlessKnown: Bool = false) {
    if unlessKnown && state.center.apps[identifier] != nil { return }
    state.center.register(app: identifier, name: name)
  }

  /// Posts a notification and announces it to every session. Returns it with its UID.
  @discardableResult
  public func post(_ notification: PhoneNotification) async -> PhoneNotification {
    let source = ancsHandles?.source
    if quirks.retractUID {
      let (phantom, deliveries) = withState { state -> (NotificationSourceEvent, [Delivery]) in
        var ghost = notification
        ghost.title = "(retracted)"
        let posted = state.center.post(ghost)
        let event = state.center.event(.added, for: posted)
        _ = state.center.remove(posted.uid)
        state.retracted.insert(posted.uid)
        return (event, announce(event, to: source, in: state))
      }
      emit(.quirk("retract-uid: announced UID \(phantom.notificationUID) and retracted it"))
      deliver(deliveries)
    }
    let (posted, deliveries) = withState { state in
      let posted = state.center.post(notification)
      let event = state.center.event(.added, for: posted, extraFlags: quirks.preExistingOnNew ? .preExisting : [])
      return (posted, announce(event, to: source, in: state))
    }
    deliver(deliveries)
    return posted
  }

  /// Changes a notification and announces Modified. Nil when the UID does not exist.
  @discardableResult
  public func modify(_ uid: UInt32, _ change: @Sendable (inout PhoneNotification) -> Void) -> PhoneNotification? {
    let source = ancsHandles?.source
    let result = withState { state -> (PhoneNotification, [Delivery])? in
      guard let changed = state.center.modify(state.renamedUIDs[uid] ?? uid, change) else { return nil }
      return (changed, announce(state.center.event(.modified, for: changed), to: source, in: state))
    }
    guard let (changed, deliveries) = result else { return nil }
    deliver(deliveries)
    return changed
  }

  /// Removes a notification and announces Removed. False when the UID does not exist.
  @discardableResult
  public func remove(_ uid: UInt32) -> Bool {
    let source = ancsHandles?.source
    let deliveries = withState { state -> [Delivery]? in
      guard let removed = state.center.remove(state.renamedUIDs[uid] ?? uid) else { return nil }
      return quirks.loseRemoved ? [] : announce(state.center.event(.removed, for: removed), to: source, in: state)
    }
    guard let deliveries else { return false }
    if quirks.loseRemoved {
      emit(.quirk("lose-removed: Removed event for UID \(uid) not sent"))
      return true
    }
    deliver(deliveries)
    return true
  }

  /// Sets the battery level (0-100) and notifies subscribers.
  public func setBattery(_ level: UInt8) {
    let level = min(level, 100)
    let handle = handles.battery
    deliver(
      withState { state in
        state.battery = level
        return handle.map {
          Self.deliveries([Outgoing(handle: $0, value: [level])], for: Self.everySession(state), in: state)
        } ?? []
      })
  }

  public var battery: UInt8 { withState { $0.battery } }

  /// Sets the phone's local time (seconds since 1970-01-01 in local time) and notifies
  /// Current Time subscribers.
  public func setTime(localSecondsSinceEpoch seconds: Int64) {
    let (now, offset) = wallClock.now()
    timeShift.store(seconds - (now + Int64(offset)), ordering: .releasing)
    notifyTime()
  }

  // MARK: - Bonds

  /// Keeps this phone's bonds in `book` (the links' keyring, or the Bluetooth host's bond
  /// store), reporting what happens to them as `.bond` events.
  public nonisolated func keepBonds(in book: any BondBook) {
    bondBook.withLock { $0 = book }
    book.observe { [weak self] event in self?.emit(.bond(event)) }
    // FAULT just-works-only: breaks "an accessory that asks for MITM protection gets it".
    if faults.contains(.justWorksOnly) { book.limitPairing(to: .encrypted) }
  }

  /// How this phone reacts when an accessory lacks the key of its bond: as an iPhone, it
  /// keeps the bond and drops the link (Protocol/iPhone.md, Pairing and bonds).
  public nonisolated var disconnectsOnKeyMissing: Bool { policy.disconnectsOnKeyMissing }

  /// Where this phone's bonds are kept; nil when its links keep none.
  public nonisolated var bonds: (any BondBook)? { bondBook.withLock { $0 } }

  /// Forgets the bond with `peer`, or every bond, as iOS's "Forget This Device" does, and
  /// drops the links of the accessories forgotten. Returns their addresses; nil when this
  /// phone keeps no bonds.
  public nonisolated func forget(_ peer: String?) throws(BondBookError) -> [String]? {
    guard let book = bonds else { return nil }
    // Addresses are written in capitals; what was typed may not be.
    let forgotten = try book.forget(peer?.uppercased())
    for session in server.sessions where session.connection.bearer.peerAddress.map(forgotten.contains) == true {
      session.connection.close()
    }
    return forgotten
  }

  /// Closes every watch's link (as walking out of radio range would).
  public nonisolated func disconnectAll() {
    for session in server.sessions { session.connection.close() }
  }

  /// Sends the current time to Current Time subscribers.
  public func notifyTime() {
    guard let handle = handles.time else { return }
    deliver(
      withState { state in
        Self.deliveries(
          [Outgoing(handle: handle, value: currentTime())], for: Self.everySession(state),
          in: state)
      })
  }

  /// A live event for every session whose ANCS session has started, decided in the step
  /// that made the change (a session that starts later has the notification in its
  /// pre-existing report instead, so nothing is announced twice), for the caller to send
  /// (`deliver`). `source` is the Notification Source's value handle.
  func announce(
    _ event: NotificationSourceEvent, to source: UInt16?, in state: State, except skipped: ObjectIdentifier? = nil
  ) -> [Delivery] {
    guard let source else { return [] }
    let event = Outgoing(handle: source, value: quirked(policy.live(event)).encoded())
    let keys = state.sessions.filter { $0.value.started && !$0.value.silent && $0.key != skipped }.map(\.key)
    return Self.deliveries([event], for: keys, in: state)
  }

  /// `notifications` for each session of `keys`, in that order, for the caller to send.
  static func deliveries(_ notifications: [Outgoing], for keys: [ObjectIdentifier], in state: State) -> [Delivery] {
    guard !notifications.isEmpty else { return [] }
    return keys.compactMap { key in
      state.sessions.index(forKey: key).map {
        Delivery(gatt: state.sessions.values[$0].gatt, notifications: notifications)
      }
    }
  }

  /// Every session's key, in session order.
  static func everySession(_ state: State) -> [ObjectIdentifier] {
    state.sessions.sorted { $0.value.id < $1.value.id }.map(\.key)
  }

  /// Sends what a step decided, before the step ends: each notification is put on its
  /// link now, in order (`GATTSession.notify`, which sends only where the client
  /// subscribed). With no
  /// suspension between a change and its notifications, nothing decided later can overtake
  /// them, and the phone keeps no queue of its own.
  func deliver(_ deliveries: [Delivery]) {
    for delivery in deliveries {
      for next in delivery.notifications {
        if case .failure(let error) = notify(delivery.gatt, next.handle, [next.value]) {
          logger.info("notification on handle \(next.handle) not delivered: \(error)")
        }
      }
    }
  }

  /// An event as the quirks change it, on its way out (live and pre-existing alike).
  nonisolated func quirked(_ event: NotificationSourceEvent) -> NotificationSourceEvent {
    guard quirks.reservedFlags else { return event }
    var event = event
    event.eventFlags.insert(Self.reservedFlagBit5)
    return event
  }

  /// EventFlags bit 5: reserved by the ANCS specification, set by iPhones on MMS.
  static let reservedFlagBit5 = EventFlags(rawValue: 1 << 5)

  /// Counts a Data Source answer; the quirks drop-subscriptions, revoke-sharing and
  /// silent-source act on the N-th.
  func answered(_ gatt: GATTSession) {
    let (drop, revoke, silence, id) = withState { state -> (Bool, Bool, Bool, Int) in
      state.withSession(ObjectIdentifier(gatt)) { session in
        session.answers += 1
        let silence = quirks.silentSourceAfter == session.answers
        if silence { session.silent = true }
        return (
          quirks.dropSubscriptionsAfter == session.answers, quirks.revokeSharingAfter == session.answers, silence,
          session.id
        )
      } ?? (false, false, false, 0)
    }
    if silence {
      emit(.quirk("silent-source: watch \(id)'s Notification Source went silent; its CCCD still reads enabled"))
    }
    if drop {
      gatt.assumeIsolated(passing: ()) { gatt, _ in gatt.clearSubscriptions() }
      emit(.quirk("drop-subscriptions: the subscriptions were silently dropped"))
    }
    if revoke {
      emit(.quirk("revoke-sharing: the user revoked sharing for watch \(id)"))
      revokeSharing(session: id)
    }
  }

  // MARK: - Sessions

  private func notificationSourceConfigured(_ gatt: GATTSession, _ value: CCCDValue) {
    let key = ObjectIdentifier(gatt)
    // Writing the CCCD again is what brings a silent Notification Source back (quirk
    // silent-source; coredevices/PebbleOS#1348).
    let revived = withState { state -> Bool in
      defer { state.sessions[key]?.silent = false }
      return state.sessions[key]?.silent ?? false
    }
    if revived { emit(.quirk("silent-source: the Notification Source CCCD was written again; events resume")) }
    guard value.contains(.notifications) else {
      let (ended, id) = withState { state -> (Bool, Int) in
        let ended = state.sessions[key]?.started ?? false
        state.sessions[key]?.stop()
        state.sessions[key]?.waitingForSharing = false
        return (ended, state.sessions[key]?.id ?? 0)
      }
      if ended { emit(.sessionEnded(session: id)) }
      return
    }
    // Until the user allows sharing the subscription is taken and nothing is sent.
    let (blocked, ask, id, name) = withState { state -> (Bool, Bool, Int, String?) in
      guard var session = state.sessions[key], !session.shared else { return (false, false, 0, nil) }
      session.waitingForSharing = true
      let ask = state.sharingPolicy == .ask && !session.asked
      session.asked = true
      state.sessions[key] = session
      return (true, ask, session.id, session.name)
    }
    if blocked {
      if ask { emit(.sharingRequested(session: id, name: name)) }
      return
    }
    startSession(gatt)
  }

  /// Starts an ANCS session: "at session start the phone reports every existing
  /// notification" with PreExisting. The report and the start of live events are one step:
  /// a change is either in the report or announced after it, never both, never before it.
  func startSession(_ gatt: GATTSession) {
    let key = ObjectIdentifier(gatt)
    let source = ancsHandles?.source
    let (id, count, renamed, deliveries) = withState { state in
      let renamed = quirks.callNewUID ? Self.renameCalls(&state) : []
      // Other watches, whose sessions go on, see the old UID go and the new one come.
      var deliveries = renamed.flatMap {
        announce($0.removed, to: source, in: state, except: key)
          + announce($0.added, to: source, in: state, except: key)
      }
      state.sessions[key]?.started = true
      state.sessions[key]?.waitingForSharing = false
      let report = state.center.notifications.map {
        quirked(state.center.event(.added, for: $0, extraFlags: policy.preExistingFlag)).encoded()
      }
      if let source {
        deliveries += Self.deliveries(report.map { Outgoing(handle: source, value: $0) }, for: [key], in: state)
      }
      return (state.sessions[key]?.id ?? 0, report.count, renamed, deliveries)
    }
    for (removed, added) in renamed {
      emit(
        .quirk("call-new-uid: the ongoing call UID \(removed.notificationUID) is now UID \(added.notificationUID)"))
    }
    emit(.sessionStarted(session: id, preExisting: count))
    deliver(deliveries)
  }

  /// Quirk call-new-uid: every incoming call is posted again under a new UID (as iOS does
  /// when an accessory subscribes again during a call, coredevices/PebbleOS commit
  /// 25cb2ee4a); returns, for each, the events that tell a running session.
  static func renameCalls(_ state: inout State) -> [(removed: NotificationSourceEvent, added: NotificationSourceEvent)]
  {
    var renamed: [(removed: NotificationSourceEvent, added: NotificationSourceEvent)] = []
    for call in state.center.notifications where call.category == .incomingCall {
      guard let old = state.center.remove(call.uid) else { continue }
      let removed = state.center.event(.removed, for: old)
      let new = state.center.post(old)
      for (from, to) in state.renamedUIDs where to == old.uid { state.renamedUIDs[from] = new.uid }
      state.renamedUIDs[old.uid] = new.uid
      renamed.append((removed, state.center.event(.added, for: new)))
    }
    return renamed
  }

  /// The index-th notification of the flood quirk: a mail of realistic size (a 50-byte
  /// subject, a 320-byte body).
  public static func floodNotification(_ index: Int) -> PhoneNotification {
    let number = String(index + 1)
    return PhoneNotification(
      appIdentifier: "com.apple.mobilemail", category: .email,
      title: "Flood \(number): quarterly report, draft for review", subtitle: "Team mailing list",
      message: "Pre-existing message \(number). " + String(repeating: "Please find the figures attached. ", count: 9),
      date: ANCSDate(secondsSinceEpoch: 1_700_000_000 + Int64(index)).description)
  }

  func sessionID(_ gatt: GATTSession) -> Int { withState { $0.sessions[ObjectIdentifier(gatt)]?.id ?? 0 } }
}
