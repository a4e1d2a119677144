import ANCS
import ATT
import GATT
import Links
import Runtime
import Wire

/// A case's verdict other than a pass, thrown from a case body.
public enum CaseOutcome: Error, Hashable, Sendable, CustomStringConvertible {
  /// A rule was broken: what was expected, what came.
  case failed(String)
  /// The case could not run (no stimulus channel, for example). Never a pass.
  case skipped(String)
  /// The implementation could not be reached at all (nothing listens, nothing connects).
  /// Before anything was reached, it ends the run: no later case could do better.
  case unreachable(String)

  public var description: String {
    switch self {
    case .failed(let why), .unreachable(let why): return why
    case .skipped(let why): return "skipped: \(why)"
    }
  }
}

/// The harness's bonds, in either role; a case that needs them is skipped without.
func harnessBonds(_ book: (any BondBook)?) throws(CaseOutcome) -> any BondBook {
  guard let book else {
    throw .skipped("needs a harness that keeps bonds: a simulated link (unix:, tcp:) or Bluetooth")
  }
  return book
}

/// Fails the case with `message` unless `condition` holds.
func check(_ condition: Bool, _ message: @autoclosure () -> String) throws(CaseOutcome) {
  if !condition { throw .failed(message()) }
}

/// The phone under test, as the runner reaches it.
public struct PhoneUnderTest: Sendable {
  /// Opens a new link to the phone (unencrypted; cases pair when they need to).
  public var connect: @Sendable () async throws -> any ATTBearer
  /// Makes the phone post and remove notifications; nil when there is no control channel,
  /// and the cases that need one are skipped.
  public var stimulus: (any PhoneStimulus)?
  /// The harness accessory's own bonds on the links `connect` gives; nil when those links
  /// keep none, and the bond cases are skipped.
  public var bonds: (any BondBook)?
  /// The harness accessory can pair with MITM protection: on the simulated links always;
  /// over the air when it has a display or a keyboard (`conform phone --io`).
  public var pairsWithMITM: Bool

  public init(
    connect: @escaping @Sendable () async throws -> any ATTBearer, stimulus: (any PhoneStimulus)?,
    bonds: (any BondBook)? = nil, pairsWithMITM: Bool = true
  ) {
    self.connect = connect
    self.stimulus = stimulus
    self.bonds = bonds
    self.pairsWithMITM = pairsWithMITM
  }
}

/// The handles of the phone's ANCS service, as discovered.
public struct ANCSHandles: Hashable, Sendable {
  public var service: DiscoveredService
  public var notificationSource: DiscoveredCharacteristic
  public var controlPoint: DiscoveredCharacteristic?
  public var dataSource: DiscoveredCharacteristic?
  public var notificationSourceCCCD: UInt16?
  public var dataSourceCCCD: UInt16?
}

/// What a case works with: links to the phone, the stimulus, and clean-up of everything it
/// opened or posted.
public final class NPContext: CaseContext {
  public let phone: PhoneUnderTest
  let clock: any EngineClock
  let timeout: Duration
  let capture: BtsnoopWriter?
  public let log: CaseLog
  /// Until a case has reached the phone: how long the first connection may take.
  let contactWait: Duration?
  private let opened = Locked<[NPSession]>([])
  private let posted = Locked<[UInt32]>([])
  /// The case revoked notification sharing: allowed again when it ends.
  private let revoked = Locked(false)

  init(
    phone: PhoneUnderTest, clock: any EngineClock, timeout: Duration, capture: BtsnoopWriter?,
    contactWait: Duration? = nil
  ) {
    self.phone = phone
    self.clock = clock
    self.timeout = timeout
    self.capture = capture
    self.log = CaseLog(clock: clock)
    self.contactWait = contactWait
  }

