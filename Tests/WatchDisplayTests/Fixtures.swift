import AMS
import ANCS
import Foundation
import Testing

@testable import Watch
@testable import WatchDisplay

/// Notifications and states as the engine would hold them, for screens built without a
/// terminal. The engine clock reads `now`; the phone's clock read 18:30:00 at engine time 0.
enum Fixture {
  static let now: Duration = .seconds(754)
  static let phoneTime = PhoneTime(
    date: ANCSDate(year: 2026, month: 12, day: 31, hour: 18, minute: 30), receivedAt: .zero)

  static func notification(
    _ uid: UInt32, _ category: CategoryID = .social, app: String = "com.apple.MobileSMS", name: String = "Messages",
    title: String, subtitle: String = "", message: String = "", date: String = "20261231T183000",
    flags: EventFlags = [], positive: String? = nil, negative: String? = nil, age: Duration = .seconds(120)
  ) -> WatchNotification {
    var flags = flags
    if positive != nil { flags.insert(.positiveAction) }
    if negative != nil { flags.insert(.negativeAction) }
    var n = WatchNotification(uid: uid, category: category, flags: flags, receivedAt: now - age)
    n.appIdentifier = app
    n.appName = name
    n.title = title
    n.subtitle = subtitle
    n.message = message
    n.messageSize = message.utf8.count
    n.date = date
    n.positiveActionLabel = positive ?? ""
    n.negativeActionLabel = negative ?? ""
    n.fetched = true
    return n
  }

  static let maya = notification(
    1, title: "Maya", message: "Are we still on for dinner tonight? 🍜\nI'm running ten minutes late, sorry!",
    positive: "Reply", negative: "Dismiss", age: .seconds(600))
  static let mail = notification(
    2, .email, app: "com.apple.mobilemail", name: "Mail", title: "Zoë Müller", subtitle: "Kyōto in spring 🌸",
    message:
      "Hi!\n\nThe ryokan is booked: 京都の旅館「花屋」, two nights from 3 April. I found a café near Nishiki Market that serves matcha crème brûlée, so breakfast is sorted ☕️🍮\n\nCould you check the trains from Ōsaka? 新大阪 → 京都 is only 14 minutes on the Shinkansen 🚄\n\nBisous,\nZoë",
    date: "20261231T181500", positive: "Mark as Read", negative: "Trash", age: .seconds(300))
  static let dinner = notification(
    3, .schedule, app: "com.apple.mobilecal", name: "Calendar", title: "Dinner at Chez Anna",
    subtitle: "19:30 – 22:00 · Rue des Lilas 12", message: "In 30 minutes", flags: .important, age: .seconds(200))
  static let news = notification(
    4, .news, app: "com.example.dailyplanet", name: "Daily Planet", title: "Fireworks over the harbour",
    subtitle: "Live", message: "Crowds are gathering along the waterfront as the city gets ready for midnight.",
    age: .seconds(90))
  static let kenta = notification(
    5, app: "com.example.chat", name: "Chat", title: "健太 (Kenta)",
    message: "今夜のパーティー、楽しみにしてるよ！🎉 See you at eight.", positive: "Reply", age: .seconds(20))
  static let call = notification(
    6, .incomingCall, app: "com.apple.mobilephone", name: "Phone", title: "Alice Martin", message: "Incoming Call",
    date: "", positive: "Answer", negative: "Decline", age: .seconds(5))

  /// The phone's player as the watch knows it: "Tall Bird", 1:00 in when told 20 s ago,
  /// so 1:20 at `now`; the first of three tracks, repeating all.
  static func music(playing: Bool = true, title: String = "Tall Bird") -> NowPlaying {
    var music = NowPlaying()
    music.available = true
    music.commands = [.play, .pause, .togglePlayPause, .nextTrack, .previousTrack, .volumeUp, .volumeDown]
    music.values = [
      .playerName: "Music", .title: title, .artist: "Bartlebeats", .album: "Frequency", .duration: "215.0",
      .volume: "0.5", .queueIndex: "0", .queueCount: "3", .shuffleMode: "0", .repeatMode: "2",
    ]
    music.playback = PlaybackInfo(state: playing ? .playing : .paused, rate: playing ? 1 : 0, elapsed: 60)
    music.playbackAt = now - .seconds(20)
    return music
  }

  /// A connected watch holding `notifications` (oldest first).
  static func state(_ notifications: [WatchNotification], link: LinkState = .connected("memory")) -> WatchState {
    var state = WatchState()
    state.notifications = notifications
    state.link = link
    state.time = phoneTime
    state.battery = 64
    for n in notifications { state.appNames[n.appIdentifier] = n.appName }
    return state
  }

  /// A face that has seen the `added` events of the state's notifications.
  static func ui(
    _ state: WatchState, size: Size = Size(width: 80, height: 24), charset: Charset = .unicode,
    settings: FaceSettings = FaceSettings()
  ) -> FaceUI {
    var ui = FaceUI(settings: settings, size: size, charset: charset)
    _ = ui.observe(.connected(link: "memory"), state: state, now: now - .seconds(60))
    for n in state.notifications {
      // Old news: no toasts in the fixtures.
      var old = n
      old.flags.insert(.preExisting)
      _ = ui.observe(.added(old), state: state, now: now - .seconds(60))
    }
    return ui
  }
}

/// Screen snapshots as plain text in Tests/WatchDisplayTests/Snapshots. A missing snapshot
/// is written and the test fails, so a new one is looked at before it is trusted; with
/// SNAPSHOT_RECORD=1 every snapshot is rewritten.
func assertSnapshot(_ screen: Screen, named name: String, sourceLocation: SourceLocation = #_sourceLocation) {
  let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Snapshots")
  let file = directory.appendingPathComponent(name + ".txt")
  let text = screen.text + "\n"
  let record = ProcessInfo.processInfo.environment["SNAPSHOT_RECORD"] == "1"
  guard !record, let stored = try? String(contentsOf: file, encoding: .utf8) else {
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try? text.write(to: file, atomically: true, encoding: .utf8)
    if !record {
      Issue.record("new snapshot \(name).txt written; check it and run again", sourceLocation: sourceLocation)
    }
    return
  }
  if stored != text {
    Issue.record(
      "screen differs from \(name).txt\n--- stored\n\(stored)--- now\n\(text)", sourceLocation: sourceLocation)
  }
  checkGeometry(screen, sourceLocation: sourceLocation)
}

/// Every row is exactly as wide as the screen, and every wide glyph is followed by its
/// continuation cell.
func checkGeometry(_ screen: Screen, sourceLocation: SourceLocation = #_sourceLocation) {
  #expect(screen.rows.count == screen.size.height, sourceLocation: sourceLocation)
  for (y, row) in screen.rows.enumerated() {
    #expect(row.count == screen.size.width, "row \(y)", sourceLocation: sourceLocation)
    for (x, cell) in row.enumerated() {
      if cell.width == 2 {
        #expect(x + 1 < row.count && row[x + 1].isContinuation, "row \(y) column \(x)", sourceLocation: sourceLocation)
      }
      if cell.isContinuation {
        #expect(x > 0 && row[x - 1].width == 2, "row \(y) column \(x)", sourceLocation: sourceLocation)
      }
      if cell.width > 0 {
        #expect(DisplayText.width(cell.text) == cell.width, "row \(y) column \(x)", sourceLocation: sourceLocation)
      }
    }
  }
}
