import AMS
import Wire

/// The phone's simulated media player, as the Apple Media Service shows it (Protocol/AMS.md):
/// the app, a queue of tracks and where playback is in the current one. A value: every change
/// is a method given the time it happens (seconds on the phone's media clock), and the AMS
/// attributes are read from it at a given time, so the player is tested without a clock.
public struct MediaPlayer: Hashable, Sendable {
  public struct Track: Hashable, Sendable {
    public var title: String
    public var artist: String
    public var album: String
    /// Seconds.
    public var duration: Double

    public init(title: String, artist: String = "", album: String = "", duration: Double = 0) {
      self.title = title
      self.artist = artist
      self.album = album
      // A shorter one would end over and over on the same clock reading.
      self.duration = duration > 0 ? max(Self.shortest, duration) : 0
    }

    /// The shortest track, in seconds (0 is none: a track that never ends by itself).
    public static let shortest = 1.0
  }

  /// The app's name (the Player entity's Name); empty: no player, nothing to show.
  public var app = "Music"
  public private(set) var queue: [Track] = []
  /// The current track's place in `queue`.
  public private(set) var index = 0
  public private(set) var state = PlaybackState.paused
  /// 0 (silent) to 1 (full).
  public private(set) var volume = 0.5
  public var shuffle = ShuffleMode.off
  public var repeatMode = RepeatMode.off
  /// Where playback was at `mark` (seconds into the track).
  private var elapsedAtMark = 0.0
  /// When `elapsedAtMark` was taken, on the media clock.
  private var mark = 0.0

  /// How far volume up and down move it.
  public static let volumeStep = 0.0625
  /// How far skip forward and backward move, in seconds.
  public static let skipInterval = 15.0
  /// Previous within this many seconds of a track's start goes to the track before;
  /// later, it goes back to the start of this one (as music players do).
  public static let restartThreshold = 3.0

  public init() {}

  public var track: Track? { queue.indices.contains(index) ? queue[index] : nil }

  /// 1 while playing, 0 paused.
  public var rate: Double { state == .playing ? 1 : 0 }

  /// Seconds into the current track at `now`, held within its duration.
  public func elapsed(at now: Double) -> Double {
    let moved = elapsedAtMark + max(0, now - mark) * rate
    guard let track, track.duration > 0 else { return max(0, moved) }
    return min(max(0, moved), track.duration)
  }

  // MARK: What the user (console, scenario) does

  /// Plays `track` now: it is added after the current track and becomes current.
  public mutating func play(_ track: Track, at now: Double) {
    let place = queue.isEmpty ? 0 : index + 1
    queue.insert(track, at: place)
    go(to: place, at: now)
    state = .playing
  }

  /// Replaces the queue; the first track is current, paused at its start.
  public mutating func load(_ tracks: [Track], at now: Double) {
    queue = tracks
    go(to: 0, at: now)
    state = .paused
  }

  public mutating func pause(at now: Double) { setState(.paused, at: now) }

  public mutating func resume(at now: Double) {
    guard track != nil else { return }
    setState(.playing, at: now)
  }

  /// Moves within the current track (held within it).
  public mutating func seek(to seconds: Double, at now: Double) {
    elapsedAtMark = seconds
    mark = now
    elapsedAtMark = elapsed(at: now)
  }

  public mutating func setVolume(_ level: Double) { volume = min(1, max(0, level)) }

  public mutating func next(at now: Double) {
    guard !queue.isEmpty else { return }
    if index + 1 < queue.count {
      go(to: index + 1, at: now)
    } else if repeatMode == .all {
      go(to: 0, at: now)
    } else {
      go(to: index, at: now)
      state = .paused
    }
  }

  public mutating func previous(at now: Double) {
    guard !queue.isEmpty else { return }
    if elapsed(at: now) > Self.restartThreshold || index == 0 {
      go(to: index, at: now)
    } else {
      go(to: index - 1, at: now)
    }
  }

  /// When the current track ends on the media clock, while it plays; nil when paused or
  /// when the track has no duration.
  public var endOfTrack: Double? {
    guard state == .playing, let track, track.duration > 0 else { return nil }
    return mark + max(0, track.duration - elapsedAtMark)
  }

  /// The current track has played to its end by `now`: the next one plays from the moment
  /// it ended (the same one again under repeat one; at the end of the queue, under repeat
  /// off, playback stops at the start of the last track). False, changing nothing, when it
  /// has not ended.
  @discardableResult
  public mutating func finishTrack(at now: Double) -> Bool {
    guard let end = endOfTrack, now >= end else { return false }
    if repeatMode == .one {
      go(to: index, at: end)
    } else {
      next(at: end)
    }
    return true
  }

  // MARK: Remote commands

  /// The commands the player takes now: none without a track; what a music app offers
  /// otherwise (Protocol/AMS.md, Remote Command).
  public var supportedCommands: [RemoteCommandID] {
    guard track != nil, !app.isEmpty else { return [] }
    return [
      .play, .pause, .togglePlayPause, .nextTrack, .previousTrack, .volumeUp, .volumeDown, .advanceRepeatMode,
      .advanceShuffleMode, .skipForward, .skipBackward,
    ]
  }