  /// Opens a link. With `encrypt`, pairs to the encrypted level first; with `mtu`, exchanges
  /// ATT_MTU offering that receive MTU.
  public func open(encrypt: Bool = true, mtu: UInt16? = nil) async throws(CaseOutcome) -> NPSession {
    let raw: any ATTBearer
    raw = try await log.awaiting("the phone to take the connection") { () throws(CaseOutcome) in
      guard let wait = contactWait else {
        do { return try await phone.connect() } catch { throw .failed("cannot connect to the phone: \(error)") }
      }
      // Before any case has reached the phone, nobody may be there yet: try again until the
      // wait is over (one try with no wait), then the run ends with the last reason.
      if wait <= .zero {
        do { return try await phone.connect() } catch { throw .unreachable("cannot connect to the phone: \(error)") }
      }
      let deadline = clock.now + wait
      while true {
        do {
          guard
            let bearer = try await firstWithin(deadline - clock.now, clock: clock, late: { $0.close() }, phone.connect)
          else { throw CaseOutcome.unreachable("no phone connected within \(CaseLog.seconds(wait))") }
          return bearer
        } catch let outcome as CaseOutcome {
          throw outcome
        } catch {
          if clock.now >= deadline { throw .unreachable("cannot connect to the phone: \(error)") }
          try? await clock.sleep(until: min(deadline, clock.now + .milliseconds(100)))
        }
      }
    }
    let log = self.log
    let received = Inbox<ATTPDU>()
    let recorded = RecordingBearer(raw) { pdu in
      log.peerDid(CaseLog.describe(pdu))
      received.push(pdu)
    }
    let bearer: any ATTBearer = capture.map { CapturingBearer(recorded, writer: $0, role: .peripheral) } ?? recorded
    if encrypt {
      do { try await NPSession.pair(bearer) } catch {
        bearer.close()
        throw error
      }
    }
    let session = await NPSession(
      bearer: bearer, clock: clock, mtu: mtu ?? ATTConnection.defaultMTU, timeout: timeout, log: log,
      received: received)
    opened.withLock { $0.append(session) }
    if mtu != nil {
      do { _ = try await session.connection.exchangeMTU() } catch { throw .failed("Exchange MTU failed: \(error)") }
    }
    return session
  }

  /// Opens an encrypted link, discovers ANCS and subscribes to the Data Source, then to the
  /// Notification Source (which starts the session and brings the pre-existing events).
  public func openSubscribed(mtu: UInt16? = nil) async throws(CaseOutcome) -> (NPSession, ANCSHandles) {
    let session = try await open(mtu: mtu)
    let handles = try await session.discover()
    try await session.subscribeDataSource(handles)
    try await session.subscribeNotificationSource(handles)
    try await session.readBackNotificationSourceCCCD(handles)
    return (session, handles)
  }

  /// The stimulus channel; the case is skipped without one.
  public func stimulus() throws(CaseOutcome) -> any PhoneStimulus {
    guard let stimulus = phone.stimulus else {
      throw .skipped("needs a control channel to make the phone post notifications (--spawn)")
    }
    return stimulus
  }

  /// Posts a notification, removed again when the case ends.
  public func post(_ notification: StimulusNotification) async throws(CaseOutcome) -> UInt32 {
    let stimulus = try stimulus()
    do {
      let uid = try await stimulus.post(notification)
      posted.withLock { $0.append(uid) }
      return uid
    } catch {
      throw .failed("the control channel could not post: \(error)")
    }
  }

  public func remove(_ uid: UInt32) async throws(CaseOutcome) {
    let stimulus = try stimulus()
    posted.withLock { $0.removeAll { $0 == uid } }
    do { try await stimulus.remove(uid: uid) } catch { throw .failed("the control channel could not remove: \(error)") }
  }

  public func modify(_ uid: UInt32, message: String) async throws(CaseOutcome) {
    let stimulus = try stimulus()
    do {
      try await stimulus.modify(uid: uid, message: message)
    } catch {
      throw .failed("the control channel could not modify: \(error)")
    }
  }

  /// Allows or revokes notification sharing on the phone; the case is skipped when the
  /// control channel cannot. A revocation is undone when the case ends.
  public func share(_ allowed: Bool) async throws(CaseOutcome) {
    let stimulus = try stimulus()
    if !allowed { revoked.withLock { $0 = true } }
    do { try await stimulus.share(allowed) } catch { throw .skipped("\(error)") }
    if allowed { revoked.withLock { $0 = false } }
  }

  /// The harness accessory's bonds; the case is skipped when its links keep none.
  public func bonds() throws(CaseOutcome) -> any BondBook { try harnessBonds(phone.bonds) }

  /// Makes the phone forget every bond, as its user's "Forget This Device" does; the case is
  /// skipped when the control channel cannot.
  public func forgetOnPhone() async throws(CaseOutcome) {
    let stimulus = try stimulus()
    do { try await stimulus.forgetBonds() } catch { throw .skipped("\(error)") }
  }

  /// Makes the phone's media player play `track` now; the case is skipped when the control
  /// channel cannot.
  public func play(_ track: StimulusTrack) async throws(CaseOutcome) {
    let stimulus = try stimulus()
    do { try await stimulus.play(track) } catch { throw .skipped("\(error)") }
  }

