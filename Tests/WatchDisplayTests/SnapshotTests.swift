import ANCS
import Testing

@testable import Watch
@testable import WatchDisplay

/// The face's screens as text, compared with Tests/WatchDisplayTests/Snapshots/*.txt.
@Suite struct SnapshotTests {
  let now = Fixture.now
  let five = Fixture.state([Fixture.maya, Fixture.mail, Fixture.dinner, Fixture.news, Fixture.kenta])

  @Test func list() {
    var settings = FaceSettings()
    settings.muted = [.news]
    var ui = Fixture.ui(five, settings: settings)
    ui.seen = [Fixture.mail.uid]
    _ = ui.handle(.down, state: five, now: now)
    let screen = FaceModel.screen(five, ui, now: now)
    assertSnapshot(screen, named: "list")
    // The cursor is on the second entry (News), in reverse video across the case.
    let row = screen.rows[6]
    #expect(screen.line(6).contains("Daily Planet"))
    #expect(row.filter { $0.style.reverse }.count == 44)
  }

  @Test func detail() {
    var ui = Fixture.ui(five)
    _ = ui.handle(.bottom, state: five, now: now)
    _ = ui.handle(.up, state: five, now: now)
    _ = ui.handle(.open, state: five, now: now)
    _ = ui.handle(.down, state: five, now: now)
    _ = ui.handle(.down, state: five, now: now)
    #expect(ui.page == .detail(Fixture.mail.uid))
    assertSnapshot(FaceModel.screen(five, ui, now: now), named: "detail")
  }

  @Test func detailAtTheTop() {
    var ui = Fixture.ui(five)
    ui.page = .detail(Fixture.mail.uid)
    assertSnapshot(FaceModel.screen(five, ui, now: now), named: "detail-top")
  }

  @Test func nowPlaying() {
    var state = five
    state.nowPlaying = Fixture.music()
    var ui = Fixture.ui(state)
    _ = ui.handle(.nowPlaying, state: state, now: now)
    #expect(ui.page == .nowPlaying)
    let screen = FaceModel.screen(state, ui, now: now)
    assertSnapshot(screen, named: "now-playing")
    // The bar moves by itself: a minute later, the same value says 2:20.
    let later = FaceModel.screen(state, ui, now: now + .seconds(60))
    #expect(later.text.contains("2:20") && !later.text.contains("1:20"))
    #expect(later.text.filter { $0 == "━" }.count > screen.text.filter { $0 == "━" }.count)
    // Paused, it stays.
    state.nowPlaying = Fixture.music(playing: false)
    let paused = FaceModel.screen(state, ui, now: now + .seconds(60))
    #expect(paused.text.contains("1:00") && paused.text.contains("Paused"))
    // The status line shows a note while music plays, on every page.
    state.nowPlaying = Fixture.music()
    #expect(FaceModel.screen(state, Fixture.ui(state), now: now).line(2).contains("♪"))
  }

  @Test func nowPlayingWithNothingAndInASCII() {
    var state = five
    var ui = Fixture.ui(state)
    _ = ui.handle(.nowPlaying, state: state, now: now)
    assertSnapshot(FaceModel.screen(state, ui, now: now), named: "now-playing-none")
    state.nowPlaying = Fixture.music(title: "A title long enough to need two lines on the watch, and more")
    var ascii = Fixture.ui(state, size: Size(width: 34, height: 12), charset: .ascii)
    _ = ascii.handle(.nowPlaying, state: state, now: now)
    assertSnapshot(FaceModel.screen(state, ascii, now: now), named: "now-playing-small-ascii")
  }

  @Test func call() {
    let state = Fixture.state([Fixture.maya, Fixture.call])
    assertSnapshot(FaceModel.screen(state, Fixture.ui(state), now: now), named: "call")
  }

  @Test func empty() {
    let state = Fixture.state([])
    assertSnapshot(FaceModel.screen(state, Fixture.ui(state), now: now), named: "empty")
  }

