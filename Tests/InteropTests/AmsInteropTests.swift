import Foundation
import TestSupport
import Testing

/// The Apple Media Service against Bumble (https://github.com/google/bumble, 0.0.236), an
/// implementation written without this project, over the virtual radio: Bumble's own
/// `AmsClient` (bumble.profiles.ams) against `ancs phone --bluetooth`, and `ancs watch
/// --bluetooth` against a phone built on Bumble's `Ams` template service.
@Suite(
  "Bumble's AMS client and service against ancs phone and ancs watch over the air", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "needs the ancs binary: swift build first"),
  .timeLimit(scaledMinutes(2)))
struct AmsInteropTests {
  /// What the phone plays. The second title (288 bytes of 2-, 3- and 4-byte UTF-8) is longer
  /// than one Entity Update at ATT_MTU 185, which the Bumble device answers to the phone's
  /// Exchange MTU: 179 bytes of value.
  static var tracks: [[String: Any]] {
    [
      ["title": "Jóga — 東京 🚄", "artist": "Björk", "album": "Homogenic", "duration": 305.5],
      [
        "title": String(repeating: "Ünïcødé 京都 🍜 ", count: 12), "artist": "Sigur Rós", "album": "Ágætis byrjun",
        "duration": 431.25,
      ],
    ]
  }
  /// What the phone's player takes with a track loaded (Protocol/AMS.md).
  static let playerCommands: Set = [
    "PLAY", "PAUSE", "TOGGLE_PLAY_PAUSE", "NEXT_TRACK", "PREVIOUS_TRACK", "VOLUME_UP", "VOLUME_DOWN",
    "ADVANCE_REPEAT_MODE", "ADVANCE_SHUFFLE_MODE", "SKIP_FORWARD", "SKIP_BACKWARD",
  ]

