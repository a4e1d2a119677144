import AMS
import ANCS
import ATT
import GATT
import Links
import Runtime
import Synchronization
import Wire

/// The accessory under test, as the runner reaches it when the harness plays the phone.
public struct AccessoryUnderTest: Sendable {
  /// Waits for the accessory's next connection. Each case closes its link at the end, and the
  /// accessory is expected to connect again (as a watch does when its phone comes back).
  public var accept: @Sendable () async throws -> any ATTBearer
  /// What the accessory reports (the event lines of Protocol/events.md); nil when nobody
  /// watches it, and the cases that check content are skipped.
  public var observer: AccessoryObserver?
  /// Makes the accessory's wearer act on a notification; nil when there is no such channel,
  /// and the action cases are skipped.
  public var wearer: (any WearerStimulus)?
  /// Its own timers, as its maker states them: cases that wait on one get that much longer.
  public var timers: AccessoryTimers
  /// The harness phone's bonds on the links `accept` gives; nil when those links keep none,
  /// and the bond cases are skipped.
  public var bonds: (any BondBook)?
  /// Its maker states that it requires MITM protection (a passkey or a compared number):
  /// the cases that judge that run; otherwise they are skipped.
  public var requiresMITM: Bool

  public init(
    accept: @escaping @Sendable () async throws -> any ATTBearer, observer: AccessoryObserver? = nil,
    wearer: (any WearerStimulus)? = nil, timers: AccessoryTimers = AccessoryTimers(), bonds: (any BondBook)? = nil,
    requiresMITM: Bool = false
  ) {
    self.accept = accept
    self.observer = observer
    self.wearer = wearer
    self.timers = timers
    self.bonds = bonds
    self.requiresMITM = requiresMITM
  }
}

/// How the harness makes the accessory's wearer press a notification's action button, or
/// ask the phone's media player for a remote command.
public protocol WearerStimulus: Sendable {
  func perform(_ action: ActionID, uid: UInt32) async throws(StimulusError)
  /// Whether `media` can make the wearer ask for a remote command.
  var asksRemoteCommands: Bool { get }
  /// Makes the wearer ask for a remote command (the Apple Media Service cases).
  func media(_ command: RemoteCommandID) async throws(StimulusError)
}

extension WearerStimulus {
  /// A wearer that only acts on notifications: the remote command cases are skipped.
  public var asksRemoteCommands: Bool { false }

  public func media(_ command: RemoteCommandID) async throws(StimulusError) {
    throw StimulusError("this wearer cannot ask for remote commands")
  }
}

/// The wearer's commands of `ancs watch --headless` (`positive UID`, `negative UID`,
/// `media COMMAND` with the command's AMS name), one line each, through `send`.
public struct WatchLineWearer: WearerStimulus {
  let send: @Sendable (String) async throws(StimulusError) -> Void
  public init(send: @escaping @Sendable (String) async throws(StimulusError) -> Void) { self.send = send }
  public func perform(_ action: ActionID, uid: UInt32) async throws(StimulusError) {
    try await send("\(action == .positive ? "positive" : "negative") \(uid)")
  }
  public var asksRemoteCommands: Bool { true }
  public func media(_ command: RemoteCommandID) async throws(StimulusError) {
    try await send("media \(command.name ?? String(command.rawValue))")
  }
}

/// The accessory's event stream (Protocol/events.md): one JSON object per line, fed by
/// whoever reads the accessory's output. Lines that are not JSON objects are ignored.
public final class AccessoryObserver: Sendable {
  let events = Inbox<JSON>()
  private let tap = Locked<(@Sendable (JSON) -> Void)?>(nil)

  public init() {}

  public func push(line: String) {
    guard let json = try? JSON(parsing: line), json["event"]?.string != nil else { return }
    tap.withLock { $0 }?(json)
    events.push(json)
  }

  /// Shows every event to `body` as well, as it comes, whatever the cases read (the
  /// harness's `PairingRelay`).
  public func tap(_ body: @escaping @Sendable (JSON) -> Void) {
    tap.withLock { $0 = body }
  }

  /// The accessory's output ended.
  public func close() { events.close() }

