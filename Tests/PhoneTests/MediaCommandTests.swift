import AMS
import ATT
import Phone
import TestSupport
import Testing
import Wire

/// The media player's commands at the console, as JSON lines and as scenario steps, and what
/// they do to the phone (Protocol/scenario.md).
@Suite struct MediaCommandTests {
  static let song = MediaPlayer.Track(title: "Tall Bird", artist: "Bartlebeats", album: "Frequency", duration: 215)

  static func refusal(_ line: String) -> String {
    do { return "accepted: \(String(describing: try PhoneCommand.parse(line)))" } catch { return error.message }
  }

  static func jsonRefusal(_ line: String) -> String {
    do { return "accepted: \(String(describing: try PhoneCommand.parse(jsonLine: line)))" } catch {
      return error.message
    }
  }

  @Test func consoleLinesParseToMediaCommands() throws {
    #expect(
      try PhoneCommand.parse(#"play "Tall Bird" "Bartlebeats" "Frequency" duration=3:35"#) == .media(.play(Self.song)))
    #expect(
      try PhoneCommand.parse("play title=Solo duration=80.5") == .media(.play(.init(title: "Solo", duration: 80.5))))
    #expect(try PhoneCommand.parse("PLAY") == .media(.play(nil)))
    #expect(try PhoneCommand.parse("prev") == .media(.previous))
    #expect(try PhoneCommand.parse("seek 1:20") == .media(.seek(80)))
    #expect(try PhoneCommand.parse("volume 40%") == .media(.volume(0.4)))
    #expect(try PhoneCommand.parse("shuffle all") == .media(.shuffle(.all)))
    #expect(try PhoneCommand.parse("repeat One") == .media(.repeatMode(.one)))
    #expect(try PhoneCommand.parse(#"player """#) == .media(.player("")))
  }

  static let roundTrips: [MediaCommand] = [
    .play(song), .play(.init(title: "Quote \" \\ \n", artist: "", album: "Ä")), .play(nil), .pause, .next, .previous,
    .seek(80.25), .volume(0.0625), .shuffle(.one), .repeatMode(.all), .player("Podcasts"), .player(""),
  ]

  @Test(arguments: roundTrips) func consoleLinesRoundTrip(command: MediaCommand) throws {
    let line = PhoneCommand.media(command).consoleLine
    #expect(try PhoneCommand.parse(line) == .media(command), "\(line)")
  }

