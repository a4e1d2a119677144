import ANCS
import ATT
import GATT
import Links
import Phone
import Testing
import Wire

/// Notification sharing, as iOS 13 and later ask: until the user allows an accessory, the
/// CCCD writes succeed, no event comes, and the Control Point answers Write Not Permitted.
@Suite struct SharingTests {
  // The iPhone layout's ANCS handles (IPhoneDatabaseTests checks them).
  static let controlPoint: UInt16 = 0x0025
  static let sourceValue: UInt16 = 0x0028
  static let sourceCCCD: UInt16 = 0x0029
  static let dataCCCD: UInt16 = 0x002C
  /// Get Notification Attributes for UID 77 (no such notification), AppIdentifier.
  static let fetch77: [UInt8] = [0x00, 77, 0, 0, 0, 0x00]

  /// An accessory paired and subscribed to both ANCS sources, its Notification Source
  /// events collected.
  struct Subscribed {
    let accessory: Accessory
    let events: AsyncStream<[UInt8]>

    init(_ phone: Phone, name: String? = nil) async throws {
      let (central, peripheral) = MemoryLink.pair()
      let connection = ATTConnection(bearer: peripheral)
      if let name {
        let gap = ServiceDefinition(uuid: 0x1800, characteristics: [.constant(0x2A00, Array(name.utf8))])
        try await GATTServer(leading: [gap], services: [], serviceChanged: false).attach(connection)
      }
      accessory = await Accessory(phone, central: central, peripheral: peripheral, connection: connection)
      let (events, sink) = AsyncStream<[UInt8]>.makeStream()
      self.events = events
      await accessory.client.onValue(SharingTests.sourceValue) { sink.yield($1.value) }
      _ = try await peripheral.pair(.encrypted)
      try await accessory.client.configure(cccd: SharingTests.dataCCCD, .notifications)
      try await accessory.client.configure(cccd: SharingTests.sourceCCCD, .notifications)
    }

    /// The Control Point's answer to `bytes`: nil for a Write Response, else the ATT error.
    func write(_ bytes: [UInt8]) async -> ATTErrorCode? {
      do {
        try await accessory.client.write(SharingTests.controlPoint, bytes)
        return nil
      } catch {
        return error.errorCode ?? .unlikelyError
      }
    }
  }

  static func phone(_ sharing: SharingPolicy) throws -> Phone {
    let phone = try Phone(settings: PhoneSettings(sharing: sharing), apps: ["com.example.chat": "Chat"])
    return phone
  }

  static func note(_ title: String) -> PhoneNotification {
    PhoneNotification(appIdentifier: "com.example.chat", category: .social, title: title)
  }

