import AMS
import Wire

/// What the watch knows of the phone's media player through the Apple Media Service
/// (Protocol/AMS.md): plain values the face shows.
public struct NowPlaying: Hashable, Sendable {
  /// The phone publishes AMS and the watch subscribed to it on this link.
  public var available = false
  /// The remote commands the phone's player takes now.
  public var commands: [RemoteCommandID] = []
  /// Each attribute's text as last told (whole, once read whole); absent ones are left out.
  public var values: [EntityAttribute: String] = [:]
  /// Attributes the phone cut to fit a notification and the watch has not read whole.
  public var truncated: Set<EntityAttribute> = []
  /// PlaybackInfo as last told, and when it came (engine clock).
  public var playback: PlaybackInfo?
  public var playbackAt: Duration = .zero

  public init() {}

  public var playerName: String { values[.playerName] ?? "" }
  public var title: String { values[.title] ?? "" }
  public var artist: String { values[.artist] ?? "" }
  public var album: String { values[.album] ?? "" }
  /// The track's length in seconds, when the phone said (a negative one is none).
  public var duration: Double? { values[.duration].flatMap { Self.number($0) }.flatMap { $0 >= 0 ? $0 : nil } }
  /// 0 to 1, when the phone said (a value outside is none: the phone's text is not trusted).
  public var volume: Double? { values[.volume].flatMap { Self.number($0) }.flatMap { (0...1).contains($0) ? $0 : nil } }
  public var isPlaying: Bool { playback.map { $0.state == .playing && $0.rate != 0 } ?? false }
  /// A player with a track: something for the now-playing screen.
  public var hasTrack: Bool { !title.isEmpty }

  /// Seconds into the track at `now`: ElapsedTime moved on by PlaybackRate since the value
  /// came, as the specification tells an accessory to work it out, held within the track.
  public func elapsed(at now: Duration) -> Double? {
    guard let playback else { return nil }
    let since = now - playbackAt
    let seconds = Double(since.components.seconds) + Double(since.components.attoseconds) / 1e18
    let moved = max(0, playback.elapsed(after: max(0, seconds)))
    return duration.map { $0 > 0 ? min(moved, $0) : moved } ?? moved
  }

  static func number(_ text: String) -> Double? {
    try? AMSNumber.parse(Substring(text), field: "", offset: 0)
  }
}

/// What the watch asks of the phone's Apple Media Service; `MediaClient` decides, the
/// engine writes and reads.
public enum MediaRequest: Hashable, Sendable {
  /// Write Entity Update: register for these attributes of one entity.
  case register(EntityRegistration)
  /// Write Entity Attribute to select the attribute, then read it whole.
  case readWhole(EntityAttribute)
  /// Write Remote Command.
  case remote(RemoteCommandID)
}

/// Why a media request failed: the ATT error code (an AMS one, say) or what went wrong
/// without an answer.
public struct MediaFailure: Error, Hashable, Sendable, CustomStringConvertible {
  public var code: UInt8?
  public var reason: String

  public init(code: UInt8?, reason: String) {
    self.code = code
    self.reason = reason
  }

  public var description: String {
    guard let code else { return reason }
    if let name = AMSErrorCode(rawValue: code).name { return "\(name) (\(hex(code)))" }
    return reason
  }

  private func hex(_ code: UInt8) -> String {
    let digits = String(code, radix: 16, uppercase: true)
    return "0x" + (digits.count < 2 ? "0" : "") + digits
  }
}

/// The watch's Apple Media Service client as a plain value, beside `WatchMachine`'s ANCS:
/// registers for what the now-playing screen shows, takes the phone's updates in, reads whole
/// the text the phone cut, and sends the wearer's remote commands when the player takes them.
/// No I/O: it returns `MediaRequest`s and events through the machine's actions.
public struct MediaClient: Sendable {
  public enum Input: Sendable {
    /// AMS set up on a new link: found and its two notifying characteristics subscribed
    /// (false: the phone publishes no AMS, or subscribing failed).
    case started(available: Bool)
    /// A Remote Command notification: the commands the player takes now.
    case commands([UInt8])
    /// An Entity Update notification.
    case update([UInt8])
    /// A request was answered: the value read for `readWhole`, empty for the writes.
    case answered(MediaRequest, Result<[UInt8], MediaFailure>)
    /// The wearer asks for a remote command.
    case command(RemoteCommandID)
  }

