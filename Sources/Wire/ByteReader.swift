/// Why a read from a byte string failed, and where.
public struct ReadError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: Hashable, Sendable {
    /// The bytes ended before `field` was complete.
    case truncated(needed: Int, available: Int)
    /// A NUL-terminated string had no NUL before the end.
    case missingTerminator
    /// Bytes that must be UTF-8 are not.
    case invalidUTF8
  }
  /// The field being read, in the spec's words (for example "NotificationUID").
  public var field: String
  /// Byte offset of the field from the start of the PDU.
  public var offset: Int
  public var reason: Reason

  public init(field: String, offset: Int, reason: Reason) {
    self.field = field
    self.offset = offset
    self.reason = reason
  }

  public var description: String {
    switch reason {
    case .truncated(let needed, let available):
      return "\(field) at byte \(offset): needs \(needed) byte(s), \(available) left"
    case .missingTerminator:
      return "\(field) at byte \(offset): no NUL terminator"
    case .invalidUTF8:
      return "\(field) at byte \(offset): not valid UTF-8"
    }
  }
}

/// Reads little-endian fields from a byte string, tracking the offset for error messages.
public struct ByteReader<Bytes: RandomAccessCollection<UInt8>>: Sendable where Bytes: Sendable, Bytes.Index == Int {
  public let bytes: Bytes
  /// Offset of the next byte to read, counted from `bytes.startIndex`.
  public var offset: Int

  @inlinable public init(_ bytes: Bytes) {
    self.bytes = bytes
    self.offset = 0
  }

  @inlinable public var remaining: Int { bytes.count - offset }
  @inlinable public var isAtEnd: Bool { offset >= bytes.count }

  @inlinable func need(_ count: Int, _ field: String) throws(ReadError) {
    if remaining < count {
      throw ReadError(field: field, offset: offset, reason: .truncated(needed: count, available: remaining))
    }
  }

  @inlinable public mutating func u8(_ field: String) throws(ReadError) -> UInt8 {
    try need(1, field)
    defer { offset += 1 }
    return bytes[bytes.startIndex + offset]
  }

  @inlinable public mutating func u16(_ field: String) throws(ReadError) -> UInt16 {
    try need(2, field)
    let base = bytes.startIndex + offset
    offset += 2
    return UInt16(bytes[base]) | UInt16(bytes[base + 1]) << 8
  }

  @inlinable public mutating func u32(_ field: String) throws(ReadError) -> UInt32 {
    try need(4, field)
    let base = bytes.startIndex + offset
    offset += 4
    return UInt32(bytes[base]) | UInt32(bytes[base + 1]) << 8 | UInt32(bytes[base + 2]) << 16
      | UInt32(bytes[base + 3]) << 24
  }

  /// Reads exactly `count` bytes.
  @inlinable public mutating func bytes(_ count: Int, _ field: String) throws(ReadError) -> [UInt8] {
    try need(count, field)
    let base = bytes.startIndex + offset
    offset += count
    return Array(bytes[base..<base + count])
  }

  /// Reads everything that is left.
  @inlinable public mutating func rest() -> [UInt8] {
    let base = bytes.startIndex + offset
    offset = bytes.count
    return Array(bytes[base..<bytes.endIndex])
  }

  /// Reads a NUL-terminated UTF-8 string and consumes its terminator.
  @inlinable public mutating func cString(_ field: String) throws(ReadError) -> String {
    let start = bytes.startIndex + offset
    guard let nul = bytes[start...].firstIndex(of: 0) else {
      throw ReadError(field: field, offset: offset, reason: .missingTerminator)
    }
    guard let text = String(validatingUTF8Bytes: bytes[start..<nul]) else {
      throw ReadError(field: field, offset: offset, reason: .invalidUTF8)
    }
    offset = nul - bytes.startIndex + 1
    return text
  }
}

extension String {
  /// The string these bytes spell in UTF-8, or nil when they are not valid UTF-8.
  /// (Unlike `String(decoding:as:)`, which silently repairs bad input.)
  @inlinable public init?(validatingUTF8Bytes bytes: some Collection<UInt8>) {
    guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
    self = text
  }
}
