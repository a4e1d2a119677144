import AMS
import Testing

@testable import Watch

/// The watch's Apple Media Service client as a value (through `WatchMachine`): what it asks
/// of the phone for each input, what it reports, and what the face is left to show.
@Suite struct MediaClientTests {
  struct Run {
    var machine = WatchMachine()
    var now: Duration = .zero

    mutating func feed(_ input: MediaClient.Input, after seconds: Int = 0) -> [WatchMachine.Action] {
      now += .seconds(seconds)
      return machine.handle(.media(input), now: now)
    }

    var playing: NowPlaying { machine.state.nowPlaying }
  }

  static func update(_ attribute: EntityAttribute, _ text: String, capacity: Int = 512) -> [UInt8] {
    EntityUpdate(attribute, text: text, capacity: capacity).encoded()
  }

  static func error(_ actions: [WatchMachine.Action]) -> String? {
    for case .emit(.error(let message)) in actions { return message }
    return nil
  }

  @Test func onANewLinkItRegistersForWhatTheScreenShows() {
    var run = Run()
    #expect(
      run.feed(.started(available: true)) == [
        .media(.register(EntityRegistration(.player, [0, 1, 2]))),
        .media(.register(EntityRegistration(.queue, [0, 1, 2, 3]))),
        .media(.register(EntityRegistration(.track, [0, 1, 2, 3]))),
      ])
    #expect(run.playing.available)
    var without = Run()
    #expect(without.feed(.started(available: false)).isEmpty && !without.playing.available)
    // The wearer's command has nowhere to go.
    #expect(
      Self.error(without.feed(.command(.play))) == "play: the phone publishes no Apple Media Service on this link")
  }

  @Test func updatesFillTheScreenAndTheProgressMovesWithTheRate() {
    var run = Run()
    _ = run.feed(.started(available: true))
    #expect(
      run.feed(.update(Self.update(.title, "Tall Bird")))
        == [.emit(.media(.title, value: "Tall Bird", truncated: false))])
    _ = run.feed(.update(Self.update(.duration, "215.0")))
    _ = run.feed(.update(Self.update(.playbackInfo, "1,1.0,10.0")), after: 100)
    #expect(run.playing.title == "Tall Bird" && run.playing.duration == 215 && run.playing.isPlaying)
    #expect(run.playing.elapsed(at: run.now + .milliseconds(2500)) == 12.5)
    #expect(run.playing.elapsed(at: run.now + .seconds(1000)) == 215, "held within the track")
    // The same value again is no news; PlaybackInfo always is (its time restarts the count).
    #expect(run.feed(.update(Self.update(.title, "Tall Bird"))).isEmpty)
    #expect(run.feed(.update(Self.update(.playbackInfo, "0,0.0,30.0")), after: 20).count == 1)
    #expect(!run.playing.isPlaying && run.playing.elapsed(at: run.now + .seconds(60)) == 30)
    // An empty value: the attribute has none now.
    _ = run.feed(.update(Self.update(.title, "")))
    #expect(run.playing.values[.title] == nil && !run.playing.hasTrack)
  }

  @Test func aCutTitleIsReadWholeOneAttributeAtATime() {
    var run = Run()
    _ = run.feed(.started(available: true))
    let title = String(repeating: "Symphony No. 9 ", count: 4)
    let cut = run.feed(.update(Self.update(.title, title, capacity: 20)))
    #expect(cut.count == 2 && cut[1] == .media(.readWhole(.title)))
    #expect(run.playing.truncated == [.title])
    // Another cut value waits for the read in flight: the selection is one per link.
    #expect(run.feed(.update(Self.update(.artist, String(repeating: "Orchestra ", count: 5), capacity: 20))).count == 1)
    // An album cut, then told whole, is not read.
    _ = run.feed(.update(Self.update(.album, String(repeating: "a", count: 40), capacity: 20)))
    _ = run.feed(.update(Self.update(.album, "Short")))
    let whole = run.feed(.answered(.readWhole(.title), .success(Array(title.utf8))))
    #expect(whole == [.emit(.media(.title, value: title, truncated: false)), .media(.readWhole(.artist))])
    #expect(run.playing.title == title && run.playing.truncated == [.artist])
    let failed = run.feed(.answered(.readWhole(.artist), .failure(MediaFailure(code: 0xA0, reason: "x"))))
    #expect(Self.error(failed) == "reading track.artist whole: invalidState (0xA0)")
    #expect(failed.count == 1, "nothing more to read")
  }

  @Test func remoteCommandsGoOnlyWhenThePlayerTakesThem() {
    var run = Run()
    _ = run.feed(.started(available: true))
    #expect(Self.error(run.feed(.command(.nextTrack))) == "nextTrack: the phone's player does not take it now")
    #expect(
      run.feed(.commands([0, 1, 2, 3])) == [.emit(.mediaCommands([.play, .pause, .togglePlayPause, .nextTrack]))])
    #expect(run.feed(.commands([0, 1, 2, 3])).isEmpty, "the same list is no news")
    #expect(run.feed(.command(.nextTrack)) == [.media(.remote(.nextTrack))])
    #expect(run.feed(.answered(.remote(.nextTrack), .success([]))) == [.emit(.remoteCommand(.nextTrack))])
    let refused = run.feed(.answered(.remote(.play), .failure(MediaFailure(code: 0xA1, reason: "x"))))
    #expect(Self.error(refused) == "play refused: invalidCommand (0xA1)")
    let lost = run.feed(
      .answered(.register(MediaClient.registrations[0]), .failure(MediaFailure(code: nil, reason: "timeout"))))
    #expect(Self.error(lost) == "registering for the player's attributes: timeout")
  }

  @Test func aPhoneWithNothingPlayingSendsEmptyValuesAndThatIsNoNews() {
    var run = Run()
    _ = run.feed(.started(available: true))
    for attribute in EntityAttribute.all {
      #expect(run.feed(.update(Self.update(attribute, ""))).isEmpty, "\(attribute)")
    }
    #expect(run.playing.playback == nil && run.playing.values.isEmpty && !run.playing.hasTrack)
  }

  @Test func aMalformedUpdateIsReportedAndChangesNothing() {
    var run = Run()
    _ = run.feed(.started(available: true))
    #expect(Self.error(run.feed(.update([2]))) != nil)
    #expect(Self.error(run.feed(.update(Self.update(.playbackInfo, "playing")))) != nil)
    #expect(run.playing.values.isEmpty && run.playing.playback == nil)
  }

  @Test func theLinkGoingTakesWhatPlayedWithIt() {
    var run = Run()
    _ = run.feed(.started(available: true))
    _ = run.feed(.update(Self.update(.title, "Tall Bird")))
    _ = run.machine.handle(.link(.connected("phone")), now: run.now)
    _ = run.machine.handle(.link(.reconnecting(attempt: 1, retryIn: .seconds(1), reason: "gone")), now: run.now)
    #expect(run.playing == NowPlaying())
  }
}