  static let errors: [(String, String)] = [
    (
      "play artist=Someone",
      #"play needs a title before the other fields: play "TITLE" ["ARTIST" ["ALBUM"]]"#
    ),
    (
      "play a b c d",
      #"play takes at most TITLE, ARTIST and ALBUM before duration=...; put text with spaces in quotes: play "Tall Bird" "Bartlebeats" "Frequency" duration=3:35"#
    ),
    ("play x length=3", #"play has no key "length"; keys: title, artist, album, duration"#),
    ("play x duration=3:5", #"duration is a time as M:SS, H:MM:SS or seconds, e.g. duration=3:35, found "3:5""#),
    ("play x duration=0.001", #"a track lasts at least 1 second (duration=0 for none), found "0.001""#),
    ("pause now", #"pause takes nothing after it; type just "pause""#),
    ("seek", "seek takes one value: seek TIME, e.g. seek 1:20 or seek 80"),
    ("seek 1:75", #"seek takes a time as M:SS, H:MM:SS or seconds, e.g. seek 1:20, found "1:75""#),
    ("volume 1.5", #"volume takes a level from 0 to 1 or 0% to 100%, e.g. volume 0.4, found "1.5""#),
    ("shuffle sometimes", #"shuffle takes off, one or all, found "sometimes""#),
    ("repeat level=1", "repeat takes no level=...; usage: repeat off|one|all"),
  ]

  @Test(arguments: errors) func refusedLines(line: String, expected: String) {
    #expect(Self.refusal(line) == expected)
  }

  @Test func jsonLinesParseToMediaCommands() throws {
    #expect(
      try PhoneCommand.parse(
        jsonLine: #"{"cmd":"play","title":"Tall Bird","artist":"Bartlebeats","album":"Frequency","duration":215}"#)
        == .media(.play(Self.song)))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"play"}"#) == .media(.play(nil)))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"next"}"#) == .media(.next))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"seek","seconds":80}"#) == .media(.seek(80)))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"volume","level":0.25}"#) == .media(.volume(0.25)))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"repeat","mode":"all"}"#) == .media(.repeatMode(.all)))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"player","name":"Podcasts"}"#) == .media(.player("Podcasts")))
    #expect(
      Self.jsonRefusal(#"{"cmd":"volume","level":2}"#) == "$.level: expected a volume from 0 to 1, e.g. 0.4, found 2")
    #expect(Self.jsonRefusal(#"{"cmd":"volume"}"#) == "$.level: volume needs a value")
    #expect(
      Self.jsonRefusal(#"{"cmd":"play","artist":"x"}"#) == #"$: missing key "title" (the track's title)"#)
    #expect(
      Self.jsonRefusal(#"{"cmd":"pause","seconds":1}"#) == "$.seconds: unknown key; allowed in a pause command: cmd")
    #expect(
      Self.jsonRefusal(#"{"cmd":"shuffle","mode":1}"#) == #"$.mode: expected "off", "one" or "all", found 1"#)
  }

  @Test func scenarioStepsCarryMediaCommands() throws {
    let text = """
      {"steps":[
        {"at":0,"player":"Music"},
        {"at":0,"play":{"title":"Tall Bird","artist":"Bartlebeats","album":"Frequency","duration":215}},
        {"at":1,"pause":true},{"at":2,"play":true},{"at":3,"seek":80},{"at":4,"volume":0.4},
        {"at":5,"shuffle":"all"},{"at":6,"repeat":"one"},{"at":7,"next":true},{"at":8,"previous":true}]}
      """
    let scenario = try Scenario(parsing: text, file: "music.json")
    #expect(
      scenario.steps.map(\.action) == [
        .media(.player("Music")), .media(.play(Self.song)), .media(.pause), .media(.play(nil)), .media(.seek(80)),
        .media(.volume(0.4)), .media(.shuffle(.all)), .media(.repeatMode(.one)), .media(.next), .media(.previous),
      ])
    func refusal(_ step: String) -> String {
      do {
        _ = try Scenario(parsing: #"{"steps":["# + step + "]}", file: "m.json")
        return "accepted"
      } catch { return error.description }
    }
    #expect(
      refusal(#"{"at":1,"play":{"title":"x","year":1999}}"#)
        == "m.json: $.steps[0].play.year: unknown key; allowed in a track: title, artist, album, duration, comment")
    #expect(
      refusal(#"{"at":1,"pause":false}"#)
        == #"m.json: $.steps[0].pause: expected true ({"at": 5, "pause": true}), found false"#)
    #expect(
      refusal(#"{"at":1,"play":{"title":"x","duration":1e-300}}"#)
        == "m.json: $.steps[0].play.duration: a track lasts at least 1 second (0 for none)")
    #expect(refusal(#"{"at":1,"seek":-1}"#) == "m.json: $.steps[0].seek: must be a number of seconds from 0 to 1000000")
    #expect(refusal(#"{"at":1,"play":"x"}"#).hasPrefix("m.json: $.steps[0].play: expected a track like"))
  }
}

/// What the commands do on a phone, through its console and its scenario player.
@Suite(.timeLimit(scaledMinutes(1))) struct MediaConsoleTests {
  static func console() throws -> (PhoneConsole, ManualClock) {
    let clock = ManualClock()
    return (PhoneConsole(phone: try Phone(mediaClock: clock)), clock)
  }

  @Test func theConsoleDrivesThePlayerAndSaysWhatPlays() async throws {
    let (console, clock) = try Self.console()
    let nothing = try #require(await console.run(line: "pause"))
    #expect(!nothing.ok && nothing.lines[0].hasPrefix("nothing to play: give a track"))
    let played = try #require(await console.run(line: #"play "Tall Bird" "Bartlebeats" "Frequency" duration=3:35"#))
    #expect(played.ok && played.lines == [#"playing "Tall Bird" by Bartlebeats (Frequency), 0:00 of 3:35"#])
    clock.advance(by: .seconds(80))
    #expect(
      await console.run(line: "pause")?.lines == [#"paused at "Tall Bird" by Bartlebeats (Frequency), 1:20 of 3:35"#])
    #expect(
      await console.run(line: "seek 4:00")?.lines == [
        #""Tall Bird" lasts 3:35; seek to a time within it, e.g. seek 1:20"#
      ])
    #expect(await console.run(line: "volume 40%")?.lines == ["volume 40%"])
    let list = try #require(await console.run(line: "list"))
    #expect(list.lines.last == #"media: paused at "Tall Bird" by Bartlebeats (Frequency), 1:20 of 3:35"#)
    let json = try #require(await console.run(jsonLine: #"{"cmd":"seek","seconds":10}"#))
    #expect(
      json.json.description
        == #"{"ok":true,"cmd":"seek","media":{"app":"Music","state":"paused","elapsed":10,"title":"Tall Bird","#
        + #""artist":"Bartlebeats","album":"Frequency","duration":215,"index":0,"count":1,"volume":0.4,"#
        + #""shuffle":"off","repeat":"off"}}"#)
    #expect(await console.phone.mediaPlayer.elapsed(at: 80) == 10)
  }

  @Test func aTrackPlayedToItsEndGivesWayToTheNextAndTheConsoleIsTold() async throws {
    let (console, clock) = try Self.console()
    var events = console.phone.events().makeAsyncIterator()
    _ = await console.run(line: #"play "First" duration=10"#)
    _ = await console.run(line: "pause")
    _ = await console.run(line: #"play "Second" duration=0:20"#)
    _ = await console.run(line: "previous")
    _ = await console.run(line: "play")
    #expect(await console.phone.mediaPlayer.track?.title == "First")
    await clock.waitForSleepers()
    clock.advance(by: .seconds(12))
    #expect(await events.next(isolation: nil) == .trackEnded(now: #"playing "Second", 0:02 of 0:20, track 2 of 2"#))
    await clock.waitForSleepers()
    clock.advance(by: .seconds(18))
    #expect(await events.next(isolation: nil) == .trackEnded(now: #"paused at "Second", 0:00 of 0:20, track 2 of 2"#))
    #expect(await console.phone.mediaPlayer.state == .paused)
  }

  @Test func aScenarioPlaysMusic() async throws {
    let clock = ManualClock()
    let phone = try Phone(mediaClock: clock)
    let scenario = try Scenario(
      parsing: #"{"steps":[{"at":0,"play":{"title":"Tall Bird","duration":215}},{"at":1,"seek":300},"#
        + #"{"at":2,"next":true}]}"#, file: "m.json")
    let playing = Task {
      var lines: [String] = []
      try await ScenarioPlayer(scenario).play(on: phone, clock: clock) { lines.append($0.text) }
      return lines
    }
    for _ in 0..<2 {
      // The scenario's next step and the track's end both wait on the clock.
      await clock.waitForSleepers(2)
      clock.advance(by: .seconds(1))
    }
    let lines = try await playing.value
    #expect(
      lines == [
        #"playing "Tall Bird", 0:00 of 3:35"#,
        #"seek: "Tall Bird" lasts 3:35; seek to a time within it, e.g. seek 1:20"#,
        #"paused at "Tall Bird", 0:00 of 3:35"#,
      ])
  }
}