  @Test func untilAllowedTheControlPointSaysWriteNotPermittedAndNoEventComes() async throws {
    let phone = try Self.phone(.ask)
    var phoneEvents = phone.events().makeAsyncIterator()
    await phone.post(Self.note("Before"))
    let watch = try await Subscribed(phone)
    #expect(await watch.write(Self.fetch77) == .writeNotPermitted)
    // The user was asked once, when the accessory subscribed.
    var asked = 0
    while let event = await phoneEvents.next(isolation: nil) {
      if case .sharingRequested(let session, _) = event {
        asked += 1
        #expect(session == 1)
      }
      if case .refused(_, _, let code) = event, code == 0x03 { break }
    }
    #expect(asked == 1)
    #expect(await phone.sharing == [1: false])
    // Allowed: the session starts with the pre-existing report, and commands work.
    #expect(await phone.allowSharing(session: 1) == [1])
    var iterator = watch.events.makeAsyncIterator()
    let report = try #require(await iterator.next(isolation: nil))
    let event = try NotificationSourceEvent(decoding: report)
    #expect(event.eventID == .added && event.eventFlags.contains(.preExisting))
    #expect(await watch.write(Self.fetch77) == ATTErrorCode(rawValue: ANCSErrorCode.invalidParameter.rawValue))
    await phone.post(Self.note("After"))
    let live = try NotificationSourceEvent(decoding: try #require(await iterator.next(isolation: nil)))
    #expect(live.eventID == .added && !live.eventFlags.contains(.preExisting))
    await watch.accessory.close()
  }

  @Test func revokedWhileConnectedTheEventsStopAndTheControlPointRefuses() async throws {
    let phone = try Self.phone(.allow)
    let watch = try await Subscribed(phone)
    var iterator = watch.events.makeAsyncIterator()
    await phone.post(Self.note("Shared"))
    _ = try #require(await iterator.next(isolation: nil))
    #expect(await phone.revokeSharing() == [1])
    await phone.post(Self.note("Not shared"))
    #expect(await watch.write(Self.fetch77) == .writeNotPermitted)
    // Allowed again: a new report brings both, the revoked-time one included.
    await phone.allowSharing()
    var titles: [UInt32] = []
    for _ in 0..<2 {
      let event = try NotificationSourceEvent(decoding: try #require(await iterator.next(isolation: nil)))
      #expect(event.eventFlags.contains(.preExisting))
      titles.append(event.notificationUID)
    }
    let uids = await phone.notifications.map(\.uid)
    #expect(titles == uids)
    await watch.accessory.close()
  }

  /// Deny: nobody is asked and nothing is shared; the user can still allow.
  @Test func denyAsksNobody() async throws {
    let phone = try Self.phone(.deny)
    var phoneEvents = phone.events().makeAsyncIterator()
    let watch = try await Subscribed(phone)
    #expect(await watch.write(Self.fetch77) == .writeNotPermitted)
    while let event = await phoneEvents.next(isolation: nil) {
      if case .sharingRequested = event { Issue.record("asked under deny") }
      if case .refused = event { break }
    }
    await watch.accessory.close()
  }

  /// The answer is remembered by the accessory's name, as an iPhone remembers a bonded one.
  @Test func theDecisionIsRememberedByTheAccessorysName() async throws {
    let phone = try Self.phone(.ask)
    var phoneEvents = phone.events().makeAsyncIterator()
    let first = try await Subscribed(phone, name: "Ring 7")
    // The name is read before the allow applies to it.
    while let event = await phoneEvents.next(isolation: nil) {
      if case .identified = event { break }
    }
    await phone.allowSharing(session: 1)
    await first.accessory.close()
    let second = try await Subscribed(phone, name: "Ring 7")
    while let event = await phoneEvents.next(isolation: nil) {
      if case .sharingChanged(let session, true) = event, session == 2 { break }
    }
    #expect(await second.write(Self.fetch77) == ATTErrorCode(rawValue: ANCSErrorCode.invalidParameter.rawValue))
    await second.accessory.close()
  }

  @Test func consoleAndJSONCommands() throws {
    #expect(try PhoneCommand.parse("allow 2") == .allow(watch: 2))
    #expect(try PhoneCommand.parse("allow") == .allow(watch: nil))
    #expect(try PhoneCommand.parse("revoke 1") == .revoke(watch: 1))
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse("allow watch1") }
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse("revoke 0") }
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"allow","watch":3}"#) == .allow(watch: 3))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"revoke"}"#) == .revoke(watch: nil))
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse(jsonLine: #"{"cmd":"allow","watch":"1"}"#) }
  }

  @Test func theConsoleSaysWhichWatchesChanged() async throws {
    let phone = try Self.phone(.ask)
    let console = PhoneConsole(phone: phone)
    let unknown = try #require(await console.run(line: "allow 4"))
    #expect(
      !unknown.ok && unknown.lines == ["no watch 4 is connected; the phone's events name them (watch 1 connected ...)"])
    let watch = try await Subscribed(phone)
    let allowed = try #require(await console.run(line: "allow"))
    #expect(allowed.lines == ["watch 1 may receive notifications"])
    let again = try #require(await console.run(line: "allow 1"))
    #expect(again.lines == ["nothing to allow: watch 1 may receive notifications"])
    let revoked = try #require(await console.run(jsonLine: #"{"cmd":"revoke","watch":1}"#))
    #expect(revoked.json.description == #"{"ok":true,"cmd":"revoke","watches":[1]}"#)
    await watch.accessory.close()
  }
}
