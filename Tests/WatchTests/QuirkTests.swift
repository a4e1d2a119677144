import ANCS
import ATT
import Links
import Phone
import Runtime
import TestSupport
import Testing
import Watch

extension Rig {
  /// Reads events until the watch holds exactly the phone's notifications, each fetched
  /// with its title (compared by UID and title).
  func synced() async throws {
    func matches() async -> Bool {
      let want = Set(await phone.notifications.map { "\($0.uid) \($0.title)" })
      let listed = await watch.state.notifications
      let have = Set(listed.filter(\.fetched).map { "\($0.uid) \($0.title)" })
      return want == have && listed.count == want.count
    }
    while await !matches() {
      guard await next() != nil else {
        Issue.record("the watch stopped before it matched the phone")
        return
      }
    }
  }

  /// Waits until the engine has nothing left to do: everything fetched.
  func settle() async throws { try await synced() }
}

// Two minutes: under ThreadSanitizer with the whole suite beside it, flood=300 (300 fetches)
// has taken 59 s and once over 60 s while trivial tests waited 18-27 s for a thread; alone
// it takes under a second. The limit catches a hang, not slowness.
@Suite(.timeLimit(scaledMinutes(2))) struct QuirkTests {
  /// Quirks that change what the wire carries but need no time to pass: the watch ends with
  /// every notification the phone has, complete.
  @Test(arguments: [
    "preexisting-on-new", "reverse-tuples", "omit-tuple", "empty-packet", "ellipsis", "chunk20", "retract-uid",
    "flood=300", "reserved-flags", "omit-tuple=6", "omit-tuple=7",
  ])
  func watchKeepsEveryNotification(_ quirk: String) async throws {
    let rig = try Rig(quirks: [quirk])
    await rig.phone.post(chat("before", message: String(repeating: "long message ", count: 40)))
    try await rig.connected()
    for index in 0..<6 {
      await rig.phone.post(
        chat("n\(index)", message: "message \(index) ✓ " + String(repeating: "é", count: index * 30)))
    }
    try await rig.synced()
    for notification in await rig.watch.state.notifications {
      let phone = try #require(await rig.phone.notifications.first { $0.uid == notification.uid })
      #expect(notification.message == phone.message, "\(quirk): message of \(notification.title)")
      #expect(notification.appName == "Chat" || phone.appIdentifier != "com.example.chat")
    }
    await rig.stop()
  }

  /// Issue #13 (1), as it was seen: with `chunk20` a 20-byte chunk of a mail ends on the
  /// tuple boundary before MessageSize; the watch must wait for it, and report nothing.
  /// Titles of 1 to 20 bytes put that boundary at every offset in a chunk.
  @Test func chunk20MailArrivesWholeWithoutErrors() async throws {
    let rig = try Rig(quirks: ["chunk20"])
    try await rig.connected()
    let text =
      "A long message with accents é and 日本語 and emoji 🚄 that spans several chunks of twenty bytes each, "
      + "to test reassembly"
    for length in 1...20 {
      let mail = PhoneNotification(
        appIdentifier: "com.apple.mobilemail", category: .email, title: String(repeating: "Z", count: length),
        message: text, date: "20261201T201354")
      await rig.phone.post(mail)
      let got = try await rig.added(mail.title)
      #expect(got.message == text)
      #expect(got.messageSize == text.utf8.count, "title of \(length) bytes")
    }
    let errors = rig.history.compactMap { event -> String? in
      if case .error(let message) = event { return message } else { return nil }
    }
    #expect(errors.isEmpty, "\(errors)")
    await rig.stop()
  }

  @Test func ellipsisWhenTheWatchAsksForLess() async throws {
    var options = WatchOptions()
    options.messageMaximum = 20
    let rig = try Rig(quirks: ["ellipsis"], options: options)
    try await rig.connected()
    await rig.phone.post(chat("cut", message: "A message that is much longer than twenty bytes"))
    let got = try await rig.added("cut")
    #expect(got.message == "A message that is…")
    #expect(got.message.utf8.count <= 20)
    #expect(got.messageSize == "A message that is much longer than twenty bytes".utf8.count)
    await rig.stop()
  }

  @Test func removalsSurviveReversedAndChunkedAnswers() async throws {
    let rig = try Rig(quirks: ["reverse-tuples", "chunk20", "empty-packet"])
    try await rig.connected()
    var uids: [UInt32] = []
    for index in 0..<5 { uids.append(await rig.phone.post(chat("r\(index)")).uid) }
    await rig.phone.remove(uids[1])
    await rig.phone.remove(uids[3])
    try await rig.synced()
    #expect(await rig.watch.state.notifications.map(\.title) == ["r0", "r2", "r4"])
    await rig.stop()
  }

  /// A session that ran is followed at once by the next try (a watch advertises again as
  /// soon as its phone goes); only a link that never got that far waits the back-off. The
  /// clock never moves here: a wait of the 60 s delay would never end.
  @Test func aLinkThatRanIsTriedAgainAtOnce() async throws {
    var options = WatchOptions()
    options.reconnectDelay = .seconds(60)
    let clock = ManualClock()
    let phone = try Phone(quirks: Quirks(), wallClock: FixedWallClock(seconds: 1_796_040_000))
    let watch = WatchEngine(options: options, clock: clock) {
      let (central, peripheral) = MemoryLink.pair()
      Task { await phone.serve(central) }
      return peripheral
    }
    var events = watch.events().makeAsyncIterator()
    let running = Task { await watch.run() }
    var connections = 0
    while connections < 2, let event = await events.next(isolation: nil) {
      if case .connected = event {
        connections += 1
        if connections == 1 { phone.disconnectAll() }
      }
    }
    #expect(connections == 2)
    #expect(clock.now == .zero)
    watch.stop()
    await running.value
  }

  /// The phone silently drops the subscriptions; after livenessInterval of silence the
  /// watch checks, finds its CCCD cleared, subscribes again and catches up.
  @Test func droppedSubscriptionsAreDetected() async throws {
    let clock = ManualClock()
    var q = Quirks()
    // Answers 1 and 2: "one" and the app name of Chat; 3: "two". Then silence.
    try q.enable("drop-subscriptions=3")
    let phone = try Phone(quirks: q, wallClock: FixedWallClock(seconds: 1_796_040_000))
    let rig = Rig(phone: phone, clock: clock)
    try await rig.ready()
    await phone.post(chat("one"))
    await phone.post(chat("two"))
    try await rig.synced()
    await phone.post(chat("lost"))  // not delivered: the subscriptions are gone
    #expect(await rig.watch.state.notification(3) == nil)
    clock.advance(by: .seconds(31))
    try await rig.until("subscribed again") { event in
      if case .error(let message) = event { return message.contains("dropped the subscriptions") }
      return false
    }
    try await rig.synced()
    #expect(await rig.watch.state.notifications.map(\.title).sorted() == ["lost", "one", "two"])
    await rig.stop()
  }

  /// A phone with `quirk` (Chat registered) and a watch on a clock that moves only when
  /// told, the watch ready.
  static func manualRig(quirk: String) async throws -> (Phone, Rig, ManualClock) {
    let clock = ManualClock()
    var q = Quirks()
    try q.enable(quirk)
    let phone = try Phone(quirks: q, wallClock: FixedWallClock(seconds: 1_796_040_000))
    await phone.register(app: "com.example.chat", name: "Chat")
    let rig = Rig(phone: phone, clock: clock)
    try await rig.ready()
    return (phone, rig, clock)
  }

  /// Moves the clock a second at a time, each move one tick of the watch, until the watch
  /// reports an error that contains `text`.
  static func tick(_ rig: Rig, _ clock: ManualClock, untilAnErrorSays text: String) async throws {
    let advancing = Task {
      while !Task.isCancelled {
        clock.advance(by: .seconds(1))
        await Task.yield()
      }
    }
    defer { advancing.cancel() }
    try await rig.until(text) { event in
      if case .error(let message) = event { return message.contains(text) }
      return false
    }
  }

  /// Reads the phone's events until one matches.
  static func until(_ events: inout EventStream<PhoneEvent>.Iterator, _ match: (PhoneEvent) -> Bool) async {
    while let event = await events.next(isolation: nil), !match(event) {}
  }

  /// Issue #14 (5): a Data Source answer that never comes (coredevices/PebbleOS commit
  /// f601556cc) must not wedge the watch: it gives up after its command timeout, lists
  /// that notification without text, and fetches the others.
  @Test func aLostAnswerDoesNotWedgeTheWatch() async throws {
    // Commands 1 and 2: "first" and Chat's name; 3: "lost", whose answer never comes.
    let (phone, rig, clock) = try await Self.manualRig(quirk: "lose-answer=3")
    var phoneEvents = phone.events().makeAsyncIterator()
    await phone.post(chat("first"))
    _ = try await rig.added("first")
    await phone.post(chat("lost"))
    await phone.post(chat("after"))
    // The clock moves once the fetch of "lost" has been taken (and its answer dropped), a
    // second at a time until the watch gives up: its wait starts when it has read the Write
    // Response, which no event shows.
    await Self.until(&phoneEvents) { if case .quirk(let text) = $0 { text.hasPrefix("lose-answer") } else { false } }
    try await Self.tick(rig, clock, untilAnErrorSays: "not answered within")
    _ = try await rig.added("after")
    let listed = await rig.watch.state.notifications
    let second = await phone.notifications[1].uid
    let lost = try #require(listed.first { $0.uid == second })
    #expect(!lost.fetched)
    await rig.stop()
  }

  /// Issue #14 (5): the user revokes sharing while the watch is connected. The phone goes
  /// silent; the watch's liveness check finds it still subscribed, asks the Control Point,
  /// is refused (Write Not Permitted) and says so; allowed again, it starts a new session.
  @Test func sharingRevokedWhileConnected() async throws {
    let (phone, rig, clock) = try await Self.manualRig(quirk: "revoke-sharing=3")
    var phoneEvents = phone.events().makeAsyncIterator()
    await phone.post(chat("one"))
    await phone.post(chat("two"))
    try await rig.synced()
    // Answers 1-3: "one", Chat's name, "two"; then the user revokes.
    await Self.until(&phoneEvents) { $0 == .sharingChanged(session: 1, allowed: false) }
    await phone.post(chat("unseen"))
    clock.advance(by: .seconds(31))
    try await rig.until("not shared") { $0 == .sharing(allowed: false) }
    #expect(await rig.watch.state.notification(3) == nil)
    await phone.allowSharing()
    try await rig.until("shared again") { $0 == .sharing(allowed: true) }
    try await rig.synced()
    #expect(await rig.watch.state.notifications.map(\.title).sorted() == ["one", "two", "unseen"])
    await rig.stop()
  }

  /// Issue #14 (5): the Notification Source goes silent while its CCCD still reads enabled
  /// and the Control Point still answers (coredevices/PebbleOS#1348). The liveness check
  /// finds nothing wrong; after 6 hours without an event the watch writes its CCCDs again,
  /// which brings the phone back, and it catches up.
  @Test func aSilentNotificationSourceIsRevivedByARewrite() async throws {
    // Answers 1-3: "one", Chat's name, "two"; then silence.
    let (phone, rig, clock) = try await Self.manualRig(quirk: "silent-source=3")
    var phoneEvents = phone.events().makeAsyncIterator()
    await phone.post(chat("one"))
    await phone.post(chat("two"))
    try await rig.synced()
    await Self.until(&phoneEvents) { if case .quirk(let text) = $0 { text.hasPrefix("silent-source") } else { false } }
    await phone.post(chat("unseen"))
    #expect(await rig.watch.state.notifications.count == 2)
    // Past the six hours, a second at a time: each move is one tick of the watch.
    clock.advance(by: .seconds(6 * 3600 - 5))
    try await Self.tick(rig, clock, untilAnErrorSays: "writing the subscriptions again")
    try await rig.synced()
    #expect(await rig.watch.state.notifications.map(\.title).sorted() == ["one", "two", "unseen"])
    #expect(rig.disconnects == 0, "revived on the same link")
    await rig.stop()
  }

  /// Issue #14 (5): a call that rings when the watch subscribes comes PreExisting under a new
  /// UID (coredevices/PebbleOS commit 25cb2ee4a). A watch that only lists old notifications
  /// still fetches it, and its answer reaches the phone under the new UID.
  @Test func aCallUnderANewUIDIsFetchedAndAnswered() async throws {
    var q = Quirks()
    try q.enable("call-new-uid")
    let phone = try Phone(quirks: q, wallClock: FixedWallClock(seconds: 1_796_040_000))
    await phone.register(app: "com.example.chat", name: "Chat")
    await phone.post(chat("old mail"))
    let ringing = await phone.post(
      PhoneNotification(
        appIdentifier: "com.apple.mobilephone", category: .incomingCall, title: "Bob", positiveAction: "Answer",
        negativeAction: "Decline"))
    var options = WatchOptions()
    options.preExisting = .listOnly
    let rig = Rig(phone: phone, options: options)
    var phoneEvents = phone.events().makeAsyncIterator()
    let call = try await rig.added("Bob")
    #expect(call.uid != ringing.uid, "the call came back under a new UID")
    #expect(await phone.notifications.contains { $0.uid == call.uid && $0.title == "Bob" })
    #expect(await rig.watch.state.notifications.first { $0.title.isEmpty }?.fetched == false, "the old mail is listed")
    rig.watch.perform(.positive, on: call.uid)
    await Self.until(&phoneEvents) { if case .action(_, let uid, _, _, _) = $0 { uid == call.uid } else { false } }
    await rig.stop()
  }

  /// A lost Removed event must not leave a call ringing: the watch re-checks calls.
  @Test func lostRemovalOfACallIsNoticed() async throws {
    let clock = ManualClock()
    var q = Quirks()
    try q.enable("lose-removed")
    let phone = try Phone(quirks: q, wallClock: FixedWallClock(seconds: 1_796_040_000))
    let rig = Rig(phone: phone, clock: clock)
    try await rig.ready()
    let call = await phone.post(
      PhoneNotification(
        appIdentifier: "com.apple.mobilephone", category: .incomingCall, title: "Bob", positiveAction: "Answer",
        negativeAction: "Decline"))
    _ = try await rig.added("Bob")
    await phone.remove(call.uid)  // the Removed event is lost
    clock.advance(by: .seconds(21))
    try await rig.removed(call.uid)
    #expect(await rig.watch.state.notifications.isEmpty)
    await rig.stop()
  }

  /// ANCS is unpublished and republished at other handles: the watch rediscovers and
  /// resubscribes, and ends with the phone's set.
  @Test func serviceChangedLeadsToRediscovery() async throws {
    let rig = try Rig(quirks: ["service-changed=2"])
    try await rig.connected()
    for index in 0..<4 { await rig.phone.post(chat("s\(index)")) }
    try await rig.synced()
    await rig.phone.post(chat("after"))
    try await rig.synced()
    #expect(await rig.watch.state.notifications.count == 5)
    #expect(rig.disconnects == 0, "rediscovered on the same link, without reconnecting")
    await rig.stop()
  }
}