  @Test func disconnected() {
    var ui = Fixture.ui(five)
    var state = five
    state.link = .reconnecting(attempt: 2, retryIn: .seconds(4), reason: "link closed")
    ui.sync(state, now: now - .milliseconds(1500))
    assertSnapshot(FaceModel.screen(state, ui, now: now), named: "disconnected")
  }

  /// The phone does not share its notifications (iOS asks its user first): the face says
  /// so instead of the list, and counts what it keeps.
  @Test func notShared() {
    var state = Fixture.state([Fixture.maya])
    state.sharingAllowed = false
    assertSnapshot(FaceModel.screen(state, Fixture.ui(state), now: now), named: "not-shared")
  }

  @Test func waitingForThePhone() {
    var state = WatchState()
    state.link = .connecting
    let ui = FaceUI(size: Size(width: 80, height: 24))
    assertSnapshot(FaceModel.screen(state, ui, now: now), named: "waiting")
  }

  @Test func tinyTerminal() {
    let ui = Fixture.ui(five, size: Size(width: 30, height: 10))
    let screen = FaceModel.screen(five, ui, now: now)
    assertSnapshot(screen, named: "tiny")
    #expect(screen.text.split(separator: "\n").filter { !$0.isEmpty } == ["Too small: 30x10, needs 34x12"])
  }

  @Test func smallestFace() {
    let ui = Fixture.ui(five, size: FaceLayout.minimum)
    assertSnapshot(FaceModel.screen(five, ui, now: now), named: "smallest")
  }

  @Test func wideCharacters() {
    let state = Fixture.state([
      Fixture.notification(
        11, .entertainment, app: "com.example.cinema", name: "Cinéma Lumière",
        title: "京都の旅館「花屋」で会いましょう、楽しみにしてます", message: "🎬🍿 ce\u{301}le\u{300}bre"),
      Fixture.notification(
        12, app: "com.example.family", name: "家族 👨‍👩‍👧", title: "Family 👨‍👩‍👧‍👦 dinner ❤️ 🇫🇷",
        message: "Tab\there, bell\u{7} and a new line\nhere"),
      Fixture.notification(13, name: "Ａｐｐ", title: "ｗｉｄｅ ｌｅｔｔｅｒｓ ａｌｌ ｔｈｅ ｗａｙ ａｃｒｏｓｓ"),
    ])
    var ui = Fixture.ui(state, size: Size(width: 41, height: 14))
    assertSnapshot(FaceModel.screen(state, ui, now: now), named: "wide-list")
    _ = ui.handle(.bottom, state: state, now: now)
    _ = ui.handle(.open, state: state, now: now)
    assertSnapshot(FaceModel.screen(state, ui, now: now), named: "wide-detail")
  }

  @Test func help() {
    var settings = FaceSettings()
    settings.muted = [.news, .social]
    settings.quietHours = QuietHours(start: 22 * 60, end: 7 * 60)
    var ui = Fixture.ui(five, settings: settings)
    _ = ui.handle(.help, state: five, now: now)
    assertSnapshot(FaceModel.screen(five, ui, now: now), named: "help")
  }

  @Test func toastForANewImportantNotification() {
    var state = five
    var ui = Fixture.ui(state)
    let urgent = Fixture.notification(
      20, .schedule, app: "com.apple.mobilecal", name: "Calendar", title: "Leave now for Chez Anna",
      flags: .important, age: .zero)
    state.notifications.append(urgent)
    let effects = ui.observe(.added(urgent), state: state, now: now)
    #expect(effects == [.alert(.bell)])
    assertSnapshot(FaceModel.screen(state, ui, now: now), named: "toast")
  }

  @Test func asciiWhereTheLocaleIsNotUTF8() {
    var ui = Fixture.ui(five, charset: .ascii)
    assertSnapshot(FaceModel.screen(five, ui, now: now), named: "ascii-list")
    ui.page = .detail(Fixture.mail.uid)
    let screen = FaceModel.screen(five, ui, now: now)
    assertSnapshot(screen, named: "ascii-detail")
    #expect(screen.text.unicodeScalars.allSatisfy { $0.isASCII })
  }
}
