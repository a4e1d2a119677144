import Wire

/// A Bluetooth UUID: 16-bit (assigned numbers on the Bluetooth base UUID) or full 128-bit.
/// On the wire both are little-endian; 32-bit UUIDs are not used by ATT.
public enum BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
  case bit16(UInt16)
  /// The 128 bits as one number, most significant first as displayed. A number, not an
  /// array: no allocation per UUID, and no pointer hidden in the enum's spare bits, where
  /// LeakSanitizer would take a static UUID for a leak.
  case bit128(UInt128)

  /// 0000xxxx-0000-1000-8000-00805F9B34FB
  static let base: [UInt8] = [0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]

  /// Parses "2A2B", "0x2A2B" or the canonical 8-4-4-4-12 form. A 128-bit UUID on the base
  /// UUID becomes its 16-bit form, so both spellings compare equal.
  public init?(_ text: String) {
    var hex = text
    if hex.hasPrefix("0x") || hex.hasPrefix("0X") { hex.removeFirst(2) }
    if hex.utf8.count == 4, let bytes = Hex.decode(hex), bytes.count == 2 {
      self = .bit16(UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
      return
    }
    let groups = hex.split(separator: "-", omittingEmptySubsequences: false).map(\.utf8.count)
    guard groups == [8, 4, 4, 4, 12], let bytes = Hex.decode(hex.filter { $0 != "-" }), bytes.count == 16
    else { return nil }
    self.init(bigEndian: bytes)
  }

  init(bigEndian bytes: [UInt8]) {
    if bytes[0] == 0 && bytes[1] == 0 && Array(bytes[4...]) == Array(Self.base[4...]) {
      self = .bit16(UInt16(bytes[2]) << 8 | UInt16(bytes[3]))
    } else {
      self = .bit128(bytes.reduce(0) { $0 << 8 | UInt128($1) })
    }
  }

  /// The 16 bytes of a 128-bit UUID, most significant first.
  static func bigEndianBytes(_ value: UInt128) -> [UInt8] {
    (0..<16).map { UInt8(truncatingIfNeeded: value >> (8 * (15 - $0))) }
  }

  /// Decodes 2 or 16 little-endian bytes; nil for any other length.
  public init?(littleEndian bytes: some Collection<UInt8>) {
    let bytes = Array(bytes)
    switch bytes.count {
    case 2: self = .bit16(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
    case 16: self.init(bigEndian: bytes.reversed())
    default: return nil
    }
  }

  /// 2 bytes for a 16-bit UUID, 16 otherwise, little-endian.
  public var littleEndian: [UInt8] {
    switch self {
    case .bit16(let value): return [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    case .bit128(let value): return Self.bigEndianBytes(value).reversed()
    }
  }

  /// Always 16 bytes, little-endian (a 16-bit UUID expanded on the base UUID).
  public var littleEndian128: [UInt8] {
    switch self {
    case .bit16(let value):
      var bytes = Self.base
      bytes[2] = UInt8(truncatingIfNeeded: value >> 8)
      bytes[3] = UInt8(truncatingIfNeeded: value)
      return bytes.reversed()
    case .bit128(let value): return Self.bigEndianBytes(value).reversed()
    }
  }

  public var is16Bit: Bool {
    if case .bit16 = self { return true }
    return false
  }

  public var description: String {
    switch self {
    case .bit16(let value):
      let text = Hex.encode([UInt8(value >> 8), UInt8(value & 0xff)], separator: "").uppercased()
      return text
    case .bit128(let value):
      let hex = Hex.encode(Self.bigEndianBytes(value), separator: "").uppercased()
      let u = Array(hex)
      return String(u[0..<8]) + "-" + String(u[8..<12]) + "-" + String(u[12..<16]) + "-" + String(u[16..<20]) + "-"
        + String(u[20..<32])
    }
  }
}

extension BluetoothUUID: ExpressibleByIntegerLiteral {
  public init(integerLiteral value: UInt16) { self = .bit16(value) }
}

/// GATT's assigned UUIDs used by this project.
extension BluetoothUUID {
  public static let primaryService: BluetoothUUID = 0x2800
  public static let secondaryService: BluetoothUUID = 0x2801
  public static let include: BluetoothUUID = 0x2802
  public static let characteristic: BluetoothUUID = 0x2803
  public static let characteristicExtendedProperties: BluetoothUUID = 0x2900
  public static let clientCharacteristicConfiguration: BluetoothUUID = 0x2902
  public static let genericAttributeService: BluetoothUUID = 0x1801
  public static let serviceChanged: BluetoothUUID = 0x2A05
}
