import Wire

// Byte order in this target: HCI, L2CAP and SMP fields are little-endian on the wire, read and
// written here with ByteReader/ByteWriter. 128-bit values (keys, randoms, confirm values) are
// `UInt128` numbers, so they have no byte order until they are written; 256-bit P-256 values
// are `P256Coordinate`, which keeps the big-endian bytes the Core spec prints.

extension UInt128 {
  /// The number whose most significant byte comes first in `bytes` (16 bytes).
  init(bigEndianBytes bytes: some Collection<UInt8>) {
    self = bytes.reduce(0) { $0 << 8 | UInt128($1) }
  }

  /// 16 bytes, most significant first (the order AES and AES-CMAC take, and the spec prints).
  var bigEndianBytes: [UInt8] {
    (0..<16).map { UInt8(truncatingIfNeeded: self >> (8 * (15 - $0))) }
  }
}

/// The little-endian bytes of the low `count` bytes of `value`.
func littleEndianBytes(_ value: UInt64, count: Int) -> [UInt8] {
  (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
}

/// The number spelled by little-endian `bytes` (at most 8).
func littleEndianValue(_ bytes: some Sequence<UInt8>) -> UInt64 {
  var value: UInt64 = 0
  for (index, byte) in bytes.enumerated() { value |= UInt64(byte) << (8 * index) }
  return value
}

extension ByteReader where Bytes == [UInt8] {
  mutating func u64(_ field: String) throws(ReadError) -> UInt64 {
    littleEndianValue(try bytes(8, field))
  }

  mutating func u128(_ field: String) throws(ReadError) -> UInt128 {
    UInt128(bigEndianBytes: try bytes(16, field).reversed())
  }

  mutating func address(_ field: String) throws(ReadError) -> BDAddress {
    BDAddress(rawValue: littleEndianValue(try bytes(6, field)))
  }

  /// A one-byte value that must be at most `maximum`; otherwise a `FieldError`.
  mutating func u8(_ field: String, atMost maximum: UInt8) throws -> UInt8 {
    let at = offset
    let value = try u8(field)
    if value > maximum { throw FieldError(field: field, offset: at, reason: .invalid("\(value) is over \(maximum)")) }
    return value
  }
}

extension ByteWriter {
  mutating func u64(_ value: UInt64) { append(littleEndianBytes(value, count: 8)) }
  mutating func u128(_ value: UInt128) { append(value.bigEndianBytes.reversed()) }
  mutating func address(_ value: BDAddress) { append(littleEndianBytes(value.rawValue, count: 6)) }
}
