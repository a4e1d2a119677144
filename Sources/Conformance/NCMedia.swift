import AMS
import ATT
import GATT
import Runtime
import Wire

/// The Apple Media Service's characteristics, as the accessory uses them.
public enum AMSCharacteristic: String, Hashable, Sendable {
  case remoteCommand = "Remote Command"
  case entityUpdate = "Entity Update"
  case entityAttribute = "Entity Attribute"
}

/// What the accessory did to the harness phone's Apple Media Service, in the order the
/// phone took it.
public enum MediaActivity: Sendable {
  /// It changed the CCCD of Remote Command or Entity Update.
  case subscribed(AMSCharacteristic, CCCDValue)
  /// It wrote a characteristic; `refused` is the error code the phone answered (nil:
  /// accepted).
  case wrote(AMSCharacteristic, [UInt8], refused: ATTErrorCode?)
  /// It read Entity Attribute (a Read or a Read Blob) while `selected` was selected.
  case read(selected: EntityAttribute?)
  /// The phone has sent the current values of an accepted registration (after its Write
  /// Response), as an iPhone does; a value told from now on goes after them.
  case told(EntityID)
}

/// The harness phone's media player as its Apple Media Service shows it (Protocol/AMS.md):
/// the values it tells, the commands it takes, and what the accessory asked. It judges
/// nothing; it answers as an iPhone does and records, and the AMS/NC cases judge.
final class NCMedia: Sendable {
  struct State {
    var values: [EntityAttribute: String] = NCMedia.playing
    var commands: [RemoteCommandID] = NCMedia.musicCommands
    var registrations: [EntityID: [UInt8]] = [:]
    var selection: EntityAttribute?
  }

  let state = Locked(State())
  let activity = Inbox<MediaActivity>()

  /// What the player plays when a case starts: every value fits one notification at ATT_MTU
  /// 23 (17 bytes), so none is cut unless a case makes it so.
  static let playing: [EntityAttribute: String] = [
    .playerName: "Music", .playbackInfo: "1,1.0,12.5", .volume: "0.5", .queueIndex: "0", .queueCount: "3",
    .shuffleMode: "0", .repeatMode: "0", .artist: "Beethoven", .album: "Bagatellen", .title: "Für Elise ♪",
    .duration: "175.0",
  ]
  /// What a music app takes while it plays.
  static let musicCommands: [RemoteCommandID] = [.play, .pause, .togglePlayPause, .nextTrack, .previousTrack]

  static let uuid = BluetoothUUID(AMSUUID.service)!

  /// The service as an iPhone publishes it: the three characteristics, each needing an
  /// encrypted link.
  func service() -> ServiceDefinition {
    ServiceDefinition(
      uuid: Self.uuid,
      characteristics: [
        CharacteristicDefinition(
          uuid: BluetoothUUID(AMSUUID.remoteCommand)!, properties: [.write, .notify], security: .encrypted,
          write: { [self] _, bytes in
            let refused = Result { () throws(AMSError) in try RemoteCommand(decoding: bytes) }.failureCode
            return record(.remoteCommand, bytes, refused)
          },
          subscribed: { [self] gatt, value in
            activity.push(.subscribed(.remoteCommand, value))
            if value.contains(.notifications) { tellCommands(to: gatt) }
          }),
        CharacteristicDefinition(
          uuid: BluetoothUUID(AMSUUID.entityUpdate)!, properties: [.write, .notify], security: .encrypted,
          write: { [self] gatt, bytes in entityUpdate(gatt, bytes) },
          subscribed: { [self] _, value in activity.push(.subscribed(.entityUpdate, value)) }),
        CharacteristicDefinition(
          uuid: BluetoothUUID(AMSUUID.entityAttribute)!, properties: [.read, .write], security: .encrypted,
          read: { [self] _ in
            let (selected, whole) = state.withLock { state in
              (state.selection, state.selection.flatMap { state.values[$0] })
            }
            activity.push(.read(selected: selected))
            return Array((whole ?? "").utf8)
          },
          write: { [self] gatt, bytes in
            let decoded = Result { () throws(AMSError) in try EntityAttributeSelection(decoding: bytes) }
            let refused = refusal(gatt, decoded)
            if refused == nil, case .success(let selection) = decoded {
              state.withLock { $0.selection = selection.attribute }
            }
            return record(.entityAttribute, bytes, refused)
          }),
      ])
  }

  /// The value handle of Remote Command (0) or Entity Update (1) where AMS is now (it moves).
  private static func handle(_ index: Int, on gatt: GATTSession) -> UInt16 {
    let found = gatt.server.handles(of: uuid) ?? []
    return found.count == 3 ? found[index].value : 0
  }

  private func record(_ characteristic: AMSCharacteristic, _ bytes: [UInt8], _ refused: ATTErrorCode?)
    -> WriteOutcome
  {
    activity.push(.wrote(characteristic, bytes, refused: refused))
    return refused.map { .refused($0) } ?? .accepted
  }

  /// Invalid State before the accessory subscribed to Entity Update, Invalid Command for a
  /// write that does not decode (Protocol/AMS.md, Errors).
  private func refusal<T>(_ gatt: isolated GATTSession, _ decoded: Result<T, AMSError>) -> ATTErrorCode? {
    guard gatt.cccd(for: Self.handle(1, on: gatt)).contains(.notifications) else {
      return ATTErrorCode(rawValue: AMSErrorCode.invalidState.rawValue)
    }
    return decoded.failureCode
  }