  @Test("Bumble's AmsClient registers, receives every attribute and the commands, and the phone's player obeys it")
  func bumbleAmsClient() async throws {
    try await withBumblePeer(role: "ams-client") { peer in
      let port = try #require(await peer.readyPort())
      let bonds = NSTemporaryDirectory() + "ams-client-interop-\(getpid()).json"
      defer { unlink(bonds) }
      let phone = try AncsProcess([
        "phone", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", bonds, "--commands", "jsonl",
      ])
      defer { phone.kill() }
      // The first track plays before the accessory comes: an AmsClient cannot parse the
      // empty values a phone with nothing to play sends (float(''), int(b'')).
      try await play(Self.tracks[0], on: phone)

      // The phone connects to a device soliciting AMS alone, pairs on its Security Request;
      // Bumble subscribes and registers for every attribute.
      #expect(await peer.line(startingWith: "paired") == "paired ltk")
      #expect(await peer.line(startingWith: "observing") == "observing 185")
      var state = try await awaitState(of: peer, matching: Self.tracks[0])
      #expect(state["name"] as? String == "Music")
      #expect(state["playbackState"] as? String == "PLAYING")
      #expect(state["playbackRate"] as? Double == 1)
      #expect(state["volume"] as? Double == 0.5)
      #expect(state["index"] as? Int == 0 && state["count"] as? Int == 1)
      #expect(state["shuffle"] as? String == "OFF" && state["repeat"] as? String == "OFF")
      #expect(Set(state["commands"] as? [String] ?? []) == Self.playerCommands)

      // A title longer than one notification comes Truncated, cut on a character boundary;
      // AmsClient reads it whole through Entity Attribute.
      try await play(Self.tracks[1], on: phone)
      state = try await awaitState(of: peer, matching: Self.tracks[1])
      #expect(state["index"] as? Int == 1 && state["count"] as? Int == 2)
      let long = try #require(Self.tracks[1]["title"] as? String)
      let cut = try peer.transcript.compactMap { try payload(of: $0, kind: "update") }.filter {
        $0["entity"] as? String == "TRACK" && $0["attribute"] as? Int == 2 && $0["truncated"] as? Bool == true
      }
      #expect(cut.count == 1)
      for update in cut {
        let value = try #require(update["value"] as? String)
        #expect(long.hasPrefix(value) && value.utf8.count <= 179 && value.utf8.count > 175, "\(value)")
      }

      // Bumble's remote commands: the phone's player obeys each, and says so.
      phone.send(#"{"cmd":"pause"}"#)
      _ = try #require(await phone.line(containing: #""cmd":"pause""#))
      // Paused at the start, PreviousTrack goes back a track rather than to this one's start.
      phone.send(#"{"cmd":"seek","seconds":0}"#)
      _ = try #require(await phone.line(containing: #""cmd":"seek""#))
      let commands: [(bumble: String, phone: String, expect: [String: Any])] = [
        ("PREVIOUS_TRACK", "previousTrack", Self.tracks[0].merging(["index": 0]) { $1 }),
        ("NEXT_TRACK", "nextTrack", Self.tracks[1].merging(["index": 1]) { $1 }),
        ("VOLUME_UP", "volumeUp", ["volume": 0.563]),
        ("PLAY", "play", ["playbackState": "PLAYING", "playbackRate": 1.0]),
        ("PAUSE", "pause", ["playbackState": "PAUSED", "playbackRate": 0.0]),
        ("TOGGLE_PLAY_PAUSE", "togglePlayPause", ["playbackState": "PLAYING"]),
      ]
      for command in commands {
        peer.send("command \(command.bumble)")
        #expect(await peer.line(startingWith: "sent") == "sent \(command.bumble)")
        let event = try jsonObject(
          try #require(await phone.line(containing: #""event":"remoteCommand""#), "\(phone.stderr)"))
        #expect(event["command"] as? String == command.phone)
        #expect(!(event["outcome"] as? String ?? "").contains("ignored"), "\(event)")
        _ = try await awaitState(of: peer, matching: command.expect)
      }
      // The phone's own account agrees.
      phone.send(#"{"cmd":"list"}"#)
      let list = try jsonObject(try #require(await phone.line(containing: #""cmd":"list""#)))
      let media = try #require(list["media"] as? [String: Any])
      #expect(media["state"] as? String == "playing")
      #expect(media["title"] as? String == long)
      #expect(media["index"] as? Int == 1)
      #expect(media["volume"] as? Double == 0.5625)

      peer.send("quit")
      #expect(await peer.line(startingWith: "done") != nil)
      #expect(!peer.transcript.contains { $0.hasPrefix("error") || $0.hasPrefix("pairing-failed") })
      #expect(try await peer.exitCode() == 0, "\(peer.stderr.suffix(2000))")
      #expect(!peer.stderr.contains("Traceback"), "\(peer.stderr.suffix(2000))")
      phone.send(#"{"cmd":"quit"}"#)
    }
  }

  /// What the Bumble phone plays (bumble_peer.py, AMS_PHONE_TRACKS): the second title, 288
  /// bytes, is longer than one Entity Update at the ATT_MTU of 185 it answers the watch's
  /// Exchange MTU with.
  static let bumbleTracks = [
    ["artist": "Björk", "album": "Homogenic", "title": "Jóga — 東京 🚄", "duration": "305.0"],
    [
      "artist": "Sigur Rós", "album": "( )", "title": String(repeating: "Ünïcødé 京都 🍜 ", count: 12),
      "duration": "431.5",
    ],
  ]

  @Test("ancs watch shows what a phone built on Bumble's Ams template plays, reads a cut title whole, and controls it")
  func watchAgainstBumbleAmsTemplate() async throws {
    try await withBumblePeer(role: "ams-phone") { peer in
      let port = try #require(await peer.readyPort())
      let bonds = NSTemporaryDirectory() + "ams-phone-interop-\(getpid()).json"
      defer { unlink(bonds) }
      let watch = try AncsProcess([
        "watch", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", bonds, "--headless", "--name", "AMS watch",
        "--command-timeout", scaledSeconds(10),
      ])
      defer { watch.kill() }

      // Bumble finds the watch by its ANCS solicitation and pairs on its Security Request;
      // the watch subscribes to ANCS (the template's, silent), then registers for every
      // attribute of the three entities, with Write Requests, as Entity Update takes them.
      #expect(await watch.line(containing: #""event":"connected""#) != nil, "\(watch.stderr)")
      #expect(await peer.line(startingWith: "paired") == "paired ltk")
      var registered: [String: [Int]] = [:]
      for _ in 0..<3 {
        let text = try #require(await peer.line(startingWith: "registered"))
        let line = try #require(try payload(of: text, kind: "registered"))
        registered[line["entity"] as? String ?? "?"] = line["attributes"] as? [Int]
        #expect(line["write"] as? String == "ATT_WRITE_REQUEST", "\(line)")
      }
      #expect(registered == ["PLAYER": [0, 1, 2], "QUEUE": [0, 1, 2, 3], "TRACK": [0, 1, 2, 3]])

      // Every value as Bumble sent it, byte for byte, and the commands the player takes.
      var media = WatchMedia()
      let first = Self.bumbleTracks[0]
      try await media.read(from: watch) {
        let shown = $0.shown
        return shown["player.name"] == "Bumble Player" && shown["player.playbackInfo"] == "1,1.0,12.5"
          && shown["player.volume"] == "0.75" && shown["queue.index"] == "0" && shown["queue.count"] == "2"
          && shown["queue.shuffleMode"] == "0" && shown["queue.repeatMode"] == "0"
          && shown["track.artist"] == first["artist"] && shown["track.album"] == first["album"]
          && shown["track.title"] == first["title"] && shown["track.duration"] == first["duration"]
          && $0.commands != nil
      }
      #expect(
        media.commands == ["play", "pause", "togglePlayPause", "nextTrack", "previousTrack", "volumeUp", "volumeDown"])

      // The wearer's commands: Write Commands, since the template's Remote Command takes no
      // Write Request; Bumble's player obeys and the watch shows what changed.
      watch.send("media pause")
      try await expectCommand("PAUSE", from: peer)
      try await media.read(from: watch) { $0.shown["player.playbackInfo"] == "0,0.0,12.5" && $0.sent == ["pause"] }

      // The next track's title comes cut on a character boundary; the watch selects it on
      // Entity Attribute (a Write Command there too) and reads it whole (with Read Blob).
      watch.send("media next")
      try await expectCommand("NEXT_TRACK", from: peer)
      let second = Self.bumbleTracks[1]
      let long = try #require(second["title"])
      try await media.read(from: watch) {
        let shown = $0.shown
        return shown["queue.index"] == "1" && shown["track.artist"] == second["artist"]
          && shown["track.album"] == second["album"]
          && shown["track.duration"] == second["duration"] && shown["track.title"] == long
          && $0.sent == ["pause", "nextTrack"]
      }
      let titles = media.events.filter { $0["attribute"] as? String == "title" }
      let cut = try #require(titles.dropLast().last)
      #expect(cut["truncated"] as? Bool == true)
      let part = try #require(cut["value"] as? String)
      #expect(long.hasPrefix(part) && part.utf8.count <= 179 && part.utf8.count > 175, "\(part)")
      #expect(titles.last?["truncated"] as? Bool == false)
      let selection = try #require(await peer.line(startingWith: "selected"))
      let selected = try #require(try payload(of: selection, kind: "selected"))
      #expect(selected["entity"] as? String == "TRACK" && selected["attribute"] as? Int == 2)
      #expect(selected["write"] as? String == "ATT_WRITE_COMMAND", "\(selected)")
      #expect(await peer.line(startingWith: "read") == #"read {"size": \#(long.utf8.count)}"#)

      watch.send("media volume-up")
      try await expectCommand("VOLUME_UP", from: peer)
      try await media.read(from: watch) { $0.shown["player.volume"] == "0.8125" && $0.sent.last == "volumeUp" }

      watch.send("quit")
      #expect(await peer.line(startingWith: "done") != nil)
      #expect(!peer.transcript.contains { $0.hasPrefix("error") || $0.hasPrefix("pairing-failed") })
      #expect(!media.events.contains { $0["event"] as? String == "error" }, "\(media.events)")
      #expect(try await peer.exitCode() == 0, "\(peer.stderr.suffix(2000))")
    }
  }
}

/// The watch's AMS events (`media`, `mediaCommands`, `remoteCommand`) as they come, and
/// what it shows.
private struct WatchMedia {
  /// Every event line read so far, `error` events included.
  var events: [[String: Any]] = []
  /// The latest value of each "entity.attribute".
  var shown: [String: String] = [:]
  /// The commands the phone's player takes, as last notified.
  var commands: [String]?
  /// The remote commands the watch sent, in order.
  var sent: [String] = []

  /// Reads the watch's event lines until `done` holds.
  mutating func read(
    from watch: AncsProcess, sourceLocation: SourceLocation = #_sourceLocation, until done: (WatchMedia) -> Bool
  ) async throws {
    while !done(self) {
      let line = try #require(
        await watch.line(containing: #"{"event":""#), "\(watch.stderr)", sourceLocation: sourceLocation)
      let event = try jsonObject(line)
      events.append(event)
      switch event["event"] as? String {
      case "media":
        shown["\(event["entity"] as? String ?? "?").\(event["attribute"] as? String ?? "?")"] =
          event["value"] as? String
      case "mediaCommands": commands = event["commands"] as? [String]
      case "remoteCommand": sent.append(event["command"] as? String ?? "?")
      case "error": Issue.record("watch: \(line)", sourceLocation: sourceLocation)
      default: break
      }
    }
  }
}

/// Bumble's "command" line for the next Remote Command: `name`, carried by a Write Command.
private func expectCommand(_ name: String, from peer: BumblePeer, sourceLocation: SourceLocation = #_sourceLocation)
  async throws
{
  let line = try #require(await peer.line(startingWith: "command", sourceLocation: sourceLocation))
  let command = try #require(try payload(of: line, kind: "command"))
  #expect(command["command"] as? String == name, sourceLocation: sourceLocation)
  #expect(command["write"] as? String == "ATT_WRITE_COMMAND", sourceLocation: sourceLocation)
}

/// Plays `track` on the phone (jsonl `play`) and waits for its answer.
private func play(_ track: [String: Any], on phone: AncsProcess) async throws {
  var command = track
  command["cmd"] = "play"
  phone.send(String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self))
  let answer = try #require(await phone.line(containing: #""cmd":"play""#), "\(phone.stderr)")
  #expect(answer.contains(#""ok":true"#), "\(answer)")
}

/// The Bumble AmsClient's state once it holds every value of `expected` (strings byte for
/// byte, numbers as numbers): the latest "state" line read if it does (each is the client's
/// whole state, and one may have been read past waiting for another line), else the first
/// new one that does.
private func awaitState(
  of peer: BumblePeer, matching expected: [String: Any], sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [String: Any] {
  let matches = { (state: [String: Any]) in
    expected.allSatisfy { key, value in
      switch value {
      case let text as String: state[key] as? String == text
      case let number as Double: (state[key] as? Double).map { abs($0 - number) < 1e-9 } ?? false
      case let number as Int: state[key] as? Int == number
      default: false
      }
    }
  }
  if let latest = try peer.transcript.last(where: { $0.hasPrefix("state ") }).flatMap({
    try payload(of: $0, kind: "state")
  }), matches(latest) {
    return latest
  }
  while let line = await peer.line(startingWith: "state ", sourceLocation: sourceLocation) {
    let state = try #require(try payload(of: line, kind: "state"))
    if matches(state) { return state }
  }
  throw AmsInteropError(description: "no state with \(expected): \(peer.transcript.suffix(5))")
}

struct AmsInteropError: Error, CustomStringConvertible {
  var description: String
}

private func jsonObject(_ text: some StringProtocol) throws -> [String: Any] {
  try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
}

/// The JSON object of a Bumble peer line "KIND {...}"; nil for a line of another kind.
private func payload(of line: String, kind: String) throws -> [String: Any]? {
  guard line.hasPrefix(kind + " {") else { return nil }
  return try jsonObject(line.dropFirst(kind.count + 1))
}