  /// Forgets what was reported before now (a new case starts).
  func drain() async {
    while events.count > 0 { _ = await events.next() }
  }
}

/// A notification as the harness phone holds it.
public struct HarnessNotification: Hashable, Sendable {
  public var category: CategoryID = .social
  public var flags: EventFlags = []
  public var app = "com.example.chat"
  public var title = "Conformance"
  public var subtitle = ""
  public var message = ""
  public var date = "20261130T120000"
  public var positiveAction: String?
  public var negativeAction: String?

  public init(title: String = "Conformance", message: String = "", app: String = "com.example.chat") {
    self.title = title
    self.message = message
    self.app = app
  }

  /// The value of a notification attribute, whole (before any maximum is applied).
  func value(_ id: NotificationAttributeID) -> [UInt8]? {
    switch id {
    case .appIdentifier: return Array(app.utf8)
    case .title: return Array(title.utf8)
    case .subtitle: return Array(subtitle.utf8)
    case .message: return Array(message.utf8)
    case .messageSize: return Array(String(message.utf8.count).utf8)
    case .date: return Array(date.utf8)
    case .positiveActionLabel: return positiveAction.map { Array($0.utf8) } ?? []
    case .negativeActionLabel: return negativeAction.map { Array($0.utf8) } ?? []
    default: return nil
    }
  }
}

/// One Control Point write from the accessory, decoded when it could be.
public struct ControlPointWrite: Sendable {
  public var bytes: [UInt8]
  public var command: Result<ControlPointCommand, ANCSError>

  /// The notification UID it is about, when it is a valid notification command.
  public var uid: UInt32? {
    switch command {
    case .success(.getNotificationAttributes(let get)): return get.notificationUID
    case .success(.performNotificationAction(let perform)): return perform.notificationUID
    default: return nil
    }
  }
}

/// What the harness phone does with a Control Point write.
public enum ControlPointReply: Sendable {
  /// What a correct phone does: the answer on the Data Source at ATT_MTU - 3 per
  /// notification, or the error code the command deserves.
  case answer
  /// An ATT Error Response with this code.
  case refuse(UInt8)
  /// A Write Response, then nothing on the Data Source.
  case acceptSilently
  /// A Write Response, then these Data Source notifications.
  case send([[UInt8]])
}

/// The two ANCS characteristics an accessory subscribes to.
public enum ANCSSource: String, Hashable, Sendable {
  case notificationSource = "Notification Source"
  case dataSource = "Data Source"
}

/// UIDs unique over a whole run, so the accessory's reports of one case never match another.
private let nextHarnessUID = Atomic<UInt32>(1000)

/// The harness as the phone on one connection: a GATT server with the Generic Attribute
/// service (Service Changed), ANCS and the Apple Media Service (encrypted, as an iPhone's)
/// and a Battery service after them, its own notifications and media player, and a log of
/// what the accessory sent.
public final class NCSession: Sendable {
  /// Chooses the reply to a write; `answer` is what a correct phone sends on the Data Source
  /// for it (nil when a correct phone refuses it).
  public typealias Responder = @Sendable (_ write: ControlPointWrite, _ answer: [UInt8]?) -> ControlPointReply

  private struct State {
    var notifications: [UInt32: HarnessNotification] = [:]
    var apps: [String: String] = ["com.example.chat": "Chat"]
    var writes: [ControlPointWrite] = []
    var responder: Responder = { _, _ in .answer }
    /// Title and message as sent in the last answer about each UID, cut to the maxima asked.
    var sent: [UInt32: (title: String, message: String)] = [:]
    /// Every UID announced on this connection (Added), removed or not.
    var announced: Set<UInt32> = []
    /// The length of the last correct answer about each UID.
    var answerLengths: [UInt32: Int] = [:]
    var handles: (source: UInt16, control: UInt16, data: UInt16) = (0, 0, 0)
    /// The Notification Source sends nothing until its CCCD is written again.
    var silent = false
  }

  /// What the server's callbacks share with the session.
  private final class Shared: Sendable {
    let state = Locked(State())
    let log = Locked<[ATTPDU]>([])
  }

