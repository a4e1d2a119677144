import ANCS
import ATT
import Links
import Phone
import TestSupport
import Testing
import Watch

@Suite(.timeLimit(scaledMinutes(1))) struct EndToEndTests {
  @Test func notificationArrivesWithEveryAttribute() async throws {
    let rig = try Rig()
    try await rig.connected()
    let posted = await rig.phone.post(chat("Hello", message: "How are you? 👋"))
    let got = try await rig.added("Hello")
    #expect(got.uid == posted.uid)
    #expect(got.category == .social)
    #expect(got.flags == [.positiveAction, .negativeAction])
    #expect(got.appIdentifier == "com.example.chat")
    #expect(got.appName == "Chat")
    #expect(got.subtitle == "sub Hello")
    #expect(got.message == "How are you? 👋")
    #expect(got.messageSize == "How are you? 👋".utf8.count)
    #expect(got.date == "20261129T120000")
    #expect(got.positiveActionLabel == "Reply")
    #expect(got.negativeActionLabel == "Dismiss")
    #expect(await rig.watch.state.notifications.map(\.title) == ["Hello"])
    await rig.stop()
  }

  @Test(arguments: [23, 185, 517] as [UInt16])
  func messagesOfEverySizeArriveWhole(mtu: UInt16) async throws {
    var options = WatchOptions()
    options.mtu = mtu
    let rig = try Rig(options: options)
    try await rig.connected()
    // 0 bytes to about 3 KB, with 2-, 3- and 4-byte scalars.
    let pieces = ["a", "é", "€", "😀", "日本", "👩‍👩‍👧"]
    var sizes = [0, 1, 2, 3, 4, 19, 20, 21, 181, 182, 183, 513, 514, 1000, 3000]
    sizes.append(3072)
    for (index, size) in sizes.enumerated() {
      var text = ""
      var k = index
      while text.utf8.count < size {
        text += pieces[k % pieces.count]
        k += 1
      }
      await rig.phone.post(chat("m\(index)", message: text))
      let got = try await rig.added("m\(index)")
      #expect(got.message == text, "size \(size) at MTU \(mtu)")
      #expect(got.messageSize == text.utf8.count)
    }
    await rig.stop()
  }

  /// At ATT_MTU 23 a Get App Attributes for an identifier over 17 bytes does not fit one
  /// write: it goes as a long write, and the watch shows the app's name.
  @Test func aLongAppIdentifierIsNamedAtMTU23() async throws {
    var options = WatchOptions()
    options.mtu = 23
    let rig = try Rig(options: options)
    let app = "com.example.a-very-long-application-identifier"
    await rig.phone.register(app: app, name: "Long App")
    try await rig.connected()
    var notification = chat("Long")
    notification.appIdentifier = app
    await rig.phone.post(notification)
    let got = try await rig.added("Long")
    #expect(got.appIdentifier == app)
    #expect(got.appName == "Long App")
    let errors = rig.history.filter { if case .error = $0 { true } else { false } }
    #expect(errors.isEmpty, "\(errors)")
    await rig.stop()
  }

  @Test func removalReachesTheWatch() async throws {
    let rig = try Rig()
    try await rig.connected()
    let posted = await rig.phone.post(chat("Bye"))
    _ = try await rig.added("Bye")
    #expect(await rig.phone.remove(posted.uid))
    try await rig.removed(posted.uid)
    #expect(await rig.watch.state.notifications.isEmpty)
    await rig.stop()
  }

  @Test func actionsReachThePhone() async throws {
    let rig = try Rig()
    try await rig.connected()
    let phoneEvents = rig.phone.events()
    let call = await rig.phone.post(
      PhoneNotification(
        appIdentifier: "com.apple.mobilephone", category: .incomingCall, title: "Alice", message: "Incoming Call",
        positiveAction: "Answer", negativeAction: "Decline"))
    _ = try await rig.added("Alice")
    rig.watch.perform(.negative, on: call.uid)
    try await rig.until("action") { $0 == .action(uid: call.uid, action: .negative) }
    try await rig.removed(call.uid)
    for await event in phoneEvents {
      if case .action(_, let uid, let action, _, let outcome) = event {
        #expect(uid == call.uid && action == "negative" && outcome == "call declined")
        break
      }
    }
    #expect(await rig.phone.notifications.isEmpty)
    await rig.stop()
  }

  @Test func reconnectEndsWithExactlyThePhonesSet() async throws {
    let rig = try Rig()
    try await rig.connected()
    var uids: [UInt32] = []
    for index in 0..<5 { uids.append(await rig.phone.post(chat("n\(index)")).uid) }
    _ = try await rig.added("n4")
    // The link drops; meanwhile the phone changes: one removed, one added.
    rig.links.closeAll()
    try await rig.until("disconnected") { if case .disconnected = $0 { return true } else { return false } }
    await rig.phone.remove(uids[0])
    await rig.phone.post(chat("while away"))
    try await rig.connected()
    _ = try await rig.added("while away")
    let titles = Set(await rig.phone.notifications.map(\.title))
    // Every pre-existing notification is fetched again; wait for the last of them.
    while await Set(rig.watch.state.notifications.filter(\.fetched).map(\.title)) != titles {
      _ = await rig.next()
    }
    #expect(await Set(rig.watch.state.notifications.map(\.uid)) == Set(await rig.phone.notifications.map(\.uid)))
    await rig.stop()
  }
}
