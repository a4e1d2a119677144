import AMS
import ATT
import GATT
import Wire

/// The Apple Media Service on the phone (Protocol/AMS.md): the player's commands on Remote
/// Command, its attributes on Entity Update, whole values through Entity Attribute.
extension Phone {
  /// What one accessory asked of AMS.
  struct MediaSession {
    /// The attributes asked of each entity (Entity Update writes), in the order asked.
    var registrations: [EntityID: [UInt8]] = [:]
    /// The attribute the next Entity Attribute read gives whole.
    var selection: EntityAttribute?

    /// The registered attributes among `attributes`, in registration order.
    func registered(among attributes: Set<EntityAttribute>) -> [EntityAttribute] {
      registrations.sorted { $0.key.rawValue < $1.key.rawValue }.flatMap { entity, ids in
        ids.map { EntityAttribute(entity, $0) }.filter(attributes.contains)
      }
    }
  }

  nonisolated func mediaService() -> ServiceDefinition {
    ServiceDefinition(
      uuid: IPhoneUUID.ams,
      characteristics: [
        CharacteristicDefinition(
          uuid: IPhoneUUID.remoteCommand, properties: policy.remoteCommandProperties, security: policy.mediaSecurity,
          extendedProperties: Self.reliableWrite,
          write: { [unowned self] session, bytes in
            assumeIsolated(passing: (session, bytes)) { $0.remoteCommand($1.0, $1.1) }
          },
          subscribed: { [unowned self] session, value in
            guard value.contains(.notifications) else { return }
            assumeIsolated(passing: session) { $0.remoteCommandSubscribed($1) }
          }),
        CharacteristicDefinition(
          uuid: IPhoneUUID.entityUpdate, properties: [.write, .notify], security: policy.mediaSecurity,
          extendedProperties: Self.reliableWrite,
          write: { [unowned self] session, bytes in
            assumeIsolated(passing: (session, bytes)) { $0.entityUpdate($1.0, $1.1) }
          }),
        CharacteristicDefinition(
          uuid: IPhoneUUID.entityAttribute, properties: [.read, .write], security: policy.mediaSecurity,
          extendedProperties: Self.reliableWrite,
          read: { [unowned self] session in assumeIsolated(passing: session) { $0.entityAttribute($1) } },
          write: { [unowned self] session, bytes in
            assumeIsolated(passing: (session, bytes)) { $0.selectEntityAttribute($1.0, $1.1) }
          }),
      ])
  }

  /// Value handles of Remote Command and Entity Update, when AMS is published.
  typealias MediaHandles = (remoteCommand: UInt16, entityUpdate: UInt16)

  /// The accessory subscribed to Remote Command: the commands the player takes now.
  private func remoteCommandSubscribed(_ gatt: GATTSession) {
    let handles = mediaHandles
    deliver(withState { queueCommands(handles, in: &$0, only: ObjectIdentifier(gatt)) })
  }

  /// Value handles of Remote Command and Entity Update, when AMS is published.
  var mediaHandles: MediaHandles? { handles.media }

  /// Seconds on the media clock.
  nonisolated var mediaNow: Double {
    let now = mediaClock.now.components
    return Double(now.seconds) + Double(now.attoseconds) / 1e18
  }

  /// The player as it is now.
  public var mediaPlayer: MediaPlayer { withState { $0.player } }

  /// What plays now, in one line (`MediaPlayer.summary`).
  public var mediaSummary: String {
    let now = mediaNow
    return withState { $0.player.summary(at: now) }
  }

  /// The player's state for scripts (`MediaPlayer.json`).
  public var mediaJSON: JSON {
    let now = mediaNow
    return withState { $0.player.json(at: now) }
  }

  /// Performs a console, JSON or scenario media command: what it did, or why not.
  public func media(_ command: MediaCommand) -> Result<String, ConsoleError> {
    changeMedia { player, now in command.apply(to: &player, at: now) }
  }

