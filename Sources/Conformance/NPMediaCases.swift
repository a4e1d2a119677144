import AMS
import ATT
import GATT
import Wire

/// The Apple Media Service as the harness (an accessory) finds it on a phone.
public struct AMSHandles: Hashable, Sendable {
  public var service: DiscoveredService
  public var remoteCommand: DiscoveredCharacteristic
  public var entityUpdate: DiscoveredCharacteristic
  public var entityAttribute: DiscoveredCharacteristic
  public var remoteCommandCCCD: UInt16?
  public var entityUpdateCCCD: UInt16?
}

extension NPSession {
  /// The phone's AMS, its notifications going to the session's inboxes. Skips the case when
  /// the phone publishes no AMS (it is not part of ANCS); fails it when the service lacks a
  /// characteristic.
  public func discoverMedia() async throws(CaseOutcome) -> AMSHandles {
    let services: [DiscoveredService]
    let characteristics: [DiscoveredCharacteristic]
    do {
      services = try await client.discoverPrimaryServices(BluetoothUUID(AMSUUID.service)!)
      guard services.count == 1 else {
        if services.isEmpty { throw CaseOutcome.skipped("the phone publishes no Apple Media Service") }
        throw CaseOutcome.failed("expected one Apple Media Service, found \(services.count)")
      }
      characteristics = try await client.discoverCharacteristics(of: services[0])
    } catch let outcome as CaseOutcome {
      throw outcome
    } catch {
      throw .failed("discovering the Apple Media Service failed: \(error)")
    }
    func find(_ uuid: String, _ name: String) throws(CaseOutcome) -> DiscoveredCharacteristic {
      guard let found = characteristics.first(where: { $0.uuid == BluetoothUUID(uuid)! }) else {
        throw .failed("no \(name) characteristic (\(uuid)) in the Apple Media Service")
      }
      return found
    }
    var handles = AMSHandles(
      service: services[0], remoteCommand: try find(AMSUUID.remoteCommand, "Remote Command"),
      entityUpdate: try find(AMSUUID.entityUpdate, "Entity Update"),
      entityAttribute: try find(AMSUUID.entityAttribute, "Entity Attribute"))
    handles.remoteCommandCCCD = try await cccd(of: handles.remoteCommand)
    handles.entityUpdateCCCD = try await cccd(of: handles.entityUpdate)
    let remoteCommands = remoteCommands
    let entityUpdates = entityUpdates
    await client.onValue(handles.remoteCommand.valueHandle) { remoteCommands.push($1.value) }
    await client.onValue(handles.entityUpdate.valueHandle) { entityUpdates.push($1.value) }
    return handles
  }

  /// Enables notifications on Entity Update (and Remote Command with `commands`).
  public func subscribeMedia(_ handles: AMSHandles, commands: Bool = false) async throws(CaseOutcome) {
    let cccds =
      [(handles.entityUpdateCCCD, "Entity Update")] + (commands ? [(handles.remoteCommandCCCD, "Remote Command")] : [])
    for (cccd, name) in cccds {
      guard let cccd else { throw .failed("\(name) has no CCCD") }
      do { try await client.configure(cccd: cccd, .notifications) } catch {
        throw .failed("enabling \(name) notifications failed: \(error)")
      }
    }
  }

  /// Writes an AMS characteristic: nil when accepted, else the Error Response's code.
  public func writeMedia(_ characteristic: DiscoveredCharacteristic, _ bytes: [UInt8]) async throws(CaseOutcome)
    -> ATTErrorCode?
  {
    try await log.awaiting("the answer to the write \(Hex.encode(bytes)) of \(characteristic.uuid)") {
      () throws(CaseOutcome) -> ATTErrorCode? in
      do throws(ATTError) {
        try await client.write(characteristic.valueHandle, bytes)
        return nil
      } catch {
        if let code = error.errorCode { return code }
        throw .failed("the write \(Hex.encode(bytes)) of \(characteristic.uuid) failed: \(error)")
      }
    }
  }

  /// The next Entity Update notification for `attribute` (others are skipped).
  public func nextEntityUpdate(_ attribute: EntityAttribute) async throws(CaseOutcome) -> EntityUpdate {
    try await log.awaiting("an Entity Update of \(attribute)") { () throws(CaseOutcome) -> EntityUpdate in
      while let bytes = await entityUpdates.next() {
        let update: EntityUpdate
        do { update = try EntityUpdate(decoding: bytes) } catch {
          throw .failed("an Entity Update notification does not decode: \(error) (\(Hex.encode(bytes)))")
        }
        if update.attribute == attribute { return update }
      }
      throw .failed("the link closed while waiting for an Entity Update of \(attribute)")
    }
  }

  /// The next Remote Command notification: the commands the player takes.
  public func nextSupportedCommands() async throws(CaseOutcome) -> [RemoteCommandID] {
    try await log.awaiting("a Remote Command notification") { () throws(CaseOutcome) -> [RemoteCommandID] in
      guard let bytes = await remoteCommands.next() else {
        throw .failed("the link closed while waiting for a Remote Command notification")
      }
      return SupportedCommands(decoding: bytes).commands
    }
  }
}