  /// Forgets a notification the phone removed by itself (after an action).
  func forget(_ uid: UInt32) { posted.withLock { $0.removeAll { $0 == uid } } }

  /// Closes every link the case opened (which also ends any request still waiting).
  public func closeLinks() {
    for session in opened.withLock({ $0 }) { session.close() }
  }

  /// Removes what the case posted and is still there; a refusal (already gone) is fine.
  public func cleanUp() async {
    guard let stimulus = phone.stimulus else { return }
    if revoked.withLock({ $0 }) { try? await stimulus.share(true) }
    for uid in posted.withLock({ state in
      defer { state = [] }
      return state
    }) {
      try? await stimulus.remove(uid: uid)
    }
  }
}

/// One link to the phone, with the harness as GATT client (the accessory), and as the GATT
/// server of an accessory's own small database (GAP, with its Device Name), which an iPhone
/// reads.
public final class NPSession: Sendable {
  public let connection: ATTConnection
  public let client: GATTClient
  let notificationSource = Inbox<[UInt8]>()
  let dataSource = Inbox<[UInt8]>()
  /// AMS notifications, once `discoverMedia` found the service.
  let remoteCommands = Inbox<[UInt8]>()
  let entityUpdates = Inbox<[UInt8]>()
  /// Every PDU the phone sends, as it comes.
  let received: Inbox<ATTPDU>
  let server: GATTServer
  let log: CaseLog
  private let runner: Task<Void, Never>

  /// The GAP Device Name the harness publishes as an accessory.
  public static let deviceName = "ancs-sim conform"

  init(
    bearer: any ATTBearer, clock: any EngineClock, mtu: UInt16, timeout: Duration, log: CaseLog,
    received: Inbox<ATTPDU>
  ) async {
    self.log = log
    self.received = received
    connection = ATTConnection(
      bearer: bearer, clock: clock, options: ATTConnection.Options(localMTU: mtu, transactionTimeout: timeout))
    client = await GATTClient(connection: connection)
    // GAP with Device Name and Appearance (0x00C0, Generic Watch); one service cannot
    // exhaust the handles.
    server = try! GATTServer(
      leading: [
        ServiceDefinition(
          uuid: 0x1800,
          characteristics: [.constant(0x2A00, Array(Self.deviceName.utf8)), .constant(0x2A01, [0xC0, 0x00])])
      ], services: [], serviceChanged: false)
    await server.attach(connection)
    let connection = connection
    let inboxes = [notificationSource, dataSource, remoteCommands, entityUpdates]
    let server = server
    runner = Task {
      await connection.run()
      server.detach(connection)
      for inbox in inboxes { inbox.close() }
      received.close()
    }
  }

  func close() {
    connection.close()
    for inbox in [notificationSource, dataSource, remoteCommands, entityUpdates] { inbox.close() }
    received.close()
  }

  /// The next PDU from the phone that `match` picks (nil: skipped); `what` names it for a
  /// case that runs out of time.
  public func awaitReceived<T: Sendable>(_ what: String, _ match: @escaping @Sendable (ATTPDU) -> T?)
    async throws(CaseOutcome) -> T
  {
    try await log.awaiting(what) { () throws(CaseOutcome) -> T in
      while let pdu = await received.next() {
        if let found = match(pdu) { return found }
      }
      throw .failed("the link closed while waiting for \(what)")
    }
  }

  /// Pairs to the encrypted level on this link, as an accessory that discovered first does.
  public func pair() async throws(CaseOutcome) { try await Self.pair(connection.bearer) }

  /// Pairs this link with MITM protection, as an accessory that requires it does; the level
  /// the link then has.
  public func pairAuthenticated() async throws(CaseOutcome) -> SecurityLevel {
    do { return try await connection.bearer.pair(.authenticated) } catch {
      throw .failed("pairing with MITM protection failed: \(error)")
    }
  }

  /// Pairs `bearer` to the encrypted level at least.
  static func pair(_ bearer: any ATTBearer) async throws(CaseOutcome) {
    let level: SecurityLevel
    do { level = try await bearer.pair(.encrypted) } catch { throw .failed("pairing failed: \(error)") }
    try check(level >= .encrypted, "pairing gave only \(level)")
  }

  /// ATT_MTU - 3: the most a notification carries.
  public var notificationCapacity: Int { connection.mtu - 3 }

  // MARK: - Discovery and subscription