  /// Changes the player (the console, a scenario, a remote command) and tells each accessory
  /// what changed of what it asked for, and the commands when they changed. Returns what
  /// `change` returned.
  @discardableResult
  public func changeMedia<T>(_ change: (inout MediaPlayer, _ now: Double) -> T) -> T {
    let handles = mediaHandles
    let (result, deliveries) = withState { state -> (T, [Delivery]) in
      // Read in the step: changes take their times in the order they are made, and what
      // they change is queued for each accessory in that order too.
      let now = mediaNow
      let before = state.player.values(at: now)
      let commandsBefore = state.player.supportedCommands
      let result = change(&state.player, now)
      let after = state.player.values(at: now)
      let changed = Set(EntityAttribute.all.filter { before[$0] != after[$0] })
      let keys = state.sessions.sorted { $0.value.id < $1.value.id }.map(\.key)
      var deliveries: [Delivery] = []
      for key in keys {
        guard let attributes = state.sessions[key]?.media.registered(among: changed), !attributes.isEmpty else {
          continue
        }
        deliveries += queueValues(attributes, handles, for: key, at: now, in: &state)
      }
      if commandsBefore != state.player.supportedCommands { deliveries += queueCommands(handles, in: &state) }
      scheduleTrackEnd(&state)
      return (result, deliveries)
    }
    deliver(deliveries)
    return result
  }

  // MARK: Tracks ending by themselves

  /// In the step of every change: a timer on the media clock finishes the
  /// current track when it ends, while it plays; the one before, if any, is cancelled.
  private func scheduleTrackEnd(_ state: inout State) {
    let end = state.player.endOfTrack
    guard end != state.trackEnd else { return }
    state.trackTimer?.cancel()
    state.trackEnd = end
    state.trackTimer = end.map { end in
      let clock = mediaClock
      return Task { [weak self] in
        do { try await clock.sleep(until: .nanoseconds(Int64((end * 1e9).rounded(.up)))) } catch { return }
        await self?.finishTrack(endingAt: end)
      }
    }
  }

  /// The timer for a track ending at `end` fired: the next track plays (Protocol/AMS.md).
  private func finishTrack(endingAt end: Double) {
    withState { state in
      // This timer is done: the change below must not cancel the task it runs in.
      if state.trackEnd == end {
        state.trackEnd = nil
        state.trackTimer = nil
      }
    }
    let line = changeMedia { player, now -> String? in
      // The clock has passed `end`, so the track ended then, whatever the reading now.
      player.finishTrack(at: max(now, end)) ? player.summary(at: now) : nil
    }
    if let line { emit(.trackEnded(now: line)) }
  }

  // MARK: The characteristics

  private func remoteCommand(_ gatt: GATTSession, _ bytes: [UInt8]) -> WriteOutcome {
    let command: RemoteCommand
    do { command = try RemoteCommand(decoding: bytes) } catch {
      return .refused(ATTErrorCode(rawValue: error.errorCode.rawValue))
    }
    // A command the player does not take now changes nothing (Protocol/AMS.md).
    let id = command.command
    let performs = policy.performsCommands
    return .accepted(then: { [self] _ in
      assumeIsolated(passing: (id, performs, gatt)) { phone, command in
        phone.perform(command.0, performs: command.1, from: command.2)
      }
    })
  }

  /// Performs a Remote Command after its Write Response.
  private func perform(_ id: RemoteCommandID, performs: Bool, from gatt: GATTSession) {
    let outcome = changeMedia { (player: inout MediaPlayer, now: Double) -> String in
      performs && player.perform(id, at: now) ? player.summary(at: now) : "not available now, ignored"
    }
    if let session = withState({ $0.sessions[ObjectIdentifier(gatt)]?.id }) {
      emit(.remoteCommand(session: session, command: id.name ?? String(id.rawValue), outcome: outcome))
    }
  }

  private func entityUpdate(_ gatt: GATTSession, _ bytes: [UInt8]) -> WriteOutcome {
    subscribedWrite(gatt, bytes, EntityRegistration.init(decoding:)) { registration in
      // Taken in after the Write Response, so that no change is told before it; the
      // current values follow.
      .accepted(then: { [self] _ in
        assumeIsolated(passing: (registration, gatt)) { phone, taken in phone.register(taken.0, from: taken.1) }
      })
    }
  }