  public let connection: ATTConnection
  let server: GATTServer
  private let shared = Shared()
  private let ancsService: ServiceDefinition
  /// The Apple Media Service's player and what the accessory did to it.
  let media = NCMedia()
  /// Control Point writes, as they come.
  let commands: Inbox<ControlPointWrite>
  /// CCCD changes of the Notification Source and Data Source, as they come.
  let subscriptions: Inbox<(ANCSSource, CCCDValue)>
  private let runner: Task<Void, Never>

  static let battery = BluetoothUUID(0x180F)
  /// The UID an accessory fetches to check that the phone answers (never announced).
  static let checkUID: UInt32 = 0xFFFF_FFFF

  let caseLog: CaseLog

  /// `ancsShownFrom`: the security level from which the accessory's link sees ANCS (an
  /// iPhone's: encrypted).
  init(
    bearer: any ATTBearer, clock: any EngineClock, timeout: Duration, log caseLog: CaseLog,
    ancsShownFrom: SecurityLevel = .unencrypted
  ) async throws(CaseOutcome) {
    let shared = shared
    self.caseLog = caseLog
    let recording = RecordingBearer(bearer) { pdu in
      let control = shared.log.withLock { log in
        log.append(pdu)
        return shared.state.withLock { $0.handles.control }
      }
      caseLog.peerDid(CaseLog.describe(pdu, controlPoint: control))
    }
    let connection = ATTConnection(
      bearer: recording, clock: clock, options: ATTConnection.Options(localMTU: 517, transactionTimeout: timeout))
    let commands = Inbox<ControlPointWrite>()
    let subscriptions = Inbox<(ANCSSource, CCCDValue)>()
    var ancs = Self.ancsDefinition(
      controlPoint: { bytes in
        let command = Result { () throws(ANCSError) in try ControlPointCommand(decoding: bytes) }
        let write = ControlPointWrite(bytes: bytes, command: command)
        let (responder, correct, data) = shared.state.withLock { state in
          state.writes.append(write)
          let correct = Self.answer(command, notifications: state.notifications, apps: state.apps)
          if case .success(.getNotificationAttributes(let get)) = command,
            let notification = state.notifications[get.notificationUID]
          {
            func cut(_ id: NotificationAttributeID) -> String {
              let whole = notification.value(id) ?? []
              let limit = get.attributes.first { $0.id == id }?.maxLength.map(Int.init) ?? whole.count
              return String(decoding: ANCSText.truncate(whole, toBytes: limit), as: UTF8.self)
            }
            state.sent[get.notificationUID] = (cut(.title), cut(.message))
            state.answerLengths[get.notificationUID] = (try? correct.get())?.count
          }
          return (state.responder, correct, state.handles.data)
        }
        commands.push(write)
        return Self.outcome(responder(write, try? correct.get()), correct: correct, connection: connection, data: data)
      },
      subscribed: { which, value in
        // Writing the CCCD again is what brings a silent Notification Source back.
        if which == .notificationSource { shared.state.withLock { $0.silent = false } }
        subscriptions.push((which, value))
      })
    ancs.shownFrom = ancsShownFrom
    let server: GATTServer
    do {
      server = try GATTServer(services: [])
      try server.add(ancs)
      try server.add(media.service())
      try server.add(
        ServiceDefinition(
          uuid: Self.battery, characteristics: [CharacteristicDefinition.constant(BluetoothUUID(0x2A19), [87])]))
    } catch {
      throw .failed("the harness could not build its database: \(error)")
    }
    shared.state.withLock { $0.handles = Self.valueHandles(server) }
    await server.attach(connection)
    self.connection = connection
    self.server = server
    self.ancsService = ancs
    self.commands = commands
    self.subscriptions = subscriptions
    let activity = media.activity
    runner = Task {
      await connection.run()
      server.detach(connection)
      commands.close()
      subscriptions.close()
      activity.close()
    }
  }

  /// Every PDU the accessory sent so far, decoded.
  public var received: [ATTPDU] { shared.log.withLock { $0 } }

  /// Every Control Point write so far.
  public var writes: [ControlPointWrite] { shared.state.withLock { $0.writes } }

  /// The value handles of the ANCS characteristics in force.
  public var handles: (source: UInt16, control: UInt16, data: UInt16) { shared.state.withLock { $0.handles } }

