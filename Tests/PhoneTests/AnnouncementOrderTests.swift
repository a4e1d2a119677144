import ANCS
import ATT
import Links
import Phone
import Runtime
import TestSupport
import Testing
import Wire

/// The phone announces its changes in the order it made them, whoever makes them and from
/// whichever task: while notifications are only posted, the CategoryCount and the UIDs an
/// accessory sees only rise; while they are only removed, the count only falls.
@Suite(.timeLimit(scaledMinutes(1))) struct AnnouncementOrderTests {
  static let count = 200

  /// The first `count` events the watch is told.
  static func told(_ watch: SharingTests.Subscribed) async throws -> [NotificationSourceEvent] {
    var events = watch.events.makeAsyncIterator()
    var seen: [NotificationSourceEvent] = []
    while seen.count < count, let bytes = await events.next() {
      seen.append(try NotificationSourceEvent(decoding: bytes))
    }
    return seen
  }

  /// Where `values` first breaks the order `inOrder` asks for; nil when it never does.
  static func firstBreak(_ values: [Int], _ inOrder: (Int, Int) -> Bool) -> String? {
    guard let index = values.indices.dropFirst().first(where: { !inOrder(values[$0 - 1], values[$0]) }) else {
      return nil
    }
    return "\(values[index - 1]) then \(values[index]) at event \(index)"
  }

  @Test func postsFromManyTasksAreAnnouncedInTheOrderMade() async throws {
    let phone = try SharingTests.phone(.allow)
    let watch = try await SharingTests.Subscribed(phone)
    await withTaskGroup(of: Void.self) { group in
      for index in 0..<Self.count { group.addTask { await phone.post(SharingTests.note("\(index)")) } }
    }
    let seen = try await Self.told(watch)
    #expect(seen.map(\.eventID) == Array(repeating: .added, count: Self.count))
    #expect(Self.firstBreak(seen.map { Int($0.categoryCount) }, <) == nil, "CategoryCount")
    #expect(Self.firstBreak(seen.map { Int($0.notificationUID) }, <) == nil, "UIDs")
  }

  @Test func removalsFromManyTasksAreAnnouncedInTheOrderMade() async throws {
    let phone = try SharingTests.phone(.allow)
    var uids: [UInt32] = []
    for index in 0..<Self.count { uids.append(await phone.post(SharingTests.note("\(index)")).uid) }
    let watch = try await SharingTests.Subscribed(phone)
    let report = try await Self.told(watch)
    #expect(report.allSatisfy { $0.eventFlags.contains(.preExisting) })
    await withTaskGroup(of: Void.self) { group in
      for uid in uids { group.addTask { await phone.remove(uid) } }
    }
    let seen = try await Self.told(watch)
    #expect(seen.map(\.eventID) == Array(repeating: .removed, count: Self.count))
    #expect(Self.firstBreak(seen.map { Int($0.categoryCount) }, >) == nil, "CategoryCount")
    #expect(seen.last?.categoryCount == 0)
  }
}

@Suite(.timeLimit(scaledMinutes(1))) struct SessionRestartTests {
  /// Events the phone decided for a session that then unsubscribed, still waiting on a slow
  /// link, reach the watch before the unsubscribe is answered, and never after the new
  /// session's report: the phone hands each to the link in the step that decided it, and
  /// the link keeps its order. The new session then begins with its pre-existing report.
  @Test func eventsDecidedBeforeAnUnsubscribeGoBeforeItNeverAfterTheNewReport() async throws {
    let phone = try SharingTests.phone(.allow)
    var phoneEvents = phone.events().makeAsyncIterator()
    let (central, peripheral) = MemoryLink.pair()
    // Notification Source notifications are held, and what the link takes after them waits
    // behind them, as on a link under flow control.
    let held = HoldingBearer(central) { pdu in
      pdu.count >= 3 && pdu[0] == 0x1B && UInt16(pdu[1]) | UInt16(pdu[2]) << 8 == SharingTests.sourceValue
    }
    let connection = ATTConnection(bearer: peripheral)
    let accessory = await Accessory(phone, central: held, peripheral: peripheral, connection: connection)
    let (events, sink) = AsyncStream<[UInt8]>.makeStream()
    // What the accessory saw, in order: "event" for each Notification Source value, and the
    // answer to its unsubscribe.
    let seen = Locked<[String]>([])
    await accessory.client.onValue(SharingTests.sourceValue) {
      seen.withLock { $0.append("event") }
      sink.yield($1.value)
    }
    _ = try await peripheral.pair(.encrypted)
    try await accessory.client.configure(cccd: SharingTests.dataCCCD, .notifications)
    try await accessory.client.configure(cccd: SharingTests.sourceCCCD, .notifications)
    // The session starts after the Write Response: a post before would be in its report.
    while let event = await phoneEvents.next(isolation: nil) {
      if case .sessionStarted = event { break }
    }

    // The first event is held in the sending; the next two wait in the link's queue behind it.
    let first = Task { await phone.post(SharingTests.note("1")) }
    while held.held < 1 { await Task.yield() }
    await phone.post(SharingTests.note("2"))
    await phone.post(SharingTests.note("3"))
    // Unsubscribed and subscribed again. A link sends in order, so the phone's answers wait
    // behind the held notification: the writes are awaited only after the release, once the
    // phone has taken the unsubscribe in.
    let rewritten = Task {
      try await accessory.client.configure(cccd: SharingTests.sourceCCCD, [])
      seen.withLock { $0.append("unsubscribed") }
      try await accessory.client.configure(cccd: SharingTests.sourceCCCD, .notifications)
    }
    while let event = await phoneEvents.next(isolation: nil) {
      if case .sessionEnded = event { break }
    }
    held.release()
    try await rewritten.value
    _ = await first.value

    var iterator = events.makeAsyncIterator()
    var told: [NotificationSourceEvent] = []
    while told.count < 6, let bytes = await iterator.next(isolation: nil) {
      told.append(try NotificationSourceEvent(decoding: bytes))
    }
    try #require(told.count == 6)
    // The three live events, in the order posted; after them only the new session's report
    // of all three.
    let live = told.prefix(3)
    let report = told.dropFirst(3)
    #expect(live.allSatisfy { !$0.eventFlags.contains(.preExisting) && $0.eventID == .added })
    #expect(live.map(\.notificationUID) == live.map(\.notificationUID).sorted())
    #expect(report.allSatisfy { $0.eventFlags.contains(.preExisting) })
    #expect(report.map(\.notificationUID) == live.map(\.notificationUID))
    // The three live events came before the unsubscribe was answered; the report after it.
    #expect(
      seen.withLock { $0 } == Array(repeating: "event", count: 3) + ["unsubscribed"]
        + Array(repeating: "event", count: 3))
    await accessory.close()
  }
}

