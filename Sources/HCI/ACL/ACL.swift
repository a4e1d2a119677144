import Wire

/// The Packet_Boundary_Flag of an ACL data packet (Vol 4 Part E 5.4.2).
public struct PacketBoundary: RawRepresentable, Hashable, Sendable {
  /// Two bits.
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue & 0b11 }

  /// 0b00: first fragment of a non-automatically-flushable L2CAP PDU, host to controller.
  public static let firstNonFlushable = PacketBoundary(rawValue: 0b00)
  /// 0b01: continuing fragment.
  public static let continuing = PacketBoundary(rawValue: 0b01)
  /// 0b10: first fragment of an automatically flushable L2CAP PDU (what an LE controller sends
  /// the host).
  public static let firstFlushable = PacketBoundary(rawValue: 0b10)
  /// 0b11: a complete automatically flushable PDU (not used on LE).
  public static let complete = PacketBoundary(rawValue: 0b11)
}

/// An HCI ACL data packet (Vol 4 Part E 5.4.2): Handle(12 bits) PB_Flag(2) BC_Flag(2)
/// Data_Total_Length(2) Data, little-endian.
public struct ACLPacket: Hashable, Sendable {
  /// The connection handle (12 bits; 0x0000 to 0x0EFF are valid).
  public var handle: UInt16
  public var packetBoundary: PacketBoundary
  /// Broadcast_Flag (2 bits); 0b00 on LE.
  public var broadcast: UInt8
  public var data: [UInt8]

  public init(handle: UInt16, packetBoundary: PacketBoundary, broadcast: UInt8 = 0, data: [UInt8]) {
    self.handle = handle & 0x0FFF
    self.packetBoundary = packetBoundary
    self.broadcast = broadcast & 0b11
    self.data = data
  }

  /// Decodes a packet (without the H4 indicator); Data_Total_Length must match the data.
  public init(decoding bytes: [UInt8]) throws(HCIDecodeError) {
    self = try decodeWhole(bytes, packet: "HCI ACL data") { reader in
      let header = try reader.u16("Handle")
      let length = Int(try reader.u16("Data_Total_Length"))
      return ACLPacket(
        handle: header & 0x0FFF, packetBoundary: PacketBoundary(rawValue: UInt8(header >> 12 & 0b11)),
        broadcast: UInt8(header >> 14), data: try reader.bytes(length, "Data"))
    }
  }

  /// The packet; data over 65,535 bytes is cut (fragmentation never builds it).
  public var encoded: [UInt8] {
    var writer = ByteWriter(capacity: 4 + data.count)
    writer.u16(handle & 0x0FFF | UInt16(packetBoundary.rawValue) << 12 | UInt16(broadcast & 0b11) << 14)
    let data = data.prefix(Int(UInt16.max))
    writer.u16(UInt16(data.count))
    writer.append(data)
    return writer.bytes
  }

  /// Splits an L2CAP PDU into ACL packets of at most `bufferSize` data bytes (the controller's
  /// LE_ACL_Data_Packet_Length): the first with PB 0b00 (host to controller, non-flushable),
  /// the rest 0b01. A buffer size under 1 is taken as 1. An empty PDU is one empty packet.
  public static func fragments(of pdu: [UInt8], handle: UInt16, bufferSize: Int) -> [ACLPacket] {
    let size = max(1, min(bufferSize, Int(UInt16.max)))
    var packets: [ACLPacket] = []
    var start = 0
    repeat {
      let end = min(start + size, pdu.count)
      packets.append(
        ACLPacket(
          handle: handle, packetBoundary: start == 0 ? .firstNonFlushable : .continuing, data: Array(pdu[start..<end])))
      start = end
    } while start < pdu.count
    return packets
  }
}

/// Why fragments from the controller do not make an L2CAP PDU.
public enum ACLReassemblyError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A continuing fragment with no PDU started on that handle; it is dropped.
  case continuationWithoutStart(handle: UInt16)
  /// The fragments hold more bytes than the L2CAP length announced; the PDU is dropped.
  case lengthMismatch(handle: UInt16, expected: Int, received: Int)
  /// PB 0b11 (complete, automatically flushable) is not used on LE; the packet is dropped.
  case unexpectedPacketBoundary(handle: UInt16, flag: UInt8)

  public var description: String {
    switch self {
    case .continuationWithoutStart(let handle): return "ACL handle \(handle): continuing fragment without a start"
    case .lengthMismatch(let handle, let expected, let received):
      return "ACL handle \(handle): L2CAP PDU of \(expected) bytes, fragments carry \(received)"
    case .unexpectedPacketBoundary(let handle, let flag):
      return "ACL handle \(handle): packet boundary flag 0b\(String(flag, radix: 2)) is not used on LE"
    }
  }
}

/// Reassembles L2CAP PDUs from the ACL fragments a controller sends: a start (PB 0b10, or
/// 0b00) and continuations (0b01), per connection handle. The PDU's length comes from its
/// L2CAP basic header, so fragments of any size are taken, including ones larger than the
/// buffer size the controller advertised (Bumble's virtual controller sends those). Pure.
public struct ACLReassembler: Sendable {
  private var partial: [UInt16: [UInt8]] = [:]
  /// Partial PDUs dropped because a start fragment arrived before they were complete. The new
  /// start is kept (as Linux does); the count lets a host log it.
  public private(set) var interruptedPDUs = 0

  public init() {}

  /// Handles with a PDU in progress.
  public var pendingHandles: [UInt16] { partial.keys.sorted() }

  /// Forgets a handle's partial PDU (on disconnection).
  public mutating func reset(handle: UInt16) { partial[handle] = nil }

  /// Takes one fragment; returns the PDU it completes (L2CAP header included), or nil while one
  /// is incomplete.
  public mutating func push(_ packet: ACLPacket) throws(ACLReassemblyError) -> [UInt8]? {
    let handle = packet.handle
    switch packet.packetBoundary {
    case .firstFlushable, .firstNonFlushable:
      if partial[handle] != nil { interruptedPDUs += 1 }
      partial[handle] = packet.data
      return try complete(handle)
    case .continuing:
      guard partial[handle] != nil else { throw .continuationWithoutStart(handle: handle) }
      partial[handle, default: []].append(contentsOf: packet.data)
      return try complete(handle)
    default:
      throw .unexpectedPacketBoundary(handle: handle, flag: packet.packetBoundary.rawValue)
    }
  }

  /// The whole PDU once the bytes gathered on `handle` reach the length its header announces.
  private mutating func complete(_ handle: UInt16) throws(ACLReassemblyError) -> [UInt8]? {
    guard let bytes = partial[handle], let expected = Self.expectedLength(bytes) else { return nil }
    if bytes.count < expected { return nil }
    partial[handle] = nil
    if bytes.count > expected { throw .lengthMismatch(handle: handle, expected: expected, received: bytes.count) }
    return bytes
  }

  /// The L2CAP basic header's length plus the header, once its length field has arrived.
  private static func expectedLength(_ bytes: [UInt8]) -> Int? {
    guard bytes.count >= 2 else { return nil }
    return L2CAPBasicHeader.size + (Int(bytes[0]) | Int(bytes[1]) << 8)
  }
}