  /// What the watch registers for: every attribute the now-playing screen shows.
  public static let registrations = [
    EntityRegistration(.player, [EntityAttribute.playerName, .playbackInfo, .volume].map(\.attribute)),
    EntityRegistration(.queue, [EntityAttribute.queueIndex, .queueCount, .shuffleMode, .repeatMode].map(\.attribute)),
    EntityRegistration(.track, [EntityAttribute.artist, .album, .title, .duration].map(\.attribute)),
  ]
  /// The text the screen shows whole: read through Entity Attribute when the phone cut it.
  public static let shownWhole: Set<EntityAttribute> = [.title, .artist, .album]

  /// The client's decisions, computed once from the options: a fault switch (`WatchFaults`)
  /// changes a field here, never a branch in the rules below.
  struct Policy: Sendable {
    /// A value the phone cut is read whole when the screen shows it (false: FAULT
    /// no-whole-read).
    var readsCutValuesWhole = true
    /// A command is written only when the player lists it (false: FAULT commands-unchecked).
    var checksCommands = true
    /// Where an Entity Update's value starts: after EntityID, AttributeID and
    /// EntityUpdateFlags (2: FAULT entity-update-flags-as-value, the flags byte taken as the
    /// value's first).
    var valueOffset = 3

    init(_ faults: WatchFaults = []) {
      readsCutValuesWhole = !faults.contains(.noWholeRead)
      checksCommands = !faults.contains(.commandsUnchecked)
      valueOffset = faults.contains(.entityUpdateFlagsAsValue) ? 2 : 3
    }
  }

  let policy: Policy
  /// Attributes to read whole, in the order they were cut; one read at a time (the Entity
  /// Attribute selection is one per connection).
  var wholeQueue: [EntityAttribute] = []
  var wholeInFlight: EntityAttribute?

  init(policy: Policy) { self.policy = policy }

  public init() { self.init(policy: Policy()) }

  /// Handles one input at `now`, changing `playing` and appending the machine's actions.
  mutating func handle(
    _ input: Input, _ playing: inout NowPlaying, now: Duration, _ out: inout [WatchMachine.Action]
  ) {
    switch input {
    case .started(let available):
      // Reads in flight belong to the session before. What the phone told (the commands
      // come as soon as their notifications are enabled, before this) stays: the
      // registrations bring every value again.
      self = MediaClient(policy: policy)
      guard available else {
        playing = NowPlaying()
        return
      }
      playing.available = true
      for registration in Self.registrations { out.append(.media(.register(registration))) }
    case .commands(let bytes):
      let commands = SupportedCommands(decoding: bytes).commands
      guard commands != playing.commands else { return }
      playing.commands = commands
      out.append(.emit(.mediaCommands(commands)))
    case .update(let bytes):
      update(bytes, &playing, now: now, &out)
    case .answered(let request, let result):
      answered(request, result, &playing, &out)
    case .command(let command):
      let name = command.name ?? "command \(command.rawValue)"
      if !playing.available {
        out.append(.emit(.error("\(name): the phone publishes no Apple Media Service on this link")))
      } else if policy.checksCommands && !playing.commands.contains(command) {
        out.append(.emit(.error("\(name): the phone's player does not take it now")))
      } else {
        out.append(.media(.remote(command)))
      }
    }
    readNext(&out)
  }