  /// The ANCS service's handle range in force.
  public var ancsRange: HandleRange? { server.database.serviceRanges[BluetoothUUID(ANCSUUID.service)!] }

  /// Moves ANCS as iOS may: unpublished, then published again at other handles, each with a
  /// Service Changed indication to a subscribed accessory (queued: the second goes once the
  /// first is confirmed).
  public func moveANCS() async throws(CaseOutcome) {
    try await move(ancsService, named: "ANCS")
    shared.state.withLock { $0.handles = Self.valueHandles(server) }
  }

  /// Unpublishes `service` and publishes it again after the database's last handle.
  func move(_ service: ServiceDefinition, named name: String) async throws(CaseOutcome) {
    let end = server.database.attributes.last?.handle ?? 0
    await server.unpublish(service.uuid)
    do { try await server.publish(service, startingAt: end + 0x10) } catch {
      throw .failed("the harness could not publish \(name) again: \(error)")
    }
  }

  /// Chooses how the following Control Point writes are answered.
  public func respond(_ responder: @escaping Responder) { shared.state.withLock { $0.responder = responder } }

  func close() {
    connection.close()
    commands.close()
    subscriptions.close()
    media.activity.close()
  }

  static func valueHandles(_ server: GATTServer) -> (source: UInt16, control: UInt16, data: UInt16) {
    let found = server.handles(of: BluetoothUUID(ANCSUUID.service)!) ?? []
    guard found.count == 3 else { return (0, 0, 0) }
    return (found[0].value, found[1].value, found[2].value)
  }

  static func ancsDefinition(
    controlPoint: @escaping @Sendable ([UInt8]) -> WriteOutcome,
    subscribed: @escaping @Sendable (ANCSSource, CCCDValue) -> Void
  ) -> ServiceDefinition {
    let source = CharacteristicDefinition(
      uuid: BluetoothUUID(ANCSUUID.notificationSource)!, properties: .notify, security: .encrypted,
      subscribed: { _, value in subscribed(.notificationSource, value) })
    let control = CharacteristicDefinition(
      uuid: BluetoothUUID(ANCSUUID.controlPoint)!, properties: .write, security: .encrypted,
      write: { _, bytes in controlPoint(bytes) })
    let data = CharacteristicDefinition(
      uuid: BluetoothUUID(ANCSUUID.dataSource)!, properties: .notify, security: .encrypted,
      subscribed: { _, value in subscribed(.dataSource, value) })
    return ServiceDefinition(uuid: BluetoothUUID(ANCSUUID.service)!, characteristics: [source, control, data])
  }

  // MARK: - Notifications

  /// Sends a raw Notification Source value (well formed or not); nothing while silent.
  public func announce(_ bytes: [UInt8]) async throws(CaseOutcome) {
    if shared.state.withLock({ $0.silent }) { return }
    do { try await connection.notify(handle: handles.source, value: bytes) } catch {
      throw .failed("the link to the accessory failed while sending a Notification Source event: \(error)")
    }
  }

  /// Adds a notification and announces it (Added); returns its UID.
  @discardableResult
  public func post(_ notification: HarnessNotification, flags extra: EventFlags = []) async throws(CaseOutcome)
    -> UInt32
  {
    let uid = nextHarnessUID.add(1, ordering: .relaxed).newValue
    var flags = notification.flags.union(extra)
    if notification.positiveAction != nil { flags.insert(.positiveAction) }
    if notification.negativeAction != nil { flags.insert(.negativeAction) }
    let count = shared.state.withLock { state -> Int in
      state.notifications[uid] = notification
      state.announced.insert(uid)
      return state.notifications.values.filter { $0.category == notification.category }.count
    }
    let event = NotificationSourceEvent(
      eventID: .added, eventFlags: flags, categoryID: notification.category,
      categoryCount: UInt8(min(count, 255)), notificationUID: uid)
    try await announce(event.encoded())
    return uid
  }

