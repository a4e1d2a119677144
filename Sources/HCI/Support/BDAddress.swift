import Wire

/// A 48-bit Bluetooth device address. On the wire it is 6 bytes, little-endian; it is written
/// most significant byte first ("C0:11:22:33:44:55").
public struct BDAddress: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  /// The address in the low 48 bits.
  public var rawValue: UInt64

  public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

  /// Parses "C0:11:22:33:44:55" (also with '-' or no separators); nil for anything else.
  public init?(_ text: String) {
    guard let bytes = Hex.decode(text), bytes.count == 6 else { return nil }
    self.init(rawValue: littleEndianValue(bytes.reversed()))
  }

  public static let zero = BDAddress(rawValue: 0)

  /// A random static address has its two most significant bits set (Vol 6 Part B 1.3.2.1).
  public var isRandomStatic: Bool { rawValue >> 46 == 0b11 }

  /// A resolvable private address has 0b01 in its two most significant bits: prand (the top
  /// 24 bits) and hash = ah(IRK, prand) (the low 24) (Vol 6 Part B 1.3.2.2).
  public var isResolvablePrivate: Bool { rawValue >> 46 == 0b01 }

  /// Whether this resolvable private address was made with `irk`.
  public func isResolved(by irk: UInt128) -> Bool {
    guard isResolvablePrivate else { return false }
    let hash = try? SMPToolbox.ah(irk, UInt32(truncatingIfNeeded: rawValue >> 24))
    return hash == UInt32(truncatingIfNeeded: rawValue & 0xFF_FFFF)
  }

  public var description: String {
    Hex.encode(littleEndianBytes(rawValue, count: 6).reversed(), separator: ":").uppercased()
  }
}

/// An address type as HCI and SMP carry it (public 0x00, random 0x01; the Enhanced Connection
/// Complete event adds the identity types 0x02 and 0x03). Open.
public struct AddressType: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let `public`: AddressType = 0x00
  public static let random: AddressType = 0x01
  public static let publicIdentity: AddressType = 0x02
  public static let randomIdentity: AddressType = 0x03

  public static let names: [UInt8: String] = [
    0x00: "public", 0x01: "random", 0x02: "publicIdentity", 0x03: "randomIdentity",
  ]
}

/// An address with its type: what f5 and f6 call A1 and A2.
public struct DeviceAddress: Hashable, Sendable, CustomStringConvertible {
  public var type: AddressType
  public var address: BDAddress

  public init(type: AddressType, address: BDAddress) {
    self.type = type
    self.address = address
  }

  /// The 56-bit value of f5 and f6 (Vol 3 Part H 2.2.7): the type (0x00 public, 0x01 random)
  /// as the most significant byte, then the address.
  public var value56: UInt64 { UInt64(type.rawValue & 0x01) << 48 | address.rawValue }

  public var description: String { "\(address) (\(type.name ?? "type \(type.rawValue)"))" }
}
