import Wire

/// One Notification Source notification: EventID(1) EventFlags(1) CategoryID(1)
/// CategoryCount(1) NotificationUID(4), exactly 8 bytes.
public struct NotificationSourceEvent: Hashable, Sendable {
  public static let size = 8

  public var eventID: EventID
  public var eventFlags: EventFlags
  public var categoryID: CategoryID
  public var categoryCount: UInt8
  public var notificationUID: UInt32

  @inlinable public init(
    eventID: EventID, eventFlags: EventFlags = [], categoryID: CategoryID, categoryCount: UInt8,
    notificationUID: UInt32
  ) {
    self.eventID = eventID
    self.eventFlags = eventFlags
    self.categoryID = categoryID
    self.categoryCount = categoryCount
    self.notificationUID = notificationUID
  }
}

extension NotificationSourceEvent {
  /// Decodes exactly 8 bytes; fewer is `truncated`, more is `trailingBytes`.
  @inlinable public init<Bytes: RandomAccessCollection<UInt8>>(decoding bytes: Bytes) throws(ANCSError)
  where Bytes.Index == Int {
    guard bytes.count == Self.size else {
      if bytes.count > Self.size {
        throw ANCSError(
          field: "NotificationSource", offset: Self.size, reason: .trailingBytes(count: bytes.count - Self.size))
      }
      // Like every decoder here, name the incomplete field by where it starts.
      let start = min(bytes.count, 4)
      throw ANCSError(
        field: Self.fieldAt(bytes.count), offset: start,
        reason: .truncated(needed: start < 4 ? 1 : 4, available: bytes.count - start))
    }
    let b = bytes.startIndex
    eventID = EventID(rawValue: bytes[b])
    eventFlags = EventFlags(rawValue: bytes[b + 1])
    categoryID = CategoryID(rawValue: bytes[b + 2])
    categoryCount = bytes[b + 3]
    notificationUID =
      UInt32(bytes[b + 4]) | UInt32(bytes[b + 5]) << 8 | UInt32(bytes[b + 6]) << 16 | UInt32(bytes[b + 7]) << 24
  }

  /// The field that starts or continues at `offset`, for error messages.
  @usableFromInline static func fieldAt(_ offset: Int) -> String {
    ["EventID", "EventFlags", "CategoryID", "CategoryCount", "NotificationUID"][min(offset, 4)]
  }

  @inlinable public func encoded() -> [UInt8] {
    let uid = notificationUID
    return [
      eventID.rawValue, eventFlags.rawValue, categoryID.rawValue, categoryCount,
      UInt8(truncatingIfNeeded: uid), UInt8(truncatingIfNeeded: uid >> 8),
      UInt8(truncatingIfNeeded: uid >> 16), UInt8(truncatingIfNeeded: uid >> 24),
    ]
  }
}