  /// Takes an Entity Update registration in, after its Write Response; the current values
  /// follow.
  private func register(_ registration: EntityRegistration, from gatt: GATTSession) {
    let key = ObjectIdentifier(gatt)
    let handles = mediaHandles
    deliver(
      withState { state in
        state.sessions[key]?.media.registrations[registration.entity] = registration.pairs.map(\.attribute)
        return policy.tellsCurrentValues
          ? queueValues(registration.pairs, handles, for: key, at: mediaNow, in: &state) : []
      })
  }

  private func selectEntityAttribute(_ gatt: GATTSession, _ bytes: [UInt8]) -> WriteOutcome {
    subscribedWrite(gatt, bytes, EntityAttributeSelection.init(decoding:)) { selection in
      withState { $0.sessions[ObjectIdentifier(gatt)]?.media.selection = selection.attribute }
      return .accepted
    }
  }

  /// An Entity Update or Entity Attribute write: Invalid State before the accessory
  /// subscribed to Entity Update, Invalid Command when it does not decode, else `take`'s.
  private func subscribedWrite<T>(
    _ gatt: GATTSession, _ bytes: [UInt8], _ decode: ([UInt8]) throws(AMSError) -> T,
    take: (T) -> WriteOutcome
  ) -> WriteOutcome {
    guard let handles = mediaHandles,
      cccd(gatt, handles.entityUpdate).contains(.notifications) || !policy.mediaNeedsSubscription
    else {
      return .refused(ATTErrorCode(rawValue: AMSErrorCode.invalidState.rawValue))
    }
    do { return take(try decode(bytes)) } catch {
      return policy.refusesMalformedMedia ? .refused(ATTErrorCode(rawValue: error.errorCode.rawValue)) : .accepted
    }
  }

  /// The selected attribute's whole value; empty with none selected or none there.
  private func entityAttribute(_ gatt: GATTSession) -> [UInt8] {
    let now = mediaNow
    let whole = withState { state -> (EntityAttribute, String)? in
      guard let selection = state.sessions[ObjectIdentifier(gatt)]?.media.selection else { return nil }
      return (selection, state.player.value(of: selection, at: now) ?? "")
    }
    guard let (attribute, text) = whole else { return [] }
    guard policy.cutsEntityAttribute else { return Array(text.utf8) }
    return EntityUpdate(attribute, text: text, capacity: gatt.connection.mtu - 3).value
  }

  // MARK: Notifying

  /// Entity Update notifications for `attributes` to one accessory, their values as they are
  /// at `now`, each cut to one notification (an absent value is sent empty), for the caller
  /// to send (`deliver`) in the same step.
  private func queueValues(
    _ attributes: [EntityAttribute], _ handles: MediaHandles?, for key: ObjectIdentifier, at now: Double,
    in state: inout State
  ) -> [Delivery] {
    guard let handles, let gatt = state.sessions[key]?.gatt else { return [] }
    let capacity = gatt.connection.mtu - 3
    let updates = attributes.map { attribute in
      var update = EntityUpdate(attribute, text: state.player.value(of: attribute, at: now) ?? "", capacity: capacity)
      if !policy.flagsTruncated { update.flags.remove(.truncated) }
      return Outgoing(handle: handles.entityUpdate, value: update.encoded())
    }
    return Self.deliveries(updates, for: [key], in: state)
  }

  /// The commands the player takes now, for every accessory or `only` one (sent to those
  /// subscribed to Remote Command), for the caller to send (`deliver`) in the same step.
  private func queueCommands(_ handles: MediaHandles?, in state: inout State, only key: ObjectIdentifier? = nil)
    -> [Delivery]
  {
    guard let handles else { return [] }
    let commands = Outgoing(
      handle: handles.remoteCommand, value: SupportedCommands(state.player.supportedCommands).encoded())
    return Self.deliveries([commands], for: key.map { [$0] } ?? Self.everySession(state), in: state)
  }
}