  /// Finds the one ANCS service and its characteristics and CCCDs, and routes their
  /// notifications to the inboxes.
  public func discover() async throws(CaseOutcome) -> ANCSHandles {
    let services: [DiscoveredService]
    do {
      services = try await client.discoverPrimaryServices(BluetoothUUID(ANCSUUID.service)!)
    } catch {
      throw .failed("primary service discovery for ANCS failed: \(error)")
    }
    try check(services.count == 1, "expected exactly one ANCS service, found \(services.count)")
    let characteristics: [DiscoveredCharacteristic]
    do {
      characteristics = try await client.discoverCharacteristics(of: services[0])
    } catch {
      throw .failed("characteristic discovery in \(services[0].range) failed: \(error)")
    }
    func find(_ uuid: String) -> DiscoveredCharacteristic? {
      characteristics.first { $0.uuid == BluetoothUUID(uuid)! }
    }
    guard let source = find(ANCSUUID.notificationSource) else {
      throw .failed("no Notification Source characteristic (\(ANCSUUID.notificationSource)) in the ANCS service")
    }
    var handles = ANCSHandles(
      service: services[0], notificationSource: source, controlPoint: find(ANCSUUID.controlPoint),
      dataSource: find(ANCSUUID.dataSource))
    handles.notificationSourceCCCD = try await cccd(of: source)
    if let data = handles.dataSource { handles.dataSourceCCCD = try await cccd(of: data) }
    let notificationSource = notificationSource
    let dataSource = dataSource
    await client.onValue(source.valueHandle) { _, event in notificationSource.push(event.value) }
    if let data = handles.dataSource {
      await client.onValue(data.valueHandle) { _, event in dataSource.push(event.value) }
    }
    return handles
  }

  func cccd(of characteristic: DiscoveredCharacteristic) async throws(CaseOutcome) -> UInt16? {
    do {
      return try await client.discoverDescriptors(of: characteristic)
        .first { $0.uuid == .clientCharacteristicConfiguration }?.handle
    } catch {
      throw .failed("descriptor discovery of \(characteristic.uuid) failed: \(error)")
    }
  }

  public func subscribeNotificationSource(_ handles: ANCSHandles) async throws(CaseOutcome) {
    guard let cccd = handles.notificationSourceCCCD else { throw .failed("the Notification Source has no CCCD") }
    do { try await client.configure(cccd: cccd, .notifications) } catch {
      throw .failed("enabling Notification Source notifications failed: \(error)")
    }
  }

  /// Reads the Notification Source CCCD back: it must say notifications (01 00). The round
  /// trip also bounds the session start: a phone that handles requests in order has sent
  /// its PreExisting events before this answer, so what a case posts afterwards is new.
  /// (Posting inside that window can give one notification two Added events; the harness
  /// does not judge that race.)
  public func readBackNotificationSourceCCCD(_ handles: ANCSHandles) async throws(CaseOutcome) {
    guard let cccd = handles.notificationSourceCCCD else { throw .failed("the Notification Source has no CCCD") }
    let value: [UInt8]
    do { value = try await client.read(cccd) } catch {
      throw .failed("reading the Notification Source CCCD back failed: \(error)")
    }
    try check(
      value == [0x01, 0x00], "the Notification Source CCCD reads \(Hex.encode(value)) after enabling, not 01 00")
  }

  public func subscribeDataSource(_ handles: ANCSHandles) async throws(CaseOutcome) {
    guard let cccd = handles.dataSourceCCCD else { throw .failed("the Data Source is missing or has no CCCD") }
    do { try await client.configure(cccd: cccd, .notifications) } catch {
      throw .failed("enabling Data Source notifications failed: \(error)")
    }
  }

  // MARK: - Notification Source

  /// The next Notification Source event, decoded (exactly 8 bytes).
  public func nextEvent() async throws(CaseOutcome) -> NotificationSourceEvent {
    let next = try await log.awaiting("a Notification Source event") { () throws(CaseOutcome) in
      await notificationSource.next()
    }
    guard let value = next else {
      throw .failed("the link closed while waiting for a Notification Source event")
    }
    do { return try NotificationSourceEvent(decoding: value) } catch {
      throw .failed("Notification Source value \(Hex.encode(value)) is not an 8-byte event: \(error)")
    }
  }

  /// The next event about `uid`, skipping events about other notifications.
  public func nextEvent(uid: UInt32) async throws(CaseOutcome) -> NotificationSourceEvent {
    while true {
      let event = try await nextEvent()
      if event.notificationUID == uid { return event }
    }
  }

