import Wire

/// One AttributeID(1) Length(2) Value tuple of a Data Source response.
public struct AttributeTuple<ID: OpenByteID>: Hashable, Sendable, CustomStringConvertible {
  public var id: ID
  public var value: [UInt8]

  public init(_ id: ID, _ value: [UInt8]) {
    self.id = id
    self.value = value
  }

  public init(_ id: ID, text: String) {
    self.init(id, Array(text.utf8))
  }

  /// The value as text; invalid UTF-8 is repaired with U+FFFD.
  public var text: String { String(decoding: value, as: UTF8.self) }

  public var description: String { "\(id)=\"\(text)\"" }
}

public typealias NotificationAttribute = AttributeTuple<NotificationAttributeID>
public typealias AppAttribute = AttributeTuple<AppAttributeID>

/// The Data Source answer to Get Notification Attributes: CommandID 0, NotificationUID(4), tuples.
public struct NotificationAttributesResponse: Hashable, Sendable {
  public var notificationUID: UInt32
  public var attributes: [NotificationAttribute]
  /// Requested attributes that never arrived (only with a lenient reassembly policy).
  public var missing: [NotificationAttributeID]

  public init(notificationUID: UInt32, attributes: [NotificationAttribute], missing: [NotificationAttributeID] = []) {
    self.notificationUID = notificationUID
    self.attributes = attributes
    self.missing = missing
  }

  /// The first tuple with this ID, if any.
  public subscript(id: NotificationAttributeID) -> NotificationAttribute? {
    attributes.first { $0.id == id }
  }
}

/// The Data Source answer to Get App Attributes: CommandID 1, AppIdentifier NUL-terminated, tuples.
public struct AppAttributesResponse: Hashable, Sendable {
  public var appIdentifier: String
  public var attributes: [AppAttribute]
  public var missing: [AppAttributeID]

  public init(appIdentifier: String, attributes: [AppAttribute], missing: [AppAttributeID] = []) {
    self.appIdentifier = appIdentifier
    self.attributes = attributes
    self.missing = missing
  }

  public subscript(id: AppAttributeID) -> AppAttribute? {
    attributes.first { $0.id == id }
  }
}

/// A complete Data Source response.
public enum DataSourceResponse: Hashable, Sendable {
  case notificationAttributes(NotificationAttributesResponse)
  case appAttributes(AppAttributesResponse)
}

extension DataSourceResponse {
  /// Encodes the whole response; split it with `fragments(maximumSize:)` for the wire.
  public func encoded() -> [UInt8] {
    // Sized exactly, so the bytes are allocated once.
    let size: Int
    switch self {
    case .notificationAttributes(let response): size = 5 + Self.size(of: response.attributes)
    case .appAttributes(let response): size = 2 + response.appIdentifier.utf8.count + Self.size(of: response.attributes)
    }
    var writer = ByteWriter(capacity: size)
    switch self {
    case .notificationAttributes(let response):
      writer.u8(CommandID.getNotificationAttributes.rawValue)
      writer.u32(response.notificationUID)
      Self.write(response.attributes, to: &writer)
    case .appAttributes(let response):
      writer.u8(CommandID.getAppAttributes.rawValue)
      writer.cString(response.appIdentifier)
      Self.write(response.attributes, to: &writer)
    }
    return writer.bytes
  }

  static func size<ID>(of tuples: [AttributeTuple<ID>]) -> Int {
    tuples.reduce(0) { $0 + 3 + $1.value.count }
  }

  static func write<ID>(_ tuples: [AttributeTuple<ID>], to writer: inout ByteWriter) {
    for tuple in tuples {
      writer.u8(tuple.id.rawValue)
      writer.u16(UInt16(truncatingIfNeeded: tuple.value.count))
      writer.append(tuple.value)
    }
  }

  /// Decodes a whole response held in one buffer, without knowing the request: every tuple
  /// up to the end is taken. Values must be UTF-8 (all ANCS attributes are text).
  public init(decoding bytes: [UInt8]) throws(ANCSError) {
    var reassembler = DataSourceReassembler(expecting: .anything)
    guard let response = try reassembler.feed(bytes) else {
      // Incomplete: finish() throws, naming the field the bytes stopped in and its offset.
      self = try reassembler.finish()
      return
    }
    self = response
  }
}

/// Splits a response into Data Source notifications of at most `maximumSize` bytes
/// (ATT_MTU - 3; a size below 1 is taken as 1). An empty response yields no fragments.
public func dataSourceFragments(_ bytes: [UInt8], maximumSize: Int) -> [ArraySlice<UInt8>] {
  let size = max(1, maximumSize)
  return stride(from: 0, to: bytes.count, by: size).map {
    bytes[$0..<min($0 + size, bytes.count)]
  }
}
