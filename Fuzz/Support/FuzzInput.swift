/// Structured input carved out of libFuzzer's bytes. Every read takes bytes from the front
/// and yields zeros (or fewer bytes) once they run out, so any byte string is a valid input
/// and mutations stay meaningful. The seeder writes the same layout with `FuzzInputWriter`.
struct FuzzInput {
  private let bytes: [UInt8]
  private var offset = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  var isAtEnd: Bool { offset >= bytes.count }

  mutating func byte() -> UInt8 {
    guard offset < bytes.count else { return 0 }
    defer { offset += 1 }
    return bytes[offset]
  }

  /// Little-endian, as every multi-byte field of ATT and ANCS.
  mutating func u16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

  mutating func u32() -> UInt32 { UInt32(u16()) | UInt32(u16()) << 16 }

  /// Up to `count` bytes.
  mutating func bytes(_ count: Int) -> [UInt8] {
    let end = min(bytes.count, offset + max(0, count))
    defer { offset = max(offset, end) }
    return offset < end ? Array(bytes[offset..<end]) : []
  }

  /// A length, then that many bytes (fewer at the end). The length takes one byte below
  /// 0x80, otherwise two (15 bits, high byte first), so short chunks cost one byte.
  mutating func chunk() -> [UInt8] {
    let first = Int(byte())
    let length = first < 0x80 ? first : (first & 0x7F) << 8 | Int(byte())
    return bytes(length)
  }

  /// Everything not read yet.
  mutating func rest() -> [UInt8] { bytes(bytes.count - offset) }
}

/// Writes what `FuzzInput` reads.
struct FuzzInputWriter {
  private(set) var bytes: [UInt8] = []

  init() {}

  mutating func byte(_ value: UInt8) { bytes.append(value) }

  mutating func u16(_ value: UInt16) { bytes += [UInt8(truncatingIfNeeded: value), UInt8(value >> 8)] }

  mutating func u32(_ value: UInt32) {
    u16(UInt16(truncatingIfNeeded: value))
    u16(UInt16(value >> 16))
  }

  mutating func chunk(_ value: [UInt8]) {
    let length = min(value.count, 0x7FFF)
    if length < 0x80 {
      byte(UInt8(length))
    } else {
      bytes += [UInt8(0x80 | length >> 8), UInt8(truncatingIfNeeded: length)]
    }
    bytes += value.prefix(length)
  }

  mutating func raw(_ value: [UInt8]) { bytes += value }
}

// The operations of the targets that take a script, shared with the seeder.

/// PhoneControlPoint: after a quirk byte, one operation per step.
enum PhoneOperation: UInt8, CaseIterable {
  /// A Write Request to the Control Point with the next chunk.
  case writeRequest
  /// A Write Command to the Control Point with the next chunk.
  case writeCommand
  /// An Exchange MTU Request with the next u16 as Client Rx MTU.
  case exchangeMTU
  /// Data Source notifications on (next byte odd) or off.
  case dataSourceSubscription
}

/// WatchMachine: after an options byte, one machine input per step.
enum WatchOperation: UInt8, CaseIterable {
  /// sessionStarted, with ATT_MTU 23 + 2 x the next byte.
  case sessionStarted
  /// A Notification Source value of exactly 8 bytes.
  case notificationSourceEvent
  /// A Notification Source value of any length (a chunk).
  case notificationSourceValue
  /// A Data Source value (a chunk).
  case dataSourceValue
  /// An answer to the last Control Point write: its header, then the next chunk, cut into
  /// Data Source values of ATT_MTU - 3 bytes.
  case dataSourceAnswer
  /// The write was answered with a Write Response.
  case writeResponse
  /// The write was answered with the ATT error in the next byte.
  case writeError
  case writeFailed
  /// Time goes by: the next byte x 250 ms, then a tick.
  case tick
  /// The wearer acts: UID (u32), ActionID (byte).
  case perform
  /// The liveness probe's result: subscribed when the next byte is odd.
  case probed
  /// A Current Time value (a chunk).
  case currentTime
  case battery
  /// The link: connecting, connected, reconnecting or stopped (next byte modulo 4).
  case link
}

/// Reassembler: the bits of its first byte, each a departure from the strict policy.
enum ReassemblyBits {
  static let acceptPartial: UInt8 = 1 << 0
  static let rejectUnrequested: UInt8 = 1 << 1
  static let skipUTF8Validation: UInt8 = 1 << 2
  static let ignoreMaximumLength: UInt8 = 1 << 3
  /// The second byte is the fragment capacity (ATT_MTU - 3); without it, unknown.
  static let fragmentCapacity: UInt8 = 1 << 4
}