  /// Removes a notification and announces it (Removed).
  public func remove(_ uid: UInt32) async throws(CaseOutcome) {
    let removed = shared.state.withLock { state -> HarnessNotification? in
      state.notifications.removeValue(forKey: uid)
    }
    guard let removed else { return }
    let count = shared.state.withLock { state in
      state.notifications.values.filter { $0.category == removed.category }.count
    }
    let event = NotificationSourceEvent(
      eventID: .removed, eventFlags: [], categoryID: removed.category, categoryCount: UInt8(min(count, 255)),
      notificationUID: uid)
    try await announce(event.encoded())
  }

  /// Clears the accessory's CCCDs silently, the link staying up (quirk drop-subscriptions).
  public func dropSubscriptions() async {
    for session in server.sessions { await session.clearSubscriptions() }
  }

  /// The Notification Source falls silent, its CCCD still enabled and the Control Point
  /// answering, until the accessory writes the CCCD again (quirk silent-source).
  public func silenceSource() { shared.state.withLock { $0.silent = true } }

  /// Forgets a notification without announcing it (the phone retracted it silently).
  public func retract(_ uid: UInt32) {
    shared.state.withLock { $0.notifications[uid] = nil }
  }

  // MARK: - Waiting for the accessory

  /// Waits until the accessory has enabled notifications on both the Notification Source
  /// and the Data Source.
  /// `why` says what should make the accessory do it (for the message of a case that runs
  /// out of time).
  public func awaitSubscribed(_ why: String = "") async throws(CaseOutcome) {
    let handles = self.handles
    try await caseLog.awaiting(
      "the accessory to enable notifications on the Notification Source (value handle \(CaseLog.handle(handles.source))) "
        + "and the Data Source (\(CaseLog.handle(handles.data)))\(why)"
    ) { () throws(CaseOutcome) in
      var enabled: Set<ANCSSource> = []
      while enabled.count < 2 {
        guard let (which, value) = await subscriptions.next() else {
          throw .failed(
            "the accessory did not subscribe to both the Notification Source and the Data Source "
              + "(subscribed: \(enabled.map(\.rawValue).sorted()))")
        }
        if value.contains(.notifications) { enabled.insert(which) } else { enabled.remove(which) }
      }
    }
  }

  /// The next Control Point write.
  public func nextWrite() async throws(CaseOutcome) -> ControlPointWrite {
    try await caseLog.awaiting("a Control Point write") { () throws(CaseOutcome) in
      guard let write = await commands.next() else {
        throw .failed("the link closed while waiting for a Control Point write")
      }
      return write
    }
  }

  /// Waits for a Get Notification Attributes about `uid`, skipping other writes.
  /// Every write must be a valid command (Protocol/ANCS.md, Control Point). `why` says what
  /// should bring it (for the message of a case that runs out of time).
  public func awaitFetch(_ uid: UInt32, _ why: String = "") async throws(CaseOutcome)
    -> GetNotificationAttributesCommand
  {
    try await caseLog.awaiting("a Get Notification Attributes for UID \(uid)\(why)") { () throws(CaseOutcome) in
      try await fetch(uid)
    }
  }

  private func fetch(_ uid: UInt32) async throws(CaseOutcome) -> GetNotificationAttributesCommand {
    while true {
      let write = try await nextWrite()
      switch write.command {
      case .failure(let error):
        throw .failed("the accessory wrote \(Hex.encode(write.bytes)) to the Control Point: \(error)")
      case .success(.getNotificationAttributes(let get)) where get.notificationUID == uid: return get
      // UID 0xFFFFFFFF is an accessory's check that the phone answers at all (and shares
      // its notifications): answered 0xA2 like any unknown UID, and no fault.
      case .success(.getNotificationAttributes(let get)) where get.notificationUID == Self.checkUID: continue
      case .success(.getNotificationAttributes(let get)) where !announced(get.notificationUID):
        throw .failed(
          "the accessory asked for UID \(get.notificationUID) (\(Hex.encode(write.bytes))), which the phone never "
            + "announced")
      case .success: continue
      }
    }
  }

  // MARK: - Answers