  /// Skips events until `uid`'s Added (PreExisting or not) arrives.
  public func awaitAdded(_ uid: UInt32) async throws(CaseOutcome) -> NotificationSourceEvent {
    let event = try await nextEvent(uid: uid)
    try check(event.eventID == .added, "expected Added for UID \(uid), got \(event.eventID) first")
    return event
  }

  // MARK: - Control Point

  /// Writes `bytes` to the Control Point with response; nil when accepted, else the error
  /// code of the Error Response. Write Not Permitted fails the case (the phone does not
  /// share with this accessory), unless `notSharedIsAnswer`.
  public func write(_ handles: ANCSHandles, _ bytes: [UInt8], notSharedIsAnswer: Bool = false)
    async throws(CaseOutcome) -> ATTErrorCode?
  {
    guard let controlPoint = handles.controlPoint else { throw .failed("the ANCS service has no Control Point") }
    return try await log.awaiting("the answer to the Control Point write \(Hex.encode(bytes))") {
      () throws(CaseOutcome) -> ATTErrorCode? in
      do throws(ATTError) {
        try await client.write(controlPoint.valueHandle, bytes)
        return nil
      } catch {
        // No ANCS command is answered Write Not Permitted: that is the phone refusing this
        // accessory, as an iPhone does until its user allows it (Protocol/iPhone.md).
        if error.errorCode == .writeNotPermitted && !notSharedIsAnswer {
          throw .failed(
            "the phone answered the Control Point write \(Hex.encode(bytes)) with Write Not Permitted (0x03): it "
              + "does not share its notifications with this accessory; allow it on the phone (an iPhone: Settings, "
              + "Bluetooth, the accessory, Share System Notifications; ancs phone: allow N, or "
              + "--share-notifications allow)")
        }
        if let code = error.errorCode { return code }
        throw .failed("Control Point write \(Hex.encode(bytes)) failed: \(error)")
      }
    }
  }

  /// Writes `bytes` and requires the Error Response `code`.
  public func expectError(_ handles: ANCSHandles, _ bytes: [UInt8], _ code: UInt8) async throws(CaseOutcome) {
    let answer = try await write(handles, bytes)
    try check(
      answer?.rawValue == code,
      "Control Point write \(Hex.encode(bytes)) answered \(answer.map { "error \(hex($0.rawValue))" } ?? "with success"), "
        + "expected error \(hex(code))")
  }

  /// A Data Source answer with the notifications it came in.
  public struct Answer: Sendable {
    public var response: DataSourceResponse
    public var fragments: [[UInt8]]
  }

  /// Sends `command` and reassembles its Data Source answer (strict: every requested tuple,
  /// UTF-8, maximum lengths).
  public func fetch(_ handles: ANCSHandles, _ command: ControlPointCommand) async throws(CaseOutcome) -> Answer {
    let expectation: DataSourceReassembler.Expectation
    switch command {
    case .getNotificationAttributes(let get): expectation = .notificationAttributes(get)
    case .getAppAttributes(let get): expectation = .appAttributes(get)
    case .performNotificationAction: throw .failed("Perform Notification Action has no Data Source answer")
    }
    if let code = try await write(handles, command.encoded()) {
      throw .failed("the phone refused \(Hex.encode(command.encoded())) with error \(hex(code.rawValue))")
    }
    return try await receive(expectation)
  }

  /// Reassembles the next Data Source answer.
  public func receive(_ expectation: DataSourceReassembler.Expectation) async throws(CaseOutcome) -> Answer {
    try await log.awaiting("the rest of the Data Source answer") { () throws(CaseOutcome) in
      try await reassemble(expectation)
    }
  }

  private func reassemble(_ expectation: DataSourceReassembler.Expectation) async throws(CaseOutcome) -> Answer {
    // Strict: a phone must send every tuple asked for.
    var reassembler = DataSourceReassembler(expecting: expectation, policy: .strict)
    var fragments: [[UInt8]] = []
    while true {
      guard let fragment = await dataSource.next() else {
        throw .failed("the link closed after \(fragments.count) Data Source notification(s), answer incomplete")
      }
      fragments.append(fragment)
      do {
        if let response = try reassembler.feed(fragment) { return Answer(response: response, fragments: fragments) }
      } catch {
        throw .failed("Data Source answer invalid after \(fragments.count) notification(s): \(error)")
      }
    }
  }
}

func hex(_ byte: UInt8) -> String {
  let digits = Array("0123456789ABCDEF")
  return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
}