  private mutating func update(
    _ bytes: [UInt8], _ playing: inout NowPlaying, now: Duration, _ out: inout [WatchMachine.Action]
  ) {
    var update: EntityUpdate
    do { update = try EntityUpdate(decoding: bytes) } catch {
      out.append(.emit(.error("Entity Update: \(error); ignored")))
      return
    }
    if policy.valueOffset != 3 { update.value = Array(bytes.dropFirst(policy.valueOffset)) }
    let attribute = update.attribute
    let cut = update.flags.contains(.truncated)
    if attribute == .playbackInfo && update.value.isEmpty {
      playing.playback = nil
    } else if attribute == .playbackInfo {
      do {
        playing.playback = try PlaybackInfo(text: update.text)
        playing.playbackAt = now
      } catch {
        out.append(.emit(.error("Entity Update: PlaybackInfo \(error); ignored")))
        return
      }
    }
    set(attribute, update.text, cut: cut, &playing, &out)
    if !cut {
      wholeQueue.removeAll { $0 == attribute }
    } else if policy.readsCutValuesWhole && Self.shownWhole.contains(attribute) && !wholeQueue.contains(attribute) {
      wholeQueue.append(attribute)
    }
  }

  private mutating func answered(
    _ request: MediaRequest, _ result: Result<[UInt8], MediaFailure>, _ playing: inout NowPlaying,
    _ out: inout [WatchMachine.Action]
  ) {
    switch (request, result) {
    case (.readWhole(let attribute), .success(let bytes)):
      wholeInFlight = nil
      // A value that got shorter since it was cut is a newer one: the update that brings it
      // is on its way, and the read did not lose anything.
      set(attribute, String(decoding: bytes, as: UTF8.self), cut: false, &playing, &out)
    case (.readWhole(let attribute), .failure(let failure)):
      wholeInFlight = nil
      out.append(.emit(.error("reading \(attribute) whole: \(failure)")))
    case (.register(let registration), .failure(let failure)):
      let entity = registration.entity.name ?? "entity \(registration.entity.rawValue)"
      out.append(.emit(.error("registering for the \(entity)'s attributes: \(failure)")))
    case (.remote(let command), .success):
      out.append(.emit(.remoteCommand(command)))
    case (.remote(let command), .failure(let failure)):
      out.append(.emit(.error("\(command.name ?? "command \(command.rawValue)") refused: \(failure)")))
    case (.register, .success):
      break
    }
  }

  /// Records a value and reports it when it changed.
  private func set(
    _ attribute: EntityAttribute, _ text: String, cut: Bool, _ playing: inout NowPlaying,
    _ out: inout [WatchMachine.Action]
  ) {
    let old = playing.values[attribute]
    let wasCut = playing.truncated.contains(attribute)
    if text.isEmpty { playing.values[attribute] = nil } else { playing.values[attribute] = text }
    if cut { playing.truncated.insert(attribute) } else { playing.truncated.remove(attribute) }
    // PlaybackInfo is news each time it has a value: its elapsed time restarts the progress.
    let restarts = attribute == .playbackInfo && !text.isEmpty
    guard old != playing.values[attribute] || wasCut != cut || restarts else { return }
    out.append(.emit(.media(attribute, value: text, truncated: cut)))
  }

  private mutating func readNext(_ out: inout [WatchMachine.Action]) {
    guard wholeInFlight == nil, !wholeQueue.isEmpty else { return }
    let attribute = wholeQueue.removeFirst()
    wholeInFlight = attribute
    out.append(.media(.readWhole(attribute)))
  }
}

extension RemoteCommandID {
  /// The words a wearer's command is typed as (`media next` to `ancs watch --headless`), in
  /// help order; the specification's names (`nextTrack`) are taken too.
  public static let words: KeyValuePairs<String, RemoteCommandID> = [
    "play": .play, "pause": .pause, "toggle": .togglePlayPause, "next": .nextTrack, "previous": .previousTrack,
    "volume-up": .volumeUp, "volume-down": .volumeDown, "repeat": .advanceRepeatMode, "shuffle": .advanceShuffleMode,
    "forward": .skipForward, "back": .skipBackward, "like": .likeTrack, "dislike": .dislikeTrack,
    "bookmark": .bookmarkTrack,
  ]

  /// The command a word names (`next`, `nextTrack`), or nil.
  public init?(word: String) {
    guard let found = Self.words.first(where: { $0.key == word })?.value ?? Self(name: word) else { return nil }
    self = found
  }
}