  /// The encoded answer a correct phone gives to `command`, or its error code.
  static func answer(
    _ command: Result<ControlPointCommand, ANCSError>, notifications: [UInt32: HarnessNotification],
    apps: [String: String]
  ) -> Result<[UInt8], ATTErrorCode> {
    switch command {
    case .failure(let error): return .failure(ATTErrorCode(rawValue: error.controlPointErrorCode.rawValue))
    case .success(.getNotificationAttributes(let get)):
      guard let notification = notifications[get.notificationUID] else {
        return .failure(ATTErrorCode(rawValue: ANCSErrorCode.invalidParameter.rawValue))
      }
      let tuples = get.attributes.map { request -> NotificationAttribute in
        let whole = notification.value(request.id) ?? []
        let value = request.maxLength.map { ANCSText.truncate(whole, toBytes: Int($0)) } ?? whole
        return NotificationAttribute(request.id, value)
      }
      let response = NotificationAttributesResponse(notificationUID: get.notificationUID, attributes: tuples)
      return .success(DataSourceResponse.notificationAttributes(response).encoded())
    case .success(.getAppAttributes(let get)):
      guard let name = apps[get.appIdentifier] else {
        return .failure(ATTErrorCode(rawValue: ANCSErrorCode.invalidParameter.rawValue))
      }
      let tuples = get.attributes.map { AppAttribute($0, $0 == .displayName ? Array(name.utf8) : []) }
      let response = AppAttributesResponse(appIdentifier: get.appIdentifier, attributes: tuples)
      return .success(DataSourceResponse.appAttributes(response).encoded())
    case .success(.performNotificationAction(let perform)):
      guard notifications[perform.notificationUID] != nil else {
        return .failure(ATTErrorCode(rawValue: ANCSErrorCode.invalidParameter.rawValue))
      }
      return .success([])
    }
  }

  /// Title and message as the last answer about `uid` carried them (cut to the maxima the
  /// accessory asked for); nil before any answer.
  public func sent(_ uid: UInt32) -> (title: String, message: String)? { shared.state.withLock { $0.sent[uid] } }

  /// Whether `uid` was announced (Added) on this connection.
  func announced(_ uid: UInt32) -> Bool { shared.state.withLock { $0.announced.contains(uid) } }

  /// The length of the correct answer to the last fetch of `uid`.
  public func answerLength(_ uid: UInt32) -> Int? { shared.state.withLock { $0.answerLengths[uid] } }

  /// The correct answer's bytes for a write (for cases that send it their own way); nil when
  /// a correct phone refuses it.
  public func answerBytes(_ write: ControlPointWrite) -> [UInt8]? {
    let (notifications, apps) = shared.state.withLock { ($0.notifications, $0.apps) }
    return try? Self.answer(write.command, notifications: notifications, apps: apps).get()
  }

  /// Sends Data Source notifications.
  public func sendData(_ fragments: [[UInt8]]) async throws(CaseOutcome) {
    for fragment in Self.fitting(fragments, mtu: connection.mtu) {
      do { try await connection.notify(handle: handles.data, value: fragment) } catch {
        throw .failed("the link to the accessory failed while sending on the Data Source: \(error)")
      }
    }
  }

  /// The notifications a case asked for, each longer than ATT_MTU - 3 sent as several of
  /// ATT_MTU - 3 (a notification carries no more: a longer value would be cut), so a case's
  /// split points hold at any MTU, 23 included. Empty ones stay, as cases send them on purpose.
  static func fitting(_ parts: [[UInt8]], mtu: Int) -> [[UInt8]] {
    parts.flatMap { part in
      part.count <= mtu - 3 ? [part] : dataSourceFragments(part, maximumSize: mtu - 3).map { Array($0) }
    }
  }

  private static func outcome(
    _ reply: ControlPointReply, correct: Result<[UInt8], ATTErrorCode>, connection: ATTConnection, data: UInt16
  ) -> WriteOutcome {
    let fragments: [[UInt8]]
    switch reply {
    case .refuse(let code): return .refused(ATTErrorCode(rawValue: code))
    case .acceptSilently: return .accepted
    case .send(let given): fragments = fitting(given, mtu: connection.mtu)
    case .answer:
      switch correct {
      case .failure(let code): return .refused(code)
      case .success(let bytes):
        fragments = dataSourceFragments(bytes, maximumSize: connection.mtu - 3).map { Array($0) }
      }
    }
    guard !fragments.isEmpty else { return .accepted }
    return .accepted(then: { connection in
      for fragment in fragments {
        do { try connection.notify(handle: data, value: fragment) } catch { return }
      }
    })
  }
}

