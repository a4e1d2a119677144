import ANCS
import ATT
import Links
import Phone
import Testing
import Watch
import Wire

/// The watch engine against a phone that asks its user before sharing notifications.
@Suite struct SharingEngineTests {
  /// Not allowed: the watch finds out with its check and says so; once the user allows it,
  /// the notifications already on the phone arrive. The clock moves only when told.
  @Test func theWatchWaitsForTheUserToAllowIt() async throws {
    let clock = ManualClock()
    let phone = try Phone(settings: PhoneSettings(sharing: .ask), wallClock: FixedWallClock(seconds: 1_796_040_000))
    await phone.register(app: "com.example.chat", name: "Chat")
    await phone.post(chat("Waiting"))
    let rig = Rig(phone: phone, clock: clock)
    try await rig.ready()
    clock.advance(by: .seconds(3))
    try await rig.until("not shared") { $0 == .sharing(allowed: false) }
    #expect(await rig.watch.state.sharingAllowed == false)
    #expect(await rig.watch.state.notifications.isEmpty)
    await phone.allowSharing(session: 1)
    try await rig.until("shared") { $0 == .sharing(allowed: true) }
    _ = try await rig.added("Waiting")
    await rig.stop()
  }

  /// The engine's one timer wakes when the machine's next deadline comes, not on a tick
  /// every second: nothing on the clock wakes before the check, due 2.5 s into the session,
  /// and the check is made then.
  @Test func theTimerWakesWhenTheCheckIsDue() async throws {
    let clock = ManualClock()
    let phone = try Phone(settings: PhoneSettings(sharing: .ask), wallClock: FixedWallClock(seconds: 1_796_040_000))
    var options = WatchOptions()
    options.sharingCheckDelay = .milliseconds(2500)
    let rig = Rig(phone: phone, options: options, clock: clock)
    try await rig.ready()
    // The timer goes to sleep on its own task: until it has, the list would say nothing.
    for _ in 0..<1_000_000 where !clock.wakeTimes.contains(.milliseconds(2500)) { await Task.yield() }
    #expect(clock.wakeTimes.first == .milliseconds(2500), "\(clock.wakeTimes)")
    clock.advance(by: .milliseconds(2500))
    try await rig.until("not shared") { $0 == .sharing(allowed: false) }
    await rig.stop()
  }

  /// Revoked while connected: the phone goes silent; the liveness check after 30 s of
  /// silence asks the Control Point too, finds it refused, says so, keeps what the watch
  /// has, and once allowed again starts a new session that brings what was missed.
  @Test func revokedWhileConnectedAndAllowedAgain() async throws {
    let clock = ManualClock()
    let phone = try Phone(settings: PhoneSettings(sharing: .allow), wallClock: FixedWallClock(seconds: 1_796_040_000))
    await phone.register(app: "com.example.chat", name: "Chat")
    let rig = Rig(phone: phone, clock: clock)
    try await rig.ready()
    await phone.post(chat("Before"))
    _ = try await rig.added("Before")
    await phone.revokeSharing(session: 1)
    await phone.post(chat("During"))  // not announced: nothing is shared
    clock.advance(by: .seconds(31))
    try await rig.until("not shared") { $0 == .sharing(allowed: false) }
    #expect(await rig.watch.state.notifications.map(\.title) == ["Before"])
    await phone.allowSharing(session: 1)
    try await rig.until("shared again") { $0 == .sharing(allowed: true) }
    // The new session announces both again; either may be fetched first.
    var shown: Set<String> = []
    _ = try await rig.until("Before and During shown") { event in
      if case .added(let notification) = event { shown.insert(notification.title) }
      return shown.isSuperset(of: ["Before", "During"])
    }
    #expect(await Set(rig.watch.state.notifications.map(\.title)) == ["Before", "During"])
    await rig.stop()
  }
}
