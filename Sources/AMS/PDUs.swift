import Wire

/// A Remote Command write: one RemoteCommandID.
public struct RemoteCommand: Hashable, Sendable {
  public var command: RemoteCommandID

  public init(_ command: RemoteCommandID) { self.command = command }

  /// Exactly one byte; none is `truncated`, more is `trailingBytes`.
  public init(decoding bytes: [UInt8]) throws(AMSError) {
    guard let first = bytes.first else { throw .truncated("RemoteCommandID", at: 0, in: 0) }
    guard bytes.count == 1 else { throw .trailing("RemoteCommandID", at: 1, in: bytes.count) }
    command = RemoteCommandID(rawValue: first)
  }

  public func encoded() -> [UInt8] { [command.rawValue] }
}

/// A Remote Command notification: the commands the player takes now, one RemoteCommandID a
/// byte (none: no player, or a player that takes nothing).
public struct SupportedCommands: Hashable, Sendable {
  public var commands: [RemoteCommandID]

  public init(_ commands: [RemoteCommandID]) { self.commands = commands }

  /// Any number of bytes, each a RemoteCommandID.
  public init(decoding bytes: [UInt8]) { commands = bytes.map(RemoteCommandID.init(rawValue:)) }

  public func encoded() -> [UInt8] { commands.map(\.rawValue) }
}

/// An Entity Update write: the entity, then the attributes of it the accessory wants to
/// be told about. It replaces what was asked of that entity before; no attribute asks for
/// none (the project's reading, Protocol/AMS.md).
public struct EntityRegistration: Hashable, Sendable {
  public var entity: EntityID
  public var attributes: [UInt8]

  public init(_ entity: EntityID, _ attributes: [UInt8]) {
    self.entity = entity
    self.attributes = attributes
  }

  public init(decoding bytes: [UInt8]) throws(AMSError) {
    guard let first = bytes.first else { throw .truncated("EntityID", at: 0, in: 0) }
    entity = EntityID(rawValue: first)
    attributes = Array(bytes.dropFirst())
  }

  public func encoded() -> [UInt8] { [entity.rawValue] + attributes }

  /// The entity-attribute pairs asked for, each once, in the order first asked: a write that
  /// names an AttributeID twice asks for it once (Protocol/AMS.md).
  public var pairs: [EntityAttribute] {
    var seen: Set<UInt8> = []
    return attributes.filter { seen.insert($0).inserted }.map { EntityAttribute(entity, $0) }
  }
}

/// An Entity Update notification: EntityID(1) AttributeID(1) EntityUpdateFlags(1) Value, the
/// value UTF-8 text to the end of the notification, without a terminator.
public struct EntityUpdate: Hashable, Sendable {
  public static let headerSize = 3

  public var attribute: EntityAttribute
  public var flags: EntityUpdateFlags
  public var value: [UInt8]

  public init(_ attribute: EntityAttribute, flags: EntityUpdateFlags = [], value: [UInt8]) {
    self.attribute = attribute
    self.flags = flags
    self.value = value
  }

  /// `text` as one notification of at most `capacity` bytes (ATT_MTU - 3): a value that does
  /// not fit is cut, never inside a character, and marked `truncated`.
  public init(_ attribute: EntityAttribute, text: String, capacity: Int) {
    let bytes = Array(text.utf8)
    let room = max(0, capacity - Self.headerSize)
    let kept = UTF8Validation.prefixLength(bytes, fitting: room)
    self.init(attribute, flags: kept < bytes.count ? .truncated : [], value: Array(bytes[..<kept]))
  }

  /// At least the three header bytes; the rest is the value.
  public init(decoding bytes: [UInt8]) throws(AMSError) {
    let fields = ["EntityID", "AttributeID", "EntityUpdateFlags"]
    guard bytes.count >= Self.headerSize else {
      throw .truncated(fields[bytes.count], at: bytes.count, in: bytes.count)
    }
    attribute = EntityAttribute(EntityID(rawValue: bytes[0]), bytes[1])
    flags = EntityUpdateFlags(rawValue: bytes[2])
    value = Array(bytes[Self.headerSize...])
  }

  public func encoded() -> [UInt8] {
    [attribute.entity.rawValue, attribute.attribute, flags.rawValue] + value
  }

  /// The value as text; bytes that are not UTF-8 (a value cut inside a character by a
  /// careless phone) become U+FFFD.
  public var text: String { String(decoding: value, as: UTF8.self) }
}

/// An Entity Attribute write: the one attribute whose whole value the next read gives.
public struct EntityAttributeSelection: Hashable, Sendable {
  public static let size = 2

  public var attribute: EntityAttribute

  public init(_ attribute: EntityAttribute) { self.attribute = attribute }

  /// Exactly two bytes: EntityID, AttributeID.
  public init(decoding bytes: [UInt8]) throws(AMSError) {
    let fields = ["EntityID", "AttributeID"]
    guard bytes.count >= Self.size else { throw .truncated(fields[bytes.count], at: bytes.count, in: bytes.count) }
    guard bytes.count == Self.size else { throw .trailing("AttributeID", at: Self.size, in: bytes.count) }
    attribute = EntityAttribute(EntityID(rawValue: bytes[0]), bytes[1])
  }

  public func encoded() -> [UInt8] { [attribute.entity.rawValue, attribute.attribute] }
}