/// Passes everything through and reports each PDU received, decoded.
final class RecordingBearer: ATTBearer {
  let inner: any ATTBearer
  let record: @Sendable (ATTPDU) -> Void
  init(_ inner: any ATTBearer, record: @escaping @Sendable (ATTPDU) -> Void) {
    self.inner = inner
    self.record = record
  }
  var name: String { inner.name }
  func send(_ pdu: [UInt8]) throws(BearerError) { try inner.send(pdu) }
  nonisolated(nonsending) func receive() async throws(BearerError) -> [UInt8]? {
    let pdu = try await inner.receive()
    if let pdu, let decoded = try? ATTPDU(decoding: pdu) { record(decoded) }
    return pdu
  }
  /// Passes the offer on, reporting each PDU handed over as `receive()` does.
  func handOver(to receiver: (any PDUReceiver)?) -> Bool {
    handOver(through: inner, to: receiver) { [record] pdu in
      if let decoded = try? ATTPDU(decoding: pdu) { record(decoded) }
      return pdu
    }
  }
  var securityLevel: SecurityLevel { inner.securityLevel }
  var peerAddress: String? { inner.peerAddress }
  func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }
  func close() { inner.close() }
}

/// What an NC case works with: the accessory's connections, served by the harness phone; its
/// reports; its wearer.
public final class NCContext: CaseContext {
  public let accessory: AccessoryUnderTest
  let clock: any EngineClock
  let timeout: Duration
  let capture: BtsnoopWriter?
  public let log: CaseLog
  /// Until a case has reached the accessory: how long its first connection may take.
  let contactWait: Duration?
  private let opened = Locked<[NCSession]>([])

  init(
    accessory: AccessoryUnderTest, clock: any EngineClock, timeout: Duration, capture: BtsnoopWriter?,
    contactWait: Duration? = nil
  ) {
    self.accessory = accessory
    self.clock = clock
    self.timeout = timeout
    self.capture = capture
    self.log = CaseLog(clock: clock)
    self.contactWait = contactWait
  }

  /// The accessory's timer, as an explanation: " (its liveness check, --liveness 30.0 s)".
  public func within(_ timer: AccessoryTimer, _ what: String) -> String {
    " (\(what), \(timer.option) \(CaseLog.seconds(accessory.timers[timer])))"
  }

  /// Skips the case when the accessory's `timer` is not known.
  public func requireKnown(_ timer: AccessoryTimer, _ what: String) throws(CaseOutcome) {
    guard accessory.timers.isKnown(timer) else {
      throw .skipped("needs \(what) stated with \(timer.option) S, which has no default worth waiting for")
    }
  }

  /// Waits for the accessory to connect and serves it as the harness phone; with
  /// `ancsAfterEncryption` ANCS is left out of discovery until the link is encrypted, as a
  /// current iPhone does.
  public func accept(ancsAfterEncryption: Bool = false) async throws(CaseOutcome) -> NCSession {
    let raw = try await log.awaiting("the accessory to connect") { () throws(CaseOutcome) -> any ATTBearer in
      do {
        guard let wait = contactWait else { return try await accessory.accept() }
        guard let bearer = try await firstWithin(wait, clock: clock, late: { $0.close() }, accessory.accept) else {
          throw CaseOutcome.unreachable(
            "no accessory connected within \(CaseLog.seconds(wait)) (--wait-for-accessory S gives it longer)")
        }
        return bearer
      } catch let outcome as CaseOutcome {
        throw outcome
      } catch {
        throw .failed("the accessory did not connect: \(error)")
      }
    }
    let bearer: any ATTBearer = capture.map { CapturingBearer(raw, writer: $0) } ?? raw
    let session = try await NCSession(
      bearer: bearer, clock: clock, timeout: timeout, log: log,
      ancsShownFrom: ancsAfterEncryption ? .encrypted : .unencrypted)
    opened.withLock { $0.append(session) }
    log.peerDid("connected")
    return session
  }

  /// Accepts the accessory and waits until it has subscribed to both ANCS sources.
  public func subscribed() async throws(CaseOutcome) -> NCSession {
    let session = try await accept()
    try await session.awaitSubscribed()
    return session
  }