/// The fault data-after-error echoes a refused command on the Data Source before its Error
/// Response (the rules send nothing there after an error): the accessory sees the echo first.
@Suite(.timeLimit(scaledMinutes(1))) struct RefusalEchoTests {
  @Test func theEchoGoesOutBeforeTheErrorResponse() async throws {
    let phone = try Phone(faults: .dataAfterError, settings: PhoneSettings(sharing: .allow))
    await phone.register(app: "com.example.chat", name: "Chat")
    let watch = try await SharingTests.Subscribed(phone)
    let seen = Locked<[String]>([])
    let (answered, done) = AsyncStream<Void>.makeStream()
    // Both are called on the accessory's connection, in the order the PDUs arrive.
    await watch.accessory.client.onValue(SharingTests.dataCCCD - 1) { _, event in
      seen.withLock { $0.append("Data Source \(Hex.encode(event.value))") }
    }
    await watch.accessory.connection.request(
      .writeRequest(WriteRequest(handle: SharingTests.controlPoint, value: SharingTests.fetch77))
    ) { _, result in
      let answer: String
      switch result {
      case .success(let pdu): answer = "answer \(pdu.opcode)"
      case .failure(let error): answer = "refused with \(error.errorCode?.rawValue ?? 0)"
      }
      seen.withLock { $0.append(answer) }
      done.yield()
    }
    for await _ in answered { break }
    #expect(seen.withLock { $0 } == ["Data Source \(Hex.encode(SharingTests.fetch77))", "refused with 162"])
    await watch.accessory.close()
  }
}

@Suite(.timeLimit(scaledMinutes(1))) struct AnswerStepTests {
  static func writeRequest(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] {
    [0x12, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
  }

  /// Waits for the phone's next Write Response, skipping its own requests (the peer answers
  /// none of them) and its notifications.
  static func writeResponse(on link: MemoryBearer) async throws {
    while let pdu = try await link.receive() {
      if pdu.first == 0x13 { return }
      try #require(pdu.first != 0x01, "the phone refused the write: \(Hex.encode(pdu))")
    }
    Issue.record("the link closed before the Write Response")
  }

  /// A Control Point command is answered in one step: the Write Response and every Data
  /// Source fragment of the answer after it are put on the link by the same step of the
  /// phone's, so nothing the phone does meanwhile can come between them.
  @Test func theWholeAnswerIsOnTheLinkWithItsWriteResponse() async throws {
    let phone = try SharingTests.phone(.allow)
    let posted = await phone.post(SharingTests.note(String(repeating: "A long title. ", count: 14)))
    let (central, peripheral) = MemoryLink.pair(initialLevel: .encrypted)
    let serving = Task { await phone.serve(central) }
    try peripheral.send(Self.writeRequest(SharingTests.dataCCCD, [0x01, 0x00]))
    try await Self.writeResponse(on: peripheral)
    // Get Notification Attributes: the Title, up to 200 bytes.
    let uid = posted.uid
    let command: [UInt8] =
      [0x00, UInt8(uid & 0xFF), UInt8(uid >> 8 & 0xFF), UInt8(uid >> 16 & 0xFF), UInt8(uid >> 24), 0x01, 200, 0]
    try peripheral.send(Self.writeRequest(SharingTests.controlPoint, command))
    try await Self.writeResponse(on: peripheral)
    // Once the step that put the Write Response on the link is over (the phone's executor
    // is serial: this runs after it), the whole answer is there too.
    _ = await phone.connectionCount
    // At ATT_MTU 23 the 204-byte answer is 11 notifications of up to 20 bytes.
    let dataValue = SharingTests.dataCCCD - 1
    var answer: [UInt8] = []
    while let pdu = peripheral.receiveIfReady() {
      guard pdu.count >= 3, pdu[0] == 0x1B, UInt16(pdu[1]) | UInt16(pdu[2]) << 8 == dataValue else { continue }
      answer += pdu[3...]
    }
    #expect(answer.count == 8 + 196, "the command's header, the Title's and its 196 bytes")
    peripheral.close()
    await serving.value
  }
}
