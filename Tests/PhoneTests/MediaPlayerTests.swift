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

  @Test func aTrackThatPlaysToItsEndGivesWayToTheNextFromTheMomentItEnded() {
    var player = MediaPlayer()
    player.load([Self.other, Self.song], at: 0)
    #expect(player.endOfTrack == nil, "paused: nothing ends")
    player.resume(at: 10)
    player.seek(to: 40, at: 20)
    #expect(player.endOfTrack == 80)
    #expect(!player.finishTrack(at: 79.9) && player.track == Self.other)
    // Read late (at 85), the next track has played since 80.
    #expect(player.finishTrack(at: 85) && player.track == Self.song && player.elapsed(at: 85) == 5)
    #expect(player.endOfTrack == 295)
    // Repeat one plays the same track again; at the end of the queue, under repeat off, it stops.
    player.repeatMode = .one
    #expect(player.finishTrack(at: 295) && player.track == Self.song && player.state == .playing)
    player.repeatMode = .off
    #expect(player.finishTrack(at: 510) && player.state == .paused && player.endOfTrack == nil)
    // A track without a duration never ends by itself.
    player.play(MediaPlayer.Track(title: "Radio"), at: 600)
    #expect(player.endOfTrack == nil)
  }

  @Test func timesAreReadAndWrittenAsOnAPlayer() {
    #expect(MediaPlayer.seconds("3:35") == 215 && MediaPlayer.seconds("1:02:03") == 3723)
    #expect(MediaPlayer.seconds("80.5") == 80.5 && MediaPlayer.seconds("0") == 0)
    for bad in ["", "1:5", "1:60", "-3", "1::00", "a:00", "inf", "nan", "1:00:00:00", " 80"] {
      #expect(MediaPlayer.seconds(bad) == nil, "\(bad)")
    }
    #expect(
      MediaPlayer.clock(215.9) == "3:35" && MediaPlayer.clock(3723) == "1:02:03" && MediaPlayer.clock(5) == "0:05")
  }

  @Test func theSummarySaysWhatPlays() {
    var player = MediaPlayer()
    #expect(player.summary(at: 0) == "Music: nothing to play")
    player.load([Self.song, Self.other], at: 0)
    player.resume(at: 0)
    #expect(
      player.summary(at: 80) == "playing \"Tall Bird\" by Bartlebeats (Frequency), 1:20 of 3:35, track 1 of 2")
    player.pause(at: 80)
    #expect(player.summary(at: 90).hasPrefix("paused at \"Tall Bird\""))
    player.app = ""
    #expect(player.summary(at: 90) == "no player (the watch sees no media app)")
  }
}
