import AMS
import ATT
import Phone
import TestSupport
import Testing
import Watch

/// The watch's Apple Media Service client against the project's phone over a memory link:
/// what plays on the phone reaches the watch, whole, and the wearer's commands reach the
/// player.
@Suite(.timeLimit(scaledMinutes(1))) struct MediaEndToEndTests {
  static let title = "A title far longer than one notification holds at the smallest MTU — Für Élise ♪"

  func media(_ rig: Rig, _ attribute: EntityAttribute, _ value: String, truncated: Bool = false) async throws {
    try await rig.until("\(attribute) \(value)") { $0 == .media(attribute, value: value, truncated: truncated) }
  }

  @Test func whatPlaysOnThePhoneIsOnTheWatchAndTheWearerSkipsIt() async throws {
    let phone = try Phone(mediaClock: ManualClock())
    await phone.changeMedia { player, now in
      player.load(
        [MediaPlayer.Track(title: Self.title, artist: "Bartlebeats", duration: 215), .init(title: "Second")], at: now)
    }
    var options = WatchOptions()
    options.mtu = 23
    let rig = Rig(phone: phone, options: options)
    try await rig.connected()
    // Cut to the notification at MTU 23, then read whole through Entity Attribute.
    try await media(rig, .title, Self.title, truncated: false)
    #expect(rig.history.contains { if case .media(.title, _, truncated: true) = $0 { true } else { false } })
    let playing = await rig.watch.state.nowPlaying
    #expect(playing.title == Self.title)
    #expect(playing.artist == "Bartlebeats" && playing.duration == 215)
    // The commands came first, on subscribing.
    #expect(playing.commands.contains(.nextTrack))
    rig.watch.media(.togglePlayPause)
    try await rig.until("toggle accepted") { $0 == .remoteCommand(.togglePlayPause) }
    // The player changes after its Write Response: the change's notification says it has.
    try await rig.until("playing") {
      if case .media(.playbackInfo, let value, _) = $0 { value.hasPrefix("1,") } else { false }
    }
    #expect(await phone.mediaPlayer.state == .playing)
    rig.watch.media(.nextTrack)
    try await media(rig, .title, "Second")
    #expect(await phone.mediaPlayer.track?.title == "Second")
    #expect(await rig.watch.state.nowPlaying.artist == "", "the second track has no artist")
    await rig.stop()
  }

  @Test func aWatchThatDoesNotUseMediaLeavesAMSAlone() async throws {
    let phone = try Phone(mediaClock: ManualClock())
    await phone.changeMedia { player, now in player.play(MediaPlayer.Track(title: "Song"), at: now) }
    var options = WatchOptions()
    options.usesMedia = false
    let rig = Rig(phone: phone, options: options)
    try await rig.ready()
    #expect(await !rig.watch.state.nowPlaying.available)
    #expect(!rig.history.contains { if case .media = $0 { true } else { false } })
    rig.watch.media(.play)
    try await rig.until("refused") { $0 == .error("play: the phone publishes no Apple Media Service on this link") }
    await rig.stop()
  }
}
