import AMS
import ATT
import GATT
import Links
import Phone
import Runtime
import TestSupport
import Testing

/// The Apple Media Service of `ancs phone`, from an accessory's side over a link: the
/// commands it takes, the values it notifies and cuts, whole values through Entity Attribute,
/// and its refusals (Protocol/AMS.md).
@Suite(.timeLimit(scaledMinutes(1))) struct MediaServiceTests {
  /// An accessory on an encrypted link, its AMS notifications collected.
  struct MediaRemote {
    let accessory: Accessory
    let handles: [CharacteristicHandles]
    let updates: AsyncStream<[UInt8]>
    let commands: AsyncStream<[UInt8]>

    init(_ phone: Phone, mtu: UInt16 = 185) async throws {
      accessory = await Accessory(phone, mtu: mtu, encrypted: true)
      handles = try #require(phone.server.handles(of: BluetoothUUID(AMSUUID.service)!))
      let (updates, updateSink) = AsyncStream<[UInt8]>.makeStream()
      let (commands, commandSink) = AsyncStream<[UInt8]>.makeStream()
      self.updates = updates
      self.commands = commands
      await accessory.client.onValue(handles[0].value) { commandSink.yield($1.value) }
      await accessory.client.onValue(handles[1].value) { updateSink.yield($1.value) }
    }

    var remoteCommand: UInt16 { handles[0].value }
    var entityUpdate: UInt16 { handles[1].value }
    var entityAttribute: UInt16 { handles[2].value }

    /// The ATT error a write gets, nil for a Write Response.
    func write(_ handle: UInt16, _ bytes: [UInt8]) async -> ATTErrorCode? {
      do throws(ATTError) {
        try await accessory.client.write(handle, bytes)
        return nil
      } catch {
        return error.errorCode ?? .unlikelyError
      }
    }

    func subscribe() async throws {
      try await accessory.client.configure(cccd: try #require(handles[0].cccd), .notifications)
      try await accessory.client.configure(cccd: try #require(handles[1].cccd), .notifications)
    }
  }

  static func phone() throws -> (Phone, ManualClock) {
    let clock = ManualClock()
    return (try Phone(mediaClock: clock), clock)
  }

  static let song = MediaPlayer.Track(title: "Tall Bird", artist: "Bartlebeats", album: "Frequency", duration: 215)

  static func update(_ bytes: [UInt8]?) throws -> EntityUpdate { try EntityUpdate(decoding: try #require(bytes)) }

  @Test func registeredValuesComeAtOnceAndWhenTheyChange() async throws {
    let (phone, clock) = try Self.phone()
    await phone.changeMedia { player, now in player.play(Self.song, at: now) }
    let remote = try await MediaRemote(phone)
    try await remote.subscribe()
    var commands = remote.commands.makeAsyncIterator()
    let offered = SupportedCommands(decoding: try #require(await commands.next(isolation: nil)))
    #expect(offered.commands.contains(.togglePlayPause) && offered.commands.contains(.nextTrack))
    #expect(await remote.write(remote.entityUpdate, [2, 2, 0]) == nil)
    var updates = remote.updates.makeAsyncIterator()
    #expect(try Self.update(await updates.next(isolation: nil)) == EntityUpdate(.title, value: Array("Tall Bird".utf8)))
    #expect(try Self.update(await updates.next(isolation: nil)).text == "Bartlebeats")
    clock.advance(by: .seconds(30))
    #expect(await remote.write(remote.entityUpdate, [0, 1]) == nil)
    #expect(try Self.update(await updates.next(isolation: nil)).text == "1,1.0,30.0")
    // The accessory pauses: PlaybackInfo changes, the title does not.
    #expect(await remote.write(remote.remoteCommand, [RemoteCommandID.pause.rawValue]) == nil)
    #expect(try Self.update(await updates.next(isolation: nil)).text == "0,0.0,30.0")
    #expect(await phone.mediaPlayer.state == .paused)
    // A new track: the title and artist are told again (PlaybackInfo too: a new track starts at 0).
    await phone.changeMedia { player, now in
      player.play(MediaPlayer.Track(title: "Next", artist: "Someone", duration: 60), at: now)
    }
    var told: [EntityAttribute: String] = [:]
    for _ in 0..<3 {
      let update = try Self.update(await updates.next(isolation: nil))
      told[update.attribute] = update.text
    }
    #expect(told == [.title: "Next", .artist: "Someone", .playbackInfo: "1,1.0,0.0"])
    await remote.accessory.close()
  }

  /// A registration that names an AttributeID twice asks for it once: its value is told
  /// once, at once and on each change.
  @Test func anAttributeNamedTwiceIsToldOnce() async throws {
    let (phone, _) = try Self.phone()
    await phone.changeMedia { player, now in player.play(Self.song, at: now) }
    let remote = try await MediaRemote(phone)
    try await remote.subscribe()
    #expect(await remote.write(remote.entityUpdate, [2, 2, 2, 0, 2]) == nil)
    var updates = remote.updates.makeAsyncIterator()
    func nextTwo() async throws -> [EntityAttribute] {
      [
        try Self.update(await updates.next(isolation: nil)).attribute,
        try Self.update(await updates.next(isolation: nil)).attribute,
      ]
    }
    #expect(try await nextTwo() == [.title, .artist])
    await phone.changeMedia { player, now in player.play(MediaPlayer.Track(title: "Next", artist: "Someone"), at: now) }
    #expect(try await nextTwo() == [.title, .artist])
    await remote.accessory.close()
  }

  @Test func aLongTitleIsCutToTheNotificationAndReadWholeThroughEntityAttribute() async throws {
    let (phone, _) = try Self.phone()
    let title = "A title much longer than one notification at the smallest MTU: Für Élise ♪"
    await phone.changeMedia { player, now in player.play(MediaPlayer.Track(title: title), at: now) }
    let remote = try await MediaRemote(phone, mtu: 23)
    try await remote.subscribe()
    #expect(await remote.write(remote.entityUpdate, [2, 2]) == nil)
    var updates = remote.updates.makeAsyncIterator()
    let cut = try Self.update(await updates.next(isolation: nil))
    #expect(cut.flags == .truncated && cut.encoded().count == 20 && title.utf8.starts(with: cut.value))
    #expect(await remote.write(remote.entityAttribute, [2, 2]) == nil)
    #expect(try await remote.accessory.client.read(remote.entityAttribute) == Array(title.utf8))
    await remote.accessory.close()
  }

  @Test func writesBeforeSubscribingOrMalformedAreRefusedWithAMSCodes() async throws {
    let (phone, _) = try Self.phone()
    let remote = try await MediaRemote(phone)
    let invalidState = ATTErrorCode(rawValue: AMSErrorCode.invalidState.rawValue)
    let invalidCommand = ATTErrorCode(rawValue: AMSErrorCode.invalidCommand.rawValue)
    #expect(await remote.write(remote.entityUpdate, [2, 2]) == invalidState)
    #expect(await remote.write(remote.entityAttribute, [2, 2]) == invalidState)
    try await remote.subscribe()
    #expect(await remote.write(remote.entityUpdate, []) == invalidCommand)
    #expect(await remote.write(remote.entityAttribute, [2]) == invalidCommand)
    #expect(await remote.write(remote.remoteCommand, [0, 1]) == invalidCommand)
    // No track: no command is offered, and one written changes nothing.
    #expect(await remote.write(remote.remoteCommand, [RemoteCommandID.play.rawValue]) == nil)
    #expect(await phone.mediaPlayer.state == .paused)
    await remote.accessory.close()
  }

  @Test func eachRemoteCommandIsAnEventSayingWhatThePlayerDid() async throws {
    let (phone, _) = try Self.phone()
    var events = phone.events().makeAsyncIterator()
    await phone.changeMedia { player, now in player.play(Self.song, at: now) }
    let remote = try await MediaRemote(phone)
    try await remote.subscribe()
    #expect(await remote.write(remote.remoteCommand, [RemoteCommandID.togglePlayPause.rawValue]) == nil)
    #expect(await remote.write(remote.remoteCommand, [RemoteCommandID.likeTrack.rawValue]) == nil)
    var commands: [PhoneEvent] = []
    while commands.count < 2, let event = await events.next(isolation: nil) {
      if case .remoteCommand = event { commands.append(event) }
    }
    #expect(
      commands == [
        .remoteCommand(
          session: 1, command: "togglePlayPause",
          outcome: #"paused at "Tall Bird" by Bartlebeats (Frequency), 0:00 of 3:35"#),
        .remoteCommand(session: 1, command: "likeTrack", outcome: "not available now, ignored"),
      ])
    await remote.accessory.close()
  }

  /// Changes made from many tasks at once reach the accessory in the order the phone made
  /// them, so it ends showing what the phone has.
  @Test func changesFromManyTasksAreToldInTheOrderMade() async throws {
    let (phone, _) = try Self.phone()
    await phone.changeMedia { player, now in player.play(Self.song, at: now) }
    let remote = try await MediaRemote(phone)
    try await remote.subscribe()
    var updates = remote.updates.makeAsyncIterator()
    #expect(await remote.write(remote.entityUpdate, [0, 2]) == nil, "Player Volume registered")
    #expect(try Self.update(await updates.next(isolation: nil)).text == "0.5", "its current value")
    let made = Locked<[String]>([])
    await withTaskGroup(of: Void.self) { group in
      for step in 1...200 where step != 128 {  // 128/256 is the starting volume: no change
        group.addTask {
          await phone.changeMedia { player, _ in
            player.setVolume(Double(step) / 256)
            made.withLock { $0.append(AMSNumber.text(player.volume)) }
          }
        }
      }
    }
    var told: [String] = []
    while told.count < 199, let bytes = await updates.next(isolation: nil) { told.append(try Self.update(bytes).text) }
    let order = made.withLock { $0 }
    #expect(told == order, "first told out of order: \(told.indices.first { told[$0] != order[$0] } ?? -1)")
  }
}