/// The NP cases of the Apple Media Service (Protocol/AMS.md; Protocol/conformance.md, AMS).
/// A phone without AMS has them skipped: ANCS does not require it.
enum NPMediaCases {
  static let serviceRule =
    "Protocol/AMS.md, Service and characteristics: Remote Command | write, notify; Entity Update | "
    + "write, notify; Entity Attribute | read, write"
  static let registerTitle = EntityRegistration(.track, [EntityAttribute.title.attribute]).encoded()

  /// An encrypted link with AMS found and Entity Update subscribed.
  static func subscribed(_ ctx: NPContext, mtu: UInt16? = nil, commands: Bool = false) async throws(CaseOutcome)
    -> (NPSession, AMSHandles)
  {
    let session = try await ctx.open(mtu: mtu)
    let handles = try await session.discoverMedia()
    try await session.subscribeMedia(handles, commands: commands)
    return (session, handles)
  }

  /// How many times AMS/NP/RC/BV-02 registers again for PlaybackInfo before it takes a
  /// player still playing as one that ignored the command.
  static let registrationsToPause = 8

  /// A title longer than any notification at ATT_MTU 23 holds, with multi-byte characters.
  static let longTitle = "Conformance: a title longer than one notification holds — Für Élise ♪ 日本"

  static let all: [ConformanceCase] = [
    ConformanceCase(
      "AMS/NP/SVC/BV-01", "The Apple Media Service with its three characteristics", rule: serviceRule,
      needsStimulus: false
    ) { ctx in
      let handles = try await ctx.open().discoverMedia()
      for (characteristic, name, properties) in [
        (handles.remoteCommand, "Remote Command", CharacteristicProperties([.write, .notify])),
        (handles.entityUpdate, "Entity Update", [.write, .notify]),
        (handles.entityAttribute, "Entity Attribute", [.read, .write]),
      ] {
        try check(
          characteristic.properties.isSuperset(of: properties),
          "\(name) properties \(hex(characteristic.properties.rawValue)) lack \(hex(properties.rawValue))")
      }
      try check(handles.remoteCommandCCCD != nil, "Remote Command has no CCCD (0x2902)")
      try check(handles.entityUpdateCCCD != nil, "Entity Update has no CCCD (0x2902)")
    },
    ConformanceCase(
      "AMS/NP/SEC/BI-01", "An Entity Update write refused before encryption",
      rule: "Protocol/AMS.md, Service and characteristics (security): the characteristics need an encrypted link",
      needsStimulus: false
    ) { ctx in
      let first = try await ctx.open()
      let handles = try await first.discoverMedia()
      // One link at a time: over the air the harness advertises again only once this one is gone.
      first.close()
      let plain = try await ctx.open(encrypt: false)
      let code = try await plain.writeMedia(handles.entityUpdate, registerTitle)
      try NPCases.checkSecurityRefusal(code, "an Entity Update write")
    },
    ConformanceCase(
      "AMS/NP/EU/BI-01", "A registration before subscribing is refused Invalid State",
      rule: "Protocol/AMS.md, Errors: Invalid State (0xA0) for an Entity Update write before the accessory "
        + "subscribed to it", needsStimulus: false
    ) { ctx in
      let session = try await ctx.open()
      let handles = try await session.discoverMedia()
      // A bonded phone may keep a subscription from an earlier link: none, to begin with.
      guard let cccd = handles.entityUpdateCCCD else { throw CaseOutcome.failed("Entity Update has no CCCD (0x2902)") }
      do { try await session.client.configure(cccd: cccd, []) } catch {
        throw CaseOutcome.failed("disabling Entity Update notifications failed: \(error)")
      }
      let code = try await session.writeMedia(handles.entityUpdate, registerTitle)
      try check(
        code?.rawValue == AMSErrorCode.invalidState.rawValue,
        "an Entity Update write before subscribing was answered \(code.map { hex($0.rawValue) } ?? "with success"), "
          + "expected 0xA0")
    },
    ConformanceCase(
      "AMS/NP/EU/BI-02", "An empty Entity Update write is refused Invalid Command",
      rule: "Protocol/AMS.md, Errors: Invalid Command (0xA1) for a write that does not decode", needsStimulus: false
    ) { ctx in
      let (session, handles) = try await subscribed(ctx)
      let code = try await session.writeMedia(handles.entityUpdate, [])
      try check(
        code?.rawValue == AMSErrorCode.invalidCommand.rawValue,
        "an empty Entity Update write was answered \(code.map { hex($0.rawValue) } ?? "with success"), expected 0xA1")
    },
    ConformanceCase(
      "AMS/NP/RC/BV-01", "Subscribing to Remote Command brings the commands the player takes",
      rule: "Protocol/AMS.md, Remote Command: the phone notifies the supported commands on subscription"
    ) { ctx in
      try await ctx.play(StimulusTrack(title: "Conformance commands"))
      let (session, _) = try await subscribed(ctx, commands: true)
      let commands = try await session.nextSupportedCommands()
      try check(
        commands.contains(.togglePlayPause) || (commands.contains(.play) && commands.contains(.pause)),
        "with a track loaded the player offers neither TogglePlayPause nor Play and Pause: \(commands)")
    },
    ConformanceCase(
      "AMS/NP/EU/BV-01", "A registration brings the current values",
      rule: "Protocol/AMS.md, Entity Update: each attribute registered is notified, its current value first"
    ) { ctx in
      // Short enough for one notification at any ATT_MTU.
      let title = "Current value"
      try await ctx.play(StimulusTrack(title: title))
      let (session, handles) = try await subscribed(ctx)
      try check(
        try await session.writeMedia(handles.entityUpdate, registerTitle) == nil, "the registration was refused")
      let update = try await session.nextEntityUpdate(.title)
      try check(update.text == title, "the Title told is \"\(update.text)\", expected \"\(title)\"")
      try check(!update.flags.contains(.truncated), "a whole Title is flagged Truncated")
    },
    ConformanceCase(
      "AMS/NP/EU/BV-02", "A value longer than a notification is cut and flagged Truncated",
      rule: "Protocol/AMS.md, Entity Update: a value is cut to fit one notification (ATT_MTU - 3 - 3 bytes), "
        + "never inside a character, with the Truncated flag"
    ) { ctx in
      try await ctx.play(StimulusTrack(title: longTitle))
      let (session, handles) = try await subscribed(ctx, mtu: 23)
      try check(
        try await session.writeMedia(handles.entityUpdate, registerTitle) == nil, "the registration was refused")
      let update = try await session.nextEntityUpdate(.title)
      let room = session.notificationCapacity - EntityUpdate.headerSize
      try check(
        update.value.count <= room, "the Title takes \(update.value.count) bytes, one notification holds \(room)")
      try check(
        String(validating: update.value, as: UTF8.self) != nil && longTitle.utf8.starts(with: update.value),
        "the Title told (\(Hex.encode(update.value))) is not a whole-character prefix of the title played")
      try check(update.flags.contains(.truncated), "the Title was cut to \(update.value.count) bytes without Truncated")
    },
    ConformanceCase(
      "AMS/NP/EA/BV-01", "Entity Attribute gives a cut value whole",
      rule: "Protocol/AMS.md, Entity Attribute: after the accessory writes the attribute, a read gives its whole value"
    ) { ctx in
      try await ctx.play(StimulusTrack(title: longTitle))
      let (session, handles) = try await subscribed(ctx, mtu: 23)
      let select = EntityAttributeSelection(.title).encoded()
      try check(try await session.writeMedia(handles.entityAttribute, select) == nil, "selecting the Title was refused")
      let whole: [UInt8]
      do { whole = try await session.client.read(handles.entityAttribute.valueHandle) } catch {
        throw CaseOutcome.failed("reading Entity Attribute failed: \(error)")
      }
      try check(
        whole == Array(longTitle.utf8),
        "Entity Attribute gave \(whole.count) bytes (\"\(String(decoding: whole, as: UTF8.self))\"), expected the "
          + "whole title's \(longTitle.utf8.count)")
    },
    ConformanceCase(
      "AMS/NP/RC/BV-02", "A remote command the player takes is performed",
      rule: "Protocol/AMS.md, Remote Command: the player performs a command it takes; the change is notified"
    ) { ctx in
      try await ctx.play(StimulusTrack(title: "Conformance toggle"))
      let (session, handles) = try await subscribed(ctx, commands: true)
      let commands = try await session.nextSupportedCommands()
      let command: RemoteCommandID = commands.contains(.togglePlayPause) ? .togglePlayPause : .pause
      try check(commands.contains(command), "the player offers neither TogglePlayPause nor Pause: \(commands)")
      let info = EntityRegistration(.player, [EntityAttribute.playbackInfo.attribute]).encoded()
      try check(try await session.writeMedia(handles.entityUpdate, info) == nil, "the registration was refused")
      let before = try await session.nextEntityUpdate(.playbackInfo)
      let state: PlaybackState
      do { state = try PlaybackInfo(text: before.text).state } catch {
        throw CaseOutcome.failed("PlaybackInfo \"\(before.text)\" does not parse: \(error)")
      }
      try check(state == .playing, "the track played is not playing: PlaybackInfo \"\(before.text)\"")
      try check(
        try await session.writeMedia(handles.remoteCommand, RemoteCommand(command).encoded()) == nil,
        "the Remote Command write was refused")
      // Registering again brings the current value: the next PlaybackInfo is the change, or
      // that value, so a player that did nothing is seen without waiting out the case. A
      // phone's player may take a moment after the Write Response: asked a few times.
      var after = before
      for _ in 0..<registrationsToPause where !after.text.hasPrefix("0,") {
        try check(try await session.writeMedia(handles.entityUpdate, info) == nil, "the registration was refused")
        after = try await session.nextEntityUpdate(.playbackInfo)
      }
      try check(
        after.text.hasPrefix("0,"),
        "after \(command) PlaybackInfo is \"\(after.text)\" (asked \(registrationsToPause) times), expected paused (0,...)"
      )
    },
  ]
}
