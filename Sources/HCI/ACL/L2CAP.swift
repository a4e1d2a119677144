import Wire

/// An L2CAP channel identifier. The LE fixed channels (Vol 3 Part A 2.1) are static members.
public struct ChannelID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public var rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  /// Attribute protocol.
  public static let att = ChannelID(rawValue: 0x0004)
  /// LE L2CAP signaling channel.
  public static let leSignaling = ChannelID(rawValue: 0x0005)
  /// Security Manager protocol.
  public static let smp = ChannelID(rawValue: 0x0006)

  public var description: String {
    switch self {
    case .att: return "ATT(0x0004)"
    case .leSignaling: return "LE signaling(0x0005)"
    case .smp: return "SMP(0x0006)"
    default: return "CID 0x" + Hex.encode([UInt8(rawValue >> 8), UInt8(rawValue & 0xFF)], separator: "")
    }
  }
}

/// The basic L2CAP header (Vol 3 Part A 3.1): Length(2) Channel_ID(2), little-endian.
public enum L2CAPBasicHeader {
  public static let size = 4
}

/// A basic-mode L2CAP frame (B-frame): one PDU for one channel.
public struct L2CAPFrame: Hashable, Sendable {
  public var channel: ChannelID
  public var payload: [UInt8]

  public init(channel: ChannelID, payload: [UInt8]) {
    self.channel = channel
    self.payload = payload
  }

  /// Decodes a whole PDU; the header's length must match the payload.
  public init(decoding bytes: [UInt8]) throws(HCIDecodeError) {
    self = try decodeWhole(bytes, packet: "L2CAP B-frame") { reader in
      let length = Int(try reader.u16("Length"))
      let channel = ChannelID(rawValue: try reader.u16("Channel_ID"))
      return L2CAPFrame(channel: channel, payload: try reader.bytes(length, "Information payload"))
    }
  }

  /// The PDU; a payload over 65,535 bytes is cut (no LE channel carries one).
  public var encoded: [UInt8] {
    var writer = ByteWriter(capacity: L2CAPBasicHeader.size + payload.count)
    let payload = payload.prefix(Int(UInt16.max))
    writer.u16(UInt16(payload.count))
    writer.u16(channel.rawValue)
    writer.append(payload)
    return writer.bytes
  }
}
