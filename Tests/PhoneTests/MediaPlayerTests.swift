import AMS
import Testing

@testable import Phone

/// The phone's media player as a value: what the Apple Media Service shows of it at a given
/// time, and what each remote command does.
@Suite struct MediaPlayerTests {
  static let song = MediaPlayer.Track(title: "Tall Bird", artist: "Bartlebeats", album: "Frequency", duration: 215)
  static let other = MediaPlayer.Track(title: "Second", artist: "B", album: "C", duration: 100)

  @Test func playingMovesTheElapsedTimeWithTheClockAndPausingHoldsIt() {
    var player = MediaPlayer()
    player.play(Self.song, at: 100)
    #expect(player.value(of: .playbackInfo, at: 110.5) == "1,1.0,10.5")
    player.pause(at: 120)
    #expect(player.value(of: .playbackInfo, at: 500) == "0,0.0,20.0")
    player.resume(at: 500)
    #expect(player.elapsed(at: 530) == 50)
    // Never past the end of the track.
    #expect(player.elapsed(at: 10_000) == 215)
  }

  @Test func theAttributesAreTheTracksAndTheQueues() {
    var player = MediaPlayer()
    #expect(player.value(of: .title, at: 0) == nil)
    #expect(player.supportedCommands.isEmpty)
    player.load([Self.song, Self.other], at: 0)
    #expect(player.value(of: .title, at: 0) == "Tall Bird")
    #expect(player.value(of: .artist, at: 0) == "Bartlebeats")
    #expect(player.value(of: .album, at: 0) == "Frequency")
    #expect(player.value(of: .duration, at: 0) == "215.0")
    #expect(player.value(of: .queueIndex, at: 0) == "0" && player.value(of: .queueCount, at: 0) == "2")
    #expect(player.value(of: .playerName, at: 0) == "Music" && player.value(of: .volume, at: 0) == "0.5")
    #expect(player.value(of: EntityAttribute(.track, 9), at: 0) == nil)
    player.app = ""
    #expect(player.values(at: 0).isEmpty, "no player, nothing to show")
  }

  @Test func remoteCommandsDoWhatTheyName() {
    var player = MediaPlayer()
    player.load([Self.song, Self.other], at: 0)
    #expect(player.perform(.togglePlayPause, at: 0) && player.state == .playing)
    let skipped = player.perform(.skipForward, at: 10)
    #expect(skipped)
    #expect(player.elapsed(at: 10) == 25)
    #expect(player.perform(.skipBackward, at: 10) && player.elapsed(at: 10) == 10)
    #expect(player.perform(.nextTrack, at: 20) && player.track == Self.other && player.elapsed(at: 20) == 0)
    // Previous early in a track goes to the one before; later, back to this one's start.
    #expect(player.perform(.previousTrack, at: 21) && player.track == Self.song)
    #expect(player.perform(.previousTrack, at: 30) && player.track == Self.song && player.elapsed(at: 30) == 0)
    #expect(player.perform(.volumeUp, at: 30) && player.volume == 0.5625)
    #expect(player.perform(.advanceRepeatMode, at: 30) && player.repeatMode == .one)
    #expect(player.perform(.advanceShuffleMode, at: 30) && player.shuffle == .one)
    #expect(player.perform(.pause, at: 40) && player.state == .paused)
    // Not offered: nothing changes.
    let before = player
    #expect(!player.perform(.likeTrack, at: 40) && !player.perform(RemoteCommandID(rawValue: 99), at: 40))
    #expect(player == before)
  }

  @Test func nextAtTheEndStopsUnlessTheQueueRepeats() {
    var player = MediaPlayer()
    player.load([Self.song, Self.other], at: 0)
    player.resume(at: 0)
    player.next(at: 1)
    player.next(at: 2)
    #expect(player.track == Self.other && player.state == .paused)
    player.repeatMode = .all
    player.resume(at: 3)
    player.next(at: 4)
    #expect(player.track == Self.song && player.state == .playing)
  }
}
