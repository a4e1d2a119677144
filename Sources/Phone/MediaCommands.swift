import AMS
import Wire

/// A change to the phone's media player, from the console, a JSON command or a scenario step
/// (Protocol/scenario.md).
public enum MediaCommand: Hashable, Sendable {
  /// Plays this track now (it goes after the current one in the queue); nil resumes.
  case play(MediaPlayer.Track?)
  case pause
  case next
  case previous
  /// Moves to this many seconds into the current track.
  case seek(Double)
  /// 0 (silent) to 1 (full).
  case volume(Double)
  case shuffle(ShuffleMode)
  case repeatMode(RepeatMode)
  /// The app that plays (the Player entity's name); empty: no player at all.
  case player(String)

  /// The command words, as the console, JSON commands and scenario steps spell them.
  public static let words = ["play", "pause", "next", "previous", "seek", "volume", "shuffle", "repeat", "player"]
  /// The keys of a track (a `play` with one).
  public static let trackKeys = ["title", "artist", "album", "duration"]
  /// The longest track or position accepted, in seconds (as a scenario's times).
  static let maximumSeconds = Scenario.maximumTime

  public var word: String {
    switch self {
    case .play: return "play"
    case .pause: return "pause"
    case .next: return "next"
    case .previous: return "previous"
    case .seek: return "seek"
    case .volume: return "volume"
    case .shuffle: return "shuffle"
    case .repeatMode: return "repeat"
    case .player: return "player"
    }
  }

  /// Performs the command on `player` at `now`: the line that says what it did, or why it
  /// could not (nothing changes then).
  public func apply(to player: inout MediaPlayer, at now: Double) -> Result<String, ConsoleError> {
    let needsTrack =
      "nothing to play: give a track, e.g. play \"Tall Bird\" \"Bartlebeats\" \"Frequency\" duration=3:35"
    switch self {
    case .play(let track?): player.play(track, at: now)
    case .play(nil):
      guard player.track != nil else { return .failure(ConsoleError(needsTrack)) }
      player.resume(at: now)
    case .pause:
      guard player.track != nil else { return .failure(ConsoleError(needsTrack)) }
      player.pause(at: now)
    case .next, .previous:
      guard player.track != nil else { return .failure(ConsoleError("the queue is empty; " + needsTrack)) }
      if self == .next { player.next(at: now) } else { player.previous(at: now) }
    case .seek(let seconds):
      guard let track = player.track else { return .failure(ConsoleError(needsTrack)) }
      if track.duration > 0 && seconds > track.duration {
        return .failure(
          ConsoleError(
            "\"\(track.title)\" lasts \(MediaPlayer.clock(track.duration)); seek to a time within it, e.g. seek 1:20"))
      }
      player.seek(to: seconds, at: now)
    case .volume(let level):
      player.setVolume(level)
      return .success("volume \(Int((player.volume * 100).rounded()))%")
    case .shuffle(let mode):
      player.shuffle = mode
      return .success("shuffle \(mode.name ?? String(mode.rawValue))")
    case .repeatMode(let mode):
      player.repeatMode = mode
      return .success("repeat \(mode.name ?? String(mode.rawValue))")
    case .player(let name):
      player.app = name
    }
    return .success(player.summary(at: now))
  }

  /// The command in console syntax; `PhoneCommand.parse` reads it back to the same command.
  var consoleWords: [String] {
    switch self {
    case .play(let track?):
      var words = ["play", consoleText(track.title), consoleText(track.artist), consoleText(track.album)]
      if track.duration > 0 { words.append("duration=\(track.duration)") }
      return words
    case .seek(let seconds): return ["seek", "\(seconds)"]
    case .volume(let level): return ["volume", "\(level)"]
    case .shuffle(let mode): return ["shuffle", mode.name ?? String(mode.rawValue)]
    case .repeatMode(let mode): return ["repeat", mode.name ?? String(mode.rawValue)]
    case .player(let name): return ["player", consoleText(name)]
    case .play(nil), .pause, .next, .previous: return [word]
    }
  }
}

// MARK: - Reading