  /// Performs a remote command; false when the player does not take it now (nothing changes).
  @discardableResult
  public mutating func perform(_ command: RemoteCommandID, at now: Double) -> Bool {
    guard supportedCommands.contains(command) else { return false }
    switch command {
    case .play: resume(at: now)
    case .pause: pause(at: now)
    case .togglePlayPause: state == .playing ? pause(at: now) : resume(at: now)
    case .nextTrack: next(at: now)
    case .previousTrack: previous(at: now)
    case .volumeUp: setVolume(volume + Self.volumeStep)
    case .volumeDown: setVolume(volume - Self.volumeStep)
    case .advanceRepeatMode: repeatMode = RepeatMode(rawValue: (repeatMode.rawValue + 1) % 3)
    case .advanceShuffleMode: shuffle = ShuffleMode(rawValue: (shuffle.rawValue + 1) % 3)
    case .skipForward: seek(to: elapsed(at: now) + Self.skipInterval, at: now)
    case .skipBackward: seek(to: elapsed(at: now) - Self.skipInterval, at: now)
    default: return false
    }
    return true
  }

  // MARK: The AMS attributes

  /// The text of `attribute` at `now`; nil when it has no value (sent empty): every
  /// attribute while no player has a track (as an iPhone with no media playing), reserved
  /// ones.
  public func value(of attribute: EntityAttribute, at now: Double) -> String? {
    guard !app.isEmpty, track != nil else { return nil }
    switch attribute {
    case .playerName: return app
    case .playbackInfo:
      return PlaybackInfo(state: state, rate: rate, elapsed: elapsed(at: now)).text
    case .volume: return AMSNumber.text(volume)
    case .queueIndex: return String(index)
    case .queueCount: return String(queue.count)
    case .shuffleMode: return String(shuffle.rawValue)
    case .repeatMode: return String(repeatMode.rawValue)
    case .artist: return track?.artist
    case .album: return track?.album
    case .title: return track?.title
    case .duration: return track.map { AMSNumber.text($0.duration) }
    default: return nil
    }
  }

  /// Every attribute's value at `now` (absent ones left out): what a change is measured by.
  public func values(at now: Double) -> [EntityAttribute: String] {
    var all: [EntityAttribute: String] = [:]
    for attribute in EntityAttribute.all { all[attribute] = value(of: attribute, at: now) }
    return all
  }

  private mutating func go(to place: Int, at now: Double) {
    index = place
    elapsedAtMark = 0
    mark = now
  }

  private mutating func setState(_ new: PlaybackState, at now: Double) {
    elapsedAtMark = elapsed(at: now)
    mark = now
    state = new
  }
}

// MARK: - Telling what it does

extension MediaPlayer {
  /// One line: `playing "Tall Bird" by Bartlebeats (Frequency), 1:20 of 3:35, track 1 of 2`.
  public func summary(at now: Double) -> String {
    guard !app.isEmpty else { return "no player (the watch sees no media app)" }
    guard let track else { return "\(app): nothing to play" }
    var line = (state == .playing ? "playing " : "paused at ") + quotedTitle(track)
    if !track.artist.isEmpty { line += " by " + track.artist }
    if !track.album.isEmpty { line += " (\(track.album))" }
    line += ", " + Self.clock(elapsed(at: now))
    if track.duration > 0 { line += " of " + Self.clock(track.duration) }
    if queue.count > 1 { line += ", track \(index + 1) of \(queue.count)" }
    return line
  }

  /// The state for scripts: `app`, `state`, `elapsed`, the track's `title`, `artist`,
  /// `album`, `duration`, the queue's `index` and `count`, `volume`, `shuffle`, `repeat`.
  public func json(at now: Double) -> JSON {
    var pairs: [(String, JSON)] = [
      ("app", .string(app)), ("state", .string(state.name ?? String(state.rawValue))),
      ("elapsed", .number(elapsed(at: now))),
    ]
    if let track {
      pairs += [
        ("title", .string(track.title)), ("artist", .string(track.artist)), ("album", .string(track.album)),
        ("duration", .number(track.duration)),
      ]
    }
    pairs += [
      ("index", .number(Double(index))), ("count", .number(Double(queue.count))), ("volume", .number(volume)),
      ("shuffle", .string(shuffle.name ?? "")), ("repeat", .string(repeatMode.name ?? "")),
    ]
    return .object(pairs)
  }

  private func quotedTitle(_ track: Track) -> String { "\"" + track.title + "\"" }

  /// "3:35", "1:02:03" (`TrackTime.text`).
  public static func clock(_ seconds: Double) -> String { TrackTime.text(seconds) }

  /// Reads "3:35", "1:02:03" or seconds ("215", "80.5"); nil for anything else.
  public static func seconds(_ text: String) -> Double? {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard (1...3).contains(parts.count) else { return nil }
    if parts.count == 1 {
      guard let value = Double(text), value.isFinite, value >= 0, text.first?.isNumber == true else { return nil }
      return value
    }
    var total = 0.0
    for (place, part) in parts.enumerated() {
      guard !part.isEmpty, part.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(part) else { return nil }
      if place > 0 && (part.count != 2 || value > 59) { return nil }
      total = total * 60 + Double(value)
    }
    return total
  }
}
