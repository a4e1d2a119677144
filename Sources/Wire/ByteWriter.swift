/// Appends little-endian fields to a byte array.
public struct ByteWriter: Sendable {
  public var bytes: [UInt8]

  @inlinable public init(capacity: Int = 16) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  @inlinable public mutating func u8(_ value: UInt8) { bytes.append(value) }

  @inlinable public mutating func u16(_ value: UInt16) {
    bytes.append(UInt8(truncatingIfNeeded: value))
    bytes.append(UInt8(truncatingIfNeeded: value >> 8))
  }

  @inlinable public mutating func u32(_ value: UInt32) {
    bytes.append(UInt8(truncatingIfNeeded: value))
    bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    bytes.append(UInt8(truncatingIfNeeded: value >> 16))
    bytes.append(UInt8(truncatingIfNeeded: value >> 24))
  }

  @inlinable public mutating func append(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

  /// Appends the string's UTF-8 bytes followed by a NUL.
  @inlinable public mutating func cString(_ text: String) {
    bytes.append(contentsOf: text.utf8)
    bytes.append(0)
  }
}