extension MediaCommand {
  /// Parses the words after a media command word at the console.
  static func parse(word: String, plain: [String], pairs: [(String, String)]) throws(ConsoleError) -> MediaCommand {
    func one(_ usage: String) throws(ConsoleError) -> String {
      if let (key, _) = pairs.first { throw ConsoleError("\(word) takes no \(key)=...; usage: \(usage)") }
      guard plain.count == 1 else { throw ConsoleError("\(word) takes one value: \(usage)") }
      return plain[0]
    }
    func nothing() throws(ConsoleError) {
      if !plain.isEmpty || !pairs.isEmpty {
        throw ConsoleError("\(word) takes nothing after it; type just \"\(word)\"")
      }
    }
    switch word {
    case "play":
      return .play(try track(plain: plain, pairs: pairs))
    case "pause":
      try nothing()
      return .pause
    case "next":
      try nothing()
      return .next
    case "previous":
      try nothing()
      return .previous
    case "seek":
      let text = try one("seek TIME, e.g. seek 1:20 or seek 80")
      guard let seconds = MediaPlayer.seconds(text), seconds <= maximumSeconds else {
        throw ConsoleError("seek takes a time as M:SS, H:MM:SS or seconds, e.g. seek 1:20, found \(quoted(text))")
      }
      return .seek(seconds)
    case "volume":
      let text = try one("volume LEVEL, from 0 to 1 or 0% to 100%, e.g. volume 0.4")
      guard let level = volume(text) else {
        throw ConsoleError("volume takes a level from 0 to 1 or 0% to 100%, e.g. volume 0.4, found \(quoted(text))")
      }
      return .volume(level)
    case "shuffle", "repeat":
      let text = try one("\(word) off|one|all")
      guard let mode = mode(text) else { throw ConsoleError("\(word) takes off, one or all, found \(quoted(text))") }
      return word == "shuffle" ? .shuffle(ShuffleMode(rawValue: mode)) : .repeatMode(RepeatMode(rawValue: mode))
    default:  // "player"
      let name = try one("player \"NAME\" (\"\" for no player), e.g. player \"Podcasts\"")
      try checkText(name, "the player's name")
      return .player(name)
    }
  }

  static func track(plain: [String], pairs: [(String, String)]) throws(ConsoleError) -> MediaPlayer.Track? {
    if plain.count > 3 {
      throw ConsoleError(
        "play takes at most TITLE, ARTIST and ALBUM before duration=...; put text with spaces in quotes: "
          + "play \"Tall Bird\" \"Bartlebeats\" \"Frequency\" duration=3:35")
    }
    var values: [String: String] = [:]
    for (index, value) in plain.enumerated() { values[["title", "artist", "album"][index]] = value }
    for (key, value) in pairs {
      guard trackKeys.contains(key) else {
        throw ConsoleError("play has no key \(quoted(key)); keys: " + trackKeys.joined(separator: ", "))
      }
      if values[key] != nil { throw ConsoleError("play: \(key) given twice") }
      values[key] = value
    }
    if values.isEmpty { return nil }
    guard let title = values["title"], !title.isEmpty else {
      throw ConsoleError("play needs a title before the other fields: play \"TITLE\" [\"ARTIST\" [\"ALBUM\"]]")
    }
    var duration = 0.0
    if let text = values["duration"] {
      guard let seconds = MediaPlayer.seconds(text), seconds <= maximumSeconds else {
        throw ConsoleError("duration is a time as M:SS, H:MM:SS or seconds, e.g. duration=3:35, found \(quoted(text))")
      }
      guard seconds == 0 || seconds >= MediaPlayer.Track.shortest else {
        throw ConsoleError("a track lasts at least 1 second (duration=0 for none), found \(quoted(text))")
      }
      duration = seconds
    }
    for key in ["title", "artist", "album"] { try checkText(values[key] ?? "", key) }
    return MediaPlayer.Track(
      title: title, artist: values["artist"] ?? "", album: values["album"] ?? "", duration: duration)
  }

