import Wire

/// The Apple Media Service's UUIDs (Protocol/AMS.md, "Service and characteristics").
public enum AMSUUID {
  public static let service = "89D3502B-0F36-433A-8EF4-C502AD55F8DC"
  /// Written with a RemoteCommandID; notifies the commands the player takes now.
  public static let remoteCommand = "9B3C81D8-57B1-4A8A-B8DF-0E56F7CA51C2"
  /// Written with an entity and the attributes wanted; notifies their values.
  public static let entityUpdate = "2F7CABCE-808D-411F-9A0C-BB92BA96C102"
  /// Written with an entity and one attribute; read for that attribute's whole value.
  public static let entityAttribute = "C6B2F38C-23AB-46D8-A6AB-A3A870BBD5D7"
}

/// A media command (Remote Command).
public struct RemoteCommandID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let play: RemoteCommandID = 0
  public static let pause: RemoteCommandID = 1
  public static let togglePlayPause: RemoteCommandID = 2
  public static let nextTrack: RemoteCommandID = 3
  public static let previousTrack: RemoteCommandID = 4
  public static let volumeUp: RemoteCommandID = 5
  public static let volumeDown: RemoteCommandID = 6
  public static let advanceRepeatMode: RemoteCommandID = 7
  public static let advanceShuffleMode: RemoteCommandID = 8
  public static let skipForward: RemoteCommandID = 9
  public static let skipBackward: RemoteCommandID = 10
  public static let likeTrack: RemoteCommandID = 11
  public static let dislikeTrack: RemoteCommandID = 12
  public static let bookmarkTrack: RemoteCommandID = 13
  public static let names: [UInt8: String] = [
    0: "play", 1: "pause", 2: "togglePlayPause", 3: "nextTrack", 4: "previousTrack", 5: "volumeUp",
    6: "volumeDown", 7: "advanceRepeatMode", 8: "advanceShuffleMode", 9: "skipForward", 10: "skipBackward",
    11: "likeTrack", 12: "dislikeTrack", 13: "bookmarkTrack",
  ]
}

/// What an attribute belongs to: the player (the media app), its queue, or the track.
public struct EntityID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let player: EntityID = 0
  public static let queue: EntityID = 1
  public static let track: EntityID = 2
  public static let names: [UInt8: String] = [0: "player", 1: "queue", 2: "track"]
}

/// One attribute of one entity: the pair an Entity Update names. AttributeIDs are numbered
/// per entity, so the pair is the identity.
public struct EntityAttribute: Hashable, Sendable, CustomStringConvertible {
  public var entity: EntityID
  public var attribute: UInt8

  public init(_ entity: EntityID, _ attribute: UInt8) {
    self.entity = entity
    self.attribute = attribute
  }

  /// The app's localized name.
  public static let playerName = EntityAttribute(.player, 0)
  /// "PlaybackState,PlaybackRate,ElapsedTime" (`PlaybackInfo`).
  public static let playbackInfo = EntityAttribute(.player, 1)
  /// The volume, 0 (silent) to 1 (full).
  public static let volume = EntityAttribute(.player, 2)
  /// The queue's index, zero-based.
  public static let queueIndex = EntityAttribute(.queue, 0)
  /// The number of items in the queue.
  public static let queueCount = EntityAttribute(.queue, 1)
  /// `ShuffleMode`'s value.
  public static let shuffleMode = EntityAttribute(.queue, 2)
  /// `RepeatMode`'s value.
  public static let repeatMode = EntityAttribute(.queue, 3)
  public static let artist = EntityAttribute(.track, 0)
  public static let album = EntityAttribute(.track, 1)
  public static let title = EntityAttribute(.track, 2)
  /// The track's whole duration in seconds.
  public static let duration = EntityAttribute(.track, 3)

  /// Every attribute the specification defines, entity by entity.
  public static let all: [EntityAttribute] = [
    .playerName, .playbackInfo, .volume, .queueIndex, .queueCount, .shuffleMode, .repeatMode, .artist, .album,
    .title, .duration,
  ]

  static let names: [EntityAttribute: String] = [
    .playerName: "name", .playbackInfo: "playbackInfo", .volume: "volume", .queueIndex: "index",
    .queueCount: "count", .shuffleMode: "shuffleMode", .repeatMode: "repeatMode", .artist: "artist",
    .album: "album", .title: "title", .duration: "duration",
  ]

  /// The specification's name ("title"), or nil for a reserved attribute.
  public var name: String? { Self.names[self] }
  public var description: String { "\(entity.name ?? "entity\(entity.rawValue)").\(name ?? "\(attribute)")" }
}

/// The flags of an Entity Update notification.
public struct EntityUpdateFlags: OptionSet, Hashable, Sendable {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  /// The value was cut to fit the notification; read it whole through Entity Attribute.
  public static let truncated = EntityUpdateFlags(rawValue: 1 << 0)
}

/// The ATT error codes AMS answers a write with.
public struct AMSErrorCode: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  /// The accessory has not set AMS up: it wrote Entity Update or Entity Attribute without
  /// being subscribed to Entity Update.
  public static let invalidState: AMSErrorCode = 0xA0
  /// The write was not well formed.
  public static let invalidCommand: AMSErrorCode = 0xA1
  /// The attribute asked for has no value.
  public static let absentAttribute: AMSErrorCode = 0xA2
  public static let names: [UInt8: String] = [0xA0: "invalidState", 0xA1: "invalidCommand", 0xA2: "absentAttribute"]
}

/// The player's state, the first field of PlaybackInfo.
public struct PlaybackState: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let paused: PlaybackState = 0
  public static let playing: PlaybackState = 1
  public static let rewinding: PlaybackState = 2
  public static let fastForwarding: PlaybackState = 3
  public static let names: [UInt8: String] = [0: "paused", 1: "playing", 2: "rewinding", 3: "fastForwarding"]
}

/// The queue's shuffle mode.
public struct ShuffleMode: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let off: ShuffleMode = 0
  public static let one: ShuffleMode = 1
  public static let all: ShuffleMode = 2
  public static let names: [UInt8: String] = [0: "off", 1: "one", 2: "all"]
}

/// The queue's repeat mode.
public struct RepeatMode: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let off: RepeatMode = 0
  public static let one: RepeatMode = 1
  public static let all: RepeatMode = 2
  public static let names: [UInt8: String] = [0: "off", 1: "one", 2: "all"]
}