  /// Accepts the accessory's links until one subscribes to both ANCS sources, skipping those
  /// it drops first (a reconnecting accessory may have tried again meanwhile, and found the
  /// phone as it was then).
  public func subscribedOnALiveLink(_ why: String) async throws(CaseOutcome) -> NCSession {
    while true {
      let session = try await accept()
      do {
        try await session.awaitSubscribed(why)
        return session
      } catch {
        if await session.connection.closedReason == nil { throw error }
        log.peerDid("dropped a link before subscribing")
      }
    }
  }

  /// The harness phone's bonds; the case is skipped when its links keep none.
  public func bonds() throws(CaseOutcome) -> any BondBook { try harnessBonds(accessory.bonds) }

  /// Skips the case unless the accessory's maker states that it requires MITM protection.
  public func requireStatedMITM() throws(CaseOutcome) {
    guard accessory.requiresMITM else {
      throw .skipped("for an accessory that requires MITM protection, stated with --requires-mitm")
    }
  }

  /// The accessory's address on `session`'s link, with which the harness phone has bonded.
  public func bondedPeer(_ session: NCSession, in book: any BondBook) throws(CaseOutcome) -> String {
    guard let peer = session.connection.bearer.peerAddress else {
      throw .skipped("the accessory never named itself in a bonded exchange: it pairs without bonds on this link")
    }
    guard book.bondedPeers.contains(peer) else {
      throw .failed("the accessory subscribed without bonding with the phone (the phone holds no bond for it)")
    }
    return peer
  }

  /// The accessory's reports; the case is skipped without them.
  public func observer() throws(CaseOutcome) -> AccessoryObserver {
    guard let observer = accessory.observer else {
      throw .skipped("needs the accessory's event lines (--observe FILE|- or --spawn) to check what it shows")
    }
    return observer
  }

  /// The next report of `event` about `uid` (Protocol/events.md), skipping others.
  public func report(_ event: String, uid: UInt32) async throws(CaseOutcome) -> JSON {
    try await report("\(event) for UID \(uid)") { $0["event"]?.string == event && $0["uid"]?.integer == Int(uid) }
  }

  /// The next event line that `matches` (Protocol/events.md), skipping others; `what` names
  /// it for the case's messages.
  public func report(_ what: String, where matches: (JSON) -> Bool) async throws(CaseOutcome) -> JSON {
    let observer = try observer()
    return try await log.awaiting("the accessory's event line reporting \(what)") { () throws(CaseOutcome) in
      while let json = await observer.events.next() {
        if matches(json) { return json }
      }
      throw .failed("the accessory's event stream ended before it reported \(what)")
    }
  }

  /// Requires the accessory to report `uid` added with the title and message the harness
  /// sent for it (cut to the maxima the accessory asked for).
  public func expectShown(_ uid: UInt32, in session: NCSession) async throws(CaseOutcome) {
    let added = try await report("added", uid: uid)
    guard let expected = session.sent(uid) else { throw .failed("UID \(uid) was reported before it was answered") }
    let title = added["title"]?.string ?? ""
    let message = added["message"]?.string ?? ""
    try check(
      title == expected.title && message == expected.message,
      "UID \(uid): the accessory shows title \"\(title)\" and message \"\(message)\", "
        + "expected \"\(expected.title)\" and \"\(expected.message)\"")
  }

  /// The wearer channel; the case is skipped without one.
  public func wearer() throws(CaseOutcome) -> any WearerStimulus {
    guard let wearer = accessory.wearer else {
      throw .skipped("needs a way to make the accessory act on a notification (--spawn)")
    }
    return wearer
  }

  /// The wearer, when it can ask for remote commands; the case is skipped otherwise.
  public func mediaWearer() throws(CaseOutcome) -> any WearerStimulus {
    let wearer = try wearer()
    guard wearer.asksRemoteCommands else {
      throw .skipped("needs a way to make the accessory send a remote command (--spawn, `media COMMAND`)")
    }
    return wearer
  }

  public func closeLinks() {
    for session in opened.withLock({ $0 }) { session.close() }
  }

  public func cleanUp() async {}
}