  /// "0.4" or "40%".
  static func volume(_ text: String) -> Double? {
    let percent = text.hasSuffix("%")
    guard let value = Double(percent ? String(text.dropLast()) : text), value.isFinite else { return nil }
    let level = percent ? value / 100 : value
    return (0...1).contains(level) ? level : nil
  }

  /// "off", "one", "all".
  static func mode(_ text: String) -> UInt8? {
    ShuffleMode.names.first { $0.value == text.lowercased() }?.key
  }

  /// An AMS value is sent as UTF-8 and read whole through Entity Attribute: text must fit in
  /// an ATT attribute value.
  static func checkText(_ text: String, _ what: String) throws(ConsoleError) {
    if text.utf8.count > MediaPlayer.maximumTextBytes {
      throw ConsoleError("\(what) is longer than an AMS value holds (\(MediaPlayer.maximumTextBytes) bytes of UTF-8)")
    }
  }

  /// Reads a media command from JSON: a scenario step's value (`{"at": 1, "seek": 80}`) or
  /// a JSON command's fields (`{"cmd": "seek", "seconds": 80}`) as `value`, at `path`.
  static func read(word: String, value: JSON?, at path: JSONPath) throws(ScenarioIssue) -> MediaCommand {
    func required() throws(ScenarioIssue) -> JSON {
      guard let value else { throw ScenarioIssue(path: path, reason: "\(word) needs a value") }
      return value
    }
    func flag() throws(ScenarioIssue) {
      guard value == nil || value == .bool(true) else {
        throw ScenarioIssue(path: path, reason: "expected true ({\"at\": 5, \"\(word)\": true}), found \(value!)")
      }
    }
    switch word {
    case "play":
      guard let value, value != .bool(true) else { return .play(nil) }
      let fields = try ObjectFields(
        value, at: path, what: "a track like {\"title\": \"Tall Bird\", \"artist\": \"Bartlebeats\", \"duration\": 215}"
      )
      try fields.only(trackKeys + ["comment"], "in a track")
      let title = try fields.required("title", "the track's title")
      var duration = 0.0
      if let seconds = fields["duration"] {
        duration = try ScenarioReader.seconds(seconds, at: path.key("duration"))
        guard duration == 0 || duration >= MediaPlayer.Track.shortest else {
          throw ScenarioIssue(path: path.key("duration"), reason: "a track lasts at least 1 second (0 for none)")
        }
      }
      let track = MediaPlayer.Track(
        title: try ScenarioReader.string(title, at: path.key("title"), nonEmpty: true),
        artist: try fields.string("artist") ?? "", album: try fields.string("album") ?? "", duration: duration)
      for (key, text) in [("title", track.title), ("artist", track.artist), ("album", track.album)] {
        do { try checkText(text, key) } catch { throw ScenarioIssue(path: path.key(key), reason: error.message) }
      }
      return .play(track)
    case "pause":
      try flag()
      return .pause
    case "next":
      try flag()
      return .next
    case "previous":
      try flag()
      return .previous
    case "seek":
      return .seek(try ScenarioReader.seconds(try required(), at: path))
    case "volume":
      let value = try required()
      guard case .number(let level) = value, (0...1).contains(level) else {
        throw ScenarioIssue(path: path, reason: "expected a volume from 0 to 1, e.g. 0.4, found \(value)")
      }
      return .volume(level)
    case "shuffle", "repeat":
      let value = try required()
      guard case .string(let text) = value, let mode = mode(text) else {
        throw ScenarioIssue(path: path, reason: "expected \"off\", \"one\" or \"all\", found \(value)")
      }
      return word == "shuffle" ? .shuffle(ShuffleMode(rawValue: mode)) : .repeatMode(RepeatMode(rawValue: mode))
    default:  // "player"
      let name = try ScenarioReader.string(try required(), at: path)
      do { try checkText(name, "the player's name") } catch { throw ScenarioIssue(path: path, reason: error.message) }
      return .player(name)
    }
  }
}

extension MediaPlayer {
  /// The longest text a track or player name may have: what one ATT attribute value holds.
  public static let maximumTextBytes = 512
}