  private func entityUpdate(_ gatt: isolated GATTSession, _ bytes: [UInt8]) -> WriteOutcome {
    let decoded = Result { () throws(AMSError) in try EntityRegistration(decoding: bytes) }
    let refused = refusal(gatt, decoded)
    guard refused == nil, case .success(let registration) = decoded else {
      return record(.entityUpdate, bytes, refused)
    }
    activity.push(.wrote(.entityUpdate, bytes, refused: nil))
    // Taken in after the Write Response; the current values follow, as an iPhone's do.
    let session = gatt as GATTSession
    return .accepted(then: { [self] _ in
      state.withLock { $0.registrations[registration.entity] = registration.pairs.map(\.attribute) }
      session.assumeIsolated(passing: (self, registration.pairs)) { gatt, tell in tell.0.tellValues(tell.1, to: gatt) }
      activity.push(.told(registration.entity))
    })
  }

  /// Changes a value and notifies it to the accessories registered for it.
  func tell(_ attribute: EntityAttribute, _ text: String, sessions: [GATTSession]) async {
    let registered = state.withLock { state -> Bool in
      state.values[attribute] = text
      return state.registrations[attribute.entity]?.contains(attribute.attribute) ?? false
    }
    guard registered else { return }
    for gatt in sessions { await tellValues([attribute], to: gatt) }
  }

  /// Entity Update notifications of `attributes`, each cut to one notification with the
  /// Truncated flag; nothing to an accessory not subscribed.
  private func tellValues(_ attributes: [EntityAttribute], to gatt: isolated GATTSession) {
    let handle = Self.handle(1, on: gatt)
    let values = state.withLock { state in attributes.map { ($0, state.values[$0] ?? "") } }
    guard gatt.cccd(for: handle).contains(.notifications) else { return }
    for (attribute, text) in values {
      let update = EntityUpdate(attribute, text: text, capacity: gatt.connection.mtu - 3)
      do { try gatt.notify(handle, update.encoded()) } catch { return }
    }
  }

  /// Changes the commands the player takes and notifies them to the accessories subscribed.
  func setCommands(_ commands: [RemoteCommandID], sessions: [GATTSession]) async {
    state.withLock { $0.commands = commands }
    for gatt in sessions { await tellCommands(to: gatt) }
  }

  private func tellCommands(to gatt: isolated GATTSession) {
    let commands = state.withLock { $0.commands }
    let handle = Self.handle(0, on: gatt)
    guard gatt.cccd(for: handle).contains(.notifications) else { return }
    _ = try? gatt.notify(handle, SupportedCommands(commands).encoded())
  }
}

extension Result where Failure == AMSError {
  /// The ATT error code a phone refuses a write with when it does not decode.
  fileprivate var failureCode: ATTErrorCode? {
    guard case .failure(let error) = self else { return nil }
    return ATTErrorCode(rawValue: error.errorCode.rawValue)
  }
}

extension NCSession {
  /// What the harness phone's player tells now.
  public func mediaValue(_ attribute: EntityAttribute) -> String? { media.state.withLock { $0.values[attribute] } }

  /// Changes what the player tells: the accessory hears of it if it registered for it.
  public func tellMedia(_ attribute: EntityAttribute, _ text: String) async {
    await media.tell(attribute, text, sessions: server.sessions)
  }

  /// Changes the commands the player takes, notified on Remote Command.
  public func tellCommands(_ commands: [RemoteCommandID]) async {
    await media.setCommands(commands, sessions: server.sessions)
  }

  /// The next thing the accessory did to AMS.
  public func nextMediaActivity() async throws(CaseOutcome) -> MediaActivity {
    guard let next = await media.activity.next() else {
      throw .failed("the link closed before the accessory used the Apple Media Service")
    }
    return next
  }

  /// Waits until the phone has sent the values of the accessory's registration for `entity`
  /// (`MediaActivity.told`), skipping what the accessory did meanwhile.
  public func awaitValuesTold(_ entity: EntityID) async throws(CaseOutcome) {
    let name = entity.name ?? "entity \(entity.rawValue)"
    try await caseLog.awaiting("the phone to send the \(name)'s registered values") { () throws(CaseOutcome) in
      while true {
        if case .told(entity) = try await nextMediaActivity() { return }
      }
    }
  }

  /// Forgets what the accessory did to AMS so far.
  public func forgetMediaActivity() async {
    while media.activity.count > 0 { _ = await media.activity.next() }
  }

  /// Waits for the accessory's registration for `entity`'s attributes, accepted. `strict`:
  /// any Entity Update write the phone refused first fails the case (the accessory wrote it
  /// before subscribing, or malformed); otherwise refusals are passed over.
  @discardableResult
  public func awaitRegistration(_ entity: EntityID, strict: Bool = false, _ why: String = "")
    async throws(CaseOutcome) -> EntityRegistration
  {
    let name = entity.name ?? "entity \(entity.rawValue)"
    return try await caseLog.awaiting(
      "the accessory to register for the \(name)'s attributes on the Apple Media Service's Entity Update\(why)"
    ) { () throws(CaseOutcome) -> EntityRegistration in
      while true {
        guard case .wrote(.entityUpdate, let bytes, let refused) = try await nextMediaActivity() else { continue }
        if let refused {
          guard strict else { continue }
          if refused.rawValue == AMSErrorCode.invalidState.rawValue {
            throw .failed(
              "the accessory wrote Entity Update (\(Hex.encode(bytes))) before subscribing to it: an iPhone refuses "
                + "that with Invalid State (0xA0)")
          }
          throw .failed("the accessory wrote Entity Update \(Hex.encode(bytes)), which is malformed (Invalid Command)")
        }
        if let registration = try? EntityRegistration(decoding: bytes), registration.entity == entity {
          return registration
        }
      }
    }
  }

  /// Unpublishes AMS and publishes it again at other handles, with Service Changed.
  public func moveAMS() async throws(CaseOutcome) {
    try await move(media.service(), named: "the Apple Media Service")
  }
}
