import AMS
import ANCS
import ATT
import Testing
import Wire

@testable import Watch
@testable import WatchDisplay

/// Keys to intents, and what intents and watch events do to the face, without a terminal.
@Suite struct FaceUITests {
  let now = Fixture.now
  let five = Fixture.state([Fixture.maya, Fixture.mail, Fixture.dinner, Fixture.news, Fixture.kenta])

  @Test func keyMap() {
    let table: [(Key, FaceIntent?)] = [
      (.up, .up), (.character("k"), .up), (.down, .down), (.character("j"), .down), (.enter, .open),
      (.character("\r"), .open), (.escape, .back), (.backspace, .back), (.character("a"), .positive),
      (.character("d"), .negative), (.character("m"), .mute), (.character("?"), .help), (.character("q"), .quit),
      (.pageDown, .pageDown), (.character(" "), .pageDown), (.pageUp, .pageUp), (.home, .top), (.end, .bottom),
      (.character("p"), .nowPlaying), (.character(">"), .nextTrack), (.character("."), .nextTrack),
      (.character("<"), .previousTrack), (.character(","), .previousTrack), (.character("+"), .volumeUp),
      (.character("="), .volumeUp), (.character("-"), .volumeDown),
      (.character("x"), nil), (.character("é"), nil), (.resize, nil), (.tab, nil),
    ]
    for (key, intent) in table { #expect(KeyMap.intent(for: key) == intent, "\(key)") }
  }

  /// Bond trouble reaches the wearer: a key the watch lost says what to do on the phone;
  /// a routine encryption with the bond says nothing.
  @Test func bondTroubleIsToldToTheWearer() {
    var ui = Fixture.ui(five)
    _ = ui.observe(.bond(.encrypted(peer: "C0:00:00:00:00:01")), state: five, now: now)
    #expect(ui.toast == nil)
    _ = ui.observe(.bond(.keyMissing(peer: "C0:00:00:00:00:01")), state: five, now: now)
    #expect(ui.toast?.kind == .error)
    #expect(ui.toast?.text.contains("forget the watch in the phone's Bluetooth settings") == true)
    _ = ui.observe(.bond(.bonded(peer: "C0:00:00:00:00:01", level: .encrypted, again: true)), state: five, now: now)
    #expect(ui.toast?.text == "Paired again with the phone")
  }

  /// Issue #16 (3): a pairing that asks the wearer takes the face until it is answered: a
  /// passkey typed with the digit keys (Backspace erases, Enter sends six digits), a
  /// compared number answered y or n, a shown passkey large and centred.
  @Test func aPairingAsksTheWearerOnTheFace() throws {
    let peer = "C0:00:00:00:00:01"
    var ui = Fixture.ui(five)
    _ = ui.observe(.bond(.pairing(peer: peer, .enterPasskey)), state: five, now: now)
    #expect(ui.pairing == .enter(typed: ""))
    for digit in "0123" { #expect(ui.pairingKey(.character(digit), now: now) == []) }
    #expect(ui.pairingKey(.backspace, now: now) == [])
    #expect(ui.pairing == .enter(typed: "012"))
    var text = FaceModel.screen(five, ui, now: now).text
    #expect(text.contains("Type the passkey the phone shows") && text.contains("0 1 2 _ _ _"), "\(text)")
    // Five digits are not a passkey; letters are not digits; the seventh digit is dropped.
    #expect(ui.pairingKey(.enter, now: now) == [])
    #expect(ui.toast?.text == "The passkey has six digits")
    for key in "x4567" { _ = ui.pairingKey(.character(key), now: now) }
    #expect(ui.pairing == .enter(typed: "012456"))
    #expect(ui.pairingKey(.enter, now: now) == [.answerPairing(.passkey(12456))])
    #expect(ui.pairing == nil)

    _ = ui.observe(.bond(.pairing(peer: peer, .compare(42))), state: five, now: now)
    text = FaceModel.screen(five, ui, now: now).text
    #expect(text.contains("Does the phone show this number?") && text.contains("y yes"), "\(text)")
    #expect(ui.pairingKey(.character("n"), now: now) == [.answerPairing(.confirm(false))])
    _ = ui.observe(.bond(.pairing(peer: peer, .compare(42))), state: five, now: now)
    #expect(ui.pairingKey(.character("y"), now: now) == [.answerPairing(.confirm(true))])

    // A shown passkey: large digits; other keys work as ever; the pairing's end clears it.
    _ = ui.observe(.bond(.pairing(peer: peer, .showPasskey(123_456))), state: five, now: now)
    text = FaceModel.screen(five, ui, now: now).text
    #expect(text.contains("Type this passkey on the phone") && text.contains("Type 123456 on the phone"), "\(text)")
    #expect(text.split(separator: "\n").filter { $0.contains("█") }.count >= 5, "five rows of large digits:\n\(text)")
    #expect(ui.pairingKey(.down, now: now) == nil)
    _ = ui.observe(.bond(.bonded(peer: peer, level: .authenticated, again: false)), state: five, now: now)
    #expect(ui.pairing == nil)
    #expect(ui.pairingKey(.character("1"), now: now) == nil)

    // Esc puts a question away; the link's end does too.
    _ = ui.observe(.bond(.pairing(peer: peer, .enterPasskey)), state: five, now: now)
    #expect(ui.pairingKey(.escape, now: now) == [] && ui.pairing == nil)
    _ = ui.observe(.bond(.pairing(peer: peer, .compare(7))), state: five, now: now)
    _ = ui.observe(.disconnected(reason: "the phone left"), state: five, now: now)
    #expect(ui.pairing == nil)
  }

  @Test func theListIsNewestFirstAndTheCursorMoves() {
    var ui = Fixture.ui(five)
    #expect(ui.visible(five).map(\.uid) == [5, 4, 3, 2, 1])
    #expect(ui.selected == 5)
    _ = ui.handle(.down, state: five, now: now)
    _ = ui.handle(.down, state: five, now: now)
    #expect(ui.selected == 3)
    _ = ui.handle(.bottom, state: five, now: now)
    _ = ui.handle(.down, state: five, now: now)
    #expect(ui.selected == 1)
    _ = ui.handle(.top, state: five, now: now)
    _ = ui.handle(.up, state: five, now: now)
    #expect(ui.selected == 5)
  }

  @Test func openingMarksReadAndBackReturnsToTheSameEntry() {
    var ui = Fixture.ui(five)
    _ = ui.handle(.down, state: five, now: now)
    #expect(ui.unreadCount(five) == 5)
    _ = ui.handle(.open, state: five, now: now)
    #expect(ui.page == .detail(4))
    #expect(ui.unreadCount(five) == 4)
    _ = ui.handle(.back, state: five, now: now)
    #expect(ui.page == .list && ui.selected == 4)
  }

  @Test func actionsGoToThePhoneForTheNotificationUnderTheCursor() {
    var ui = Fixture.ui(five)
    #expect(ui.handle(.positive, state: five, now: now) == [.perform(.positive, uid: 5, session: 0)])
    #expect(ui.toast?.text == "Reply…")
    // Kenta offers no negative action: nothing is sent, the face says so.
    #expect(ui.handle(.negative, state: five, now: now) == [])
    #expect(ui.toast?.text == "Chat offers no negative action")
    _ = ui.handle(.bottom, state: five, now: now)
    _ = ui.handle(.open, state: five, now: now)
    #expect(ui.handle(.negative, state: five, now: now) == [.perform(.negative, uid: 1, session: 0)])
    // The phone confirms: the toast says which.
    _ = ui.observe(.action(uid: 1, action: .negative), state: five, now: now)
    #expect(ui.toast?.text == "✓ Dismiss")
    // The phone removes what was acted on: back to the list, the confirmation stays.
    var state = five
    state.notifications.removeAll { $0.uid == 1 }
    _ = ui.observe(.removed(uid: 1), state: state, now: now)
    #expect(ui.page == .list)
    #expect(ui.toast?.text == "✓ Dismiss")
  }

  @Test func aNotificationRemovedOnThePhoneLeavesTheDetailView() {
    var ui = Fixture.ui(five)
    _ = ui.handle(.down, state: five, now: now)
    _ = ui.handle(.open, state: five, now: now)
    var state = five
    state.notifications.removeAll { $0.uid == 4 }
    _ = ui.observe(.removed(uid: 4), state: state, now: now)
    #expect(ui.page == .list)
    #expect(ui.toast?.text == "Removed on the phone")
    // The cursor goes to the entry that took its place.
    #expect(ui.selected == 3)
    #expect(!FaceModel.screen(state, ui, now: now).text.contains("Daily Planet"))
  }

  @Test func theStateAloneIsEnoughToLeaveADetailViewWhoseNotificationIsGone() {
    var ui = Fixture.ui(five)
    _ = ui.handle(.open, state: five, now: now)
    var state = five
    state.notifications.removeLast()
    // The removed event has not arrived yet: the screen already shows the list.
    let screen = FaceModel.screen(state, ui, now: now)
    #expect(!screen.text.contains("Kenta"))
    #expect(screen.text.contains("Daily Planet"))
  }

  @Test func anIncomingCallTakesOverRingsAndCanBeAnsweredOrSentAway() {
    var state = five
    var ui = Fixture.ui(state)
    state.notifications.append(Fixture.call)
    #expect(ui.observe(.added(Fixture.call), state: state, now: now) == [.alert(.bell)])
    #expect(ui.activeCall(state)?.uid == 6)
    #expect(FaceModel.screen(state, ui, now: now).text.contains("Incoming call"))
    // Keys act on the call, whatever the cursor is on.
    _ = ui.handle(.down, state: state, now: now)
    #expect(ui.handle(.positive, state: state, now: now) == [.perform(.positive, uid: 6, session: 0)])
    #expect(ui.handle(.negative, state: state, now: now) == [.perform(.negative, uid: 6, session: 0)])
    _ = ui.handle(.back, state: state, now: now)
    #expect(ui.activeCall(state) == nil)
    #expect(FaceModel.screen(state, ui, now: now).text.contains("Alice Martin"))
  }

  @Test func aCallHungUpOnThePhoneLeavesTheScreen() {
    var state = five
    var ui = Fixture.ui(state)
    state.notifications.append(Fixture.call)
    _ = ui.observe(.added(Fixture.call), state: state, now: now)
    state.notifications.removeLast()
    _ = ui.observe(.removed(uid: 6), state: state, now: now)
    let text = FaceModel.screen(state, ui, now: now).text
    #expect(!text.contains("Incoming call") && !text.contains("Alice"))
  }

  @Test func newNotificationsToastAndImportantOnesRing() {
    var state = Fixture.state([])
    var ui = Fixture.ui(state)
    state.notifications.append(Fixture.maya)
    #expect(ui.observe(.added(Fixture.maya), state: state, now: now) == [])
    #expect(ui.toast?.text == "Messages: Maya")
    #expect(ui.toast?.kind == .info)
    state.notifications.append(Fixture.dinner)
    #expect(ui.observe(.added(Fixture.dinner), state: state, now: now) == [.alert(.bell)])
    #expect(ui.toast?.kind == .important)
    // The toast goes after a while.
    ui.sync(state, now: now + ui.settings.messageTime)
    #expect(ui.toast == nil)
  }

  /// `message-seconds` in the face's settings: a message stays that long, not 3 s.
  @Test func messagesStayAsLongAsTheSettingsSay() {
    var settings = FaceSettings()
    settings.messageTime = .seconds(10)
    var state = Fixture.state([])
    var ui = Fixture.ui(state, settings: settings)
    state.notifications.append(Fixture.maya)
    _ = ui.observe(.added(Fixture.maya), state: state, now: now)
    ui.sync(state, now: now + .seconds(9))
    #expect(ui.toast?.text == "Messages: Maya")
    ui.sync(state, now: now + .seconds(10))
    #expect(ui.toast == nil)
  }

  @Test func silentPreExistingAndMutedNotificationsDoNotRing() {
    var settings = FaceSettings()
    settings.muted = [.schedule]
    var state = Fixture.state([])
    var ui = Fixture.ui(state, settings: settings)
    state.notifications.append(Fixture.dinner)
    #expect(ui.observe(.added(Fixture.dinner), state: state, now: now) == [])
    #expect(ui.toast == nil)
    // Muted notifications are still listed.
    #expect(ui.visible(state).map(\.uid) == [3])
    var silent = Fixture.notification(30, title: "Shh", flags: [.important, .silent])
    state.notifications.append(silent)
    #expect(ui.observe(.added(silent), state: state, now: now) == [])
    #expect(ui.toast?.text == "Messages: Shh")
    silent.uid = 31
    silent.flags = [.important, .preExisting]
    state.notifications.append(silent)
    ui.toast = nil
    #expect(ui.observe(.added(silent), state: state, now: now) == [])
    #expect(ui.toast == nil)
  }

  @Test func quietHoursFollowThePhonesClock() {
    var settings = FaceSettings()
    settings.quietHours = try! QuietHours(parsing: "18:00-19:00")
    var state = Fixture.state([])
    var ui = Fixture.ui(state, settings: settings)
    #expect(ui.isQuiet(state, now: now))
    state.notifications.append(Fixture.dinner)
    #expect(ui.observe(.added(Fixture.dinner), state: state, now: now) == [])
    #expect(ui.toast == nil)
    #expect(FaceModel.screen(state, ui, now: now).line(2).contains("☾"))
    // An hour later (19:12 on the phone) it rings again.
    let later = now + .seconds(3600)
    #expect(!ui.isQuiet(state, now: later))
    var next = Fixture.dinner
    next.uid = 40
    state.notifications.append(next)
    #expect(ui.observe(.added(next), state: state, now: later) == [.alert(.bell)])
  }

  @Test func muteTogglesTheCategoryUnderTheCursor() {
    var ui = Fixture.ui(five)
    _ = ui.handle(.mute, state: five, now: now)
    #expect(ui.settings.muted == [.social])
    #expect(ui.toast?.text == "Social muted: listed, never rung")
    #expect(FaceModel.screen(five, ui, now: now).line(4).contains("⊘"))
    _ = ui.handle(.mute, state: five, now: now)
    #expect(ui.settings.muted.isEmpty)
    #expect(ui.toast?.text == "Social unmuted")
  }

  /// Issue #13 (12): at 80x24 the long toast does not fit for a long category name; the
  /// short one is shown whole instead of a cut sentence.
  @Test(arguments: [CategoryID.entertainment, .businessAndFinance, .healthAndFitness])
  func muteToastFitsAt80x24(category: CategoryID) {
    var note = Fixture.news
    note.category = category
    let state = Fixture.state([note])
    var ui = Fixture.ui(state)
    _ = ui.handle(.mute, state: state, now: now)
    let screen = FaceModel.screen(state, ui, now: now)
    let lines = (0..<screen.size.height).map { screen.line($0) }
    let name = Symbols.name(category)
    #expect(lines.contains { $0.contains("\(name) muted") }, "\(lines.joined(separator: "\n"))")
    #expect(!lines.contains { $0.contains("\(name) muted") && $0.contains("…") })
  }

  @Test func theCursorStaysOnItsNotificationWhenNewOnesArrive() {
    var state = five
    var ui = Fixture.ui(state)
    _ = ui.handle(.down, state: state, now: now)
    let newer = Fixture.notification(50, title: "Newer")
    state.notifications.append(newer)
    _ = ui.observe(.added(newer), state: state, now: now)
    #expect(ui.selected == 4)
    // At the top, the cursor stays at the top: on the newest.
    _ = ui.handle(.top, state: state, now: now)
    let newest = Fixture.notification(51, title: "Newest")
    state.notifications.append(newest)
    _ = ui.observe(.added(newest), state: state, now: now)
    #expect(ui.selected == 51)
  }

  @Test func onlyAnnouncedNotificationsAreListed() {
    var state = five
    var ui = Fixture.ui(state)
    // Attributes on the way: in the engine's state, not yet announced.
    var pending = WatchNotification(uid: 60, category: .email, flags: [], receivedAt: now)
    pending.fetched = false
    state.notifications.append(pending)
    #expect(ui.visible(state).count == 5)
    _ = ui.observe(.added(pending), state: state, now: now)
    #expect(ui.visible(state).count == 6)
  }

  @Test func theNowPlayingKeysSendWhatThePlayerTakes() {
    var state = five
    var ui = Fixture.ui(state)
    // No AMS on this link: nothing is sent, the wearer is told.
    #expect(ui.handle(.nextTrack, state: state, now: now).isEmpty)
    #expect(ui.toast?.text == "The phone shares no media player")
    state.nowPlaying = Fixture.music()
    #expect(ui.handle(.nextTrack, state: state, now: now) == [.media(.nextTrack)])
    #expect(ui.handle(.volumeDown, state: state, now: now) == [.media(.volumeDown)])
    // Space and Enter play or pause on the now-playing page, up and down set the volume.
    #expect(ui.handle(.pageDown, state: state, now: now).isEmpty, "the list scrolls")
    _ = ui.handle(.nowPlaying, state: state, now: now)
    #expect(ui.handle(.pageDown, state: state, now: now) == [.media(.togglePlayPause)])
    #expect(ui.handle(.up, state: state, now: now) == [.media(.volumeUp)])
    // Without the toggle, the command that fits the state.
    state.nowPlaying.commands = [.play, .pause]
    #expect(ui.handle(.open, state: state, now: now) == [.media(.pause)])
    state.nowPlaying.playback = PlaybackInfo(state: .paused, rate: 0, elapsed: 3)
    #expect(ui.handle(.open, state: state, now: now) == [.media(.play)])
    #expect(ui.handle(.previousTrack, state: state, now: now).isEmpty)
    #expect(ui.toast?.text == "Previous track: not available now")
    _ = ui.handle(.back, state: state, now: now)
    #expect(ui.page == .list)
  }

  @Test func helpOpensAndAnyKeyClosesIt() {
    var ui = Fixture.ui(five)
    _ = ui.handle(.help, state: five, now: now)
    #expect(ui.showingHelp)
    #expect(ui.handle(.positive, state: five, now: now) == [])
    #expect(!ui.showingHelp)
    _ = ui.handle(.help, state: five, now: now)
    #expect(ui.handle(.quit, state: five, now: now) == [.quit])
  }

  @Test func theMessageScrollsNoFurtherThanItsEnd() {
    var ui = Fixture.ui(five)
    ui.page = .detail(Fixture.mail.uid)
    for _ in 0..<50 { _ = ui.handle(.down, state: five, now: now) }
    let bottom = ui.detailTop
    #expect(bottom > 0)
    _ = ui.handle(.pageDown, state: five, now: now)
    #expect(ui.detailTop == bottom)
    let text = FaceModel.screen(five, ui, now: now).text
    #expect(text.contains("Zoë") && text.contains("Bisous"))
    _ = ui.handle(.top, state: five, now: now)
    #expect(ui.detailTop == 0)
  }

  /// Whatever happens, in whatever order, at whatever size: no crash, and every screen is
  /// exactly the terminal's size with wide characters whole.
  @Test func randomUseNeverBreaksTheScreen() {
    var random = SplitMix64(seed: 2026)
    let pool = [Fixture.maya, Fixture.mail, Fixture.dinner, Fixture.news, Fixture.kenta, Fixture.call]
    let intents: [FaceIntent] = [
      .up, .down, .pageUp, .pageDown, .top, .bottom, .open, .back, .positive, .negative, .mute, .help, .nowPlaying,
      .nextTrack, .previousTrack, .volumeUp, .volumeDown,
    ]
    let links: [LinkState] = [
      .connected("memory"), .connecting, .reconnecting(attempt: 3, retryIn: .seconds(2), reason: "gone"), .stopped,
    ]
    var state = Fixture.state([])
    var ui = Fixture.ui(state)
    var time = now
    for step in 0..<3000 {
      time += .milliseconds(Int(random.next() % 900))
      switch random.next() % 10 {
      case 0, 1:
        var n = pool[Int(random.next() % UInt64(pool.count))]
        n.uid = UInt32(step)
        n.receivedAt = time
        state.notifications.append(n)
        _ = ui.observe(.added(n), state: state, now: time)
      case 2:
        if let victim = state.notifications.randomElement(using: &random) {
          state.notifications.removeAll { $0.uid == victim.uid }
          _ = ui.observe(.removed(uid: victim.uid), state: state, now: time)
        }
      case 3:
        ui.size = Size(width: Int(random.next() % 130), height: Int(random.next() % 45))
      case 4:
        state.link = links[Int(random.next() % UInt64(links.count))]
        ui.charset = random.next() % 4 == 0 ? .ascii : .unicode
      default:
        _ = ui.handle(intents[Int(random.next() % UInt64(intents.count))], state: state, now: time)
      }
      let screen = FaceModel.screen(state, ui, now: time)
      #expect(screen.size == ui.size)
      if step % 50 == 0 { checkGeometry(screen) }
    }
  }
}
