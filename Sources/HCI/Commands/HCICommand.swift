import Wire

/// An HCI command opcode: OGF (6 bits) and OCF (10 bits), little-endian on the wire
/// (Vol 4 Part E 5.4.1).
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public var rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  public init(ogf: UInt8, ocf: UInt16) {
    rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x3FF)
  }

  public var ogf: UInt8 { UInt8(rawValue >> 10) }
  public var ocf: UInt16 { rawValue & 0x3FF }

  /// Link Control, Controller & Baseband, Informational parameters, LE Controller.
  static func linkControl(_ ocf: UInt16) -> HCIOpcode { HCIOpcode(ogf: 0x01, ocf: ocf) }
  static func controller(_ ocf: UInt16) -> HCIOpcode { HCIOpcode(ogf: 0x03, ocf: ocf) }
  static func informational(_ ocf: UInt16) -> HCIOpcode { HCIOpcode(ogf: 0x04, ocf: ocf) }
  static func le(_ ocf: UInt16) -> HCIOpcode { HCIOpcode(ogf: 0x08, ocf: ocf) }

  public var description: String {
    "0x" + Hex.encode([UInt8(rawValue >> 8), UInt8(rawValue & 0xFF)], separator: "")
      + " (OGF 0x\(String(ogf, radix: 16)), OCF 0x\(String(ocf, radix: 16)))"
  }
}

/// An HCI command packet (Vol 4 Part E 5.4.1): Opcode(2) Parameter_Total_Length(1) parameters.
public struct HCICommandPacket: Hashable, Sendable {
  public var opcode: HCIOpcode
  public var parameters: [UInt8]

  public init(opcode: HCIOpcode, parameters: [UInt8]) {
    self.opcode = opcode
    self.parameters = parameters
  }

  public init(decoding bytes: [UInt8]) throws(HCIDecodeError) {
    self = try decodeWhole(bytes, packet: "HCI command") { reader in
      let opcode = HCIOpcode(rawValue: try reader.u16("Opcode"))
      let length = Int(try reader.u8("Parameter_Total_Length"))
      return HCICommandPacket(opcode: opcode, parameters: try reader.bytes(length, "Parameters"))
    }
  }

  /// The packet; parameters over 255 bytes cannot be sent and are cut (no command has them).
  public var encoded: [UInt8] {
    var writer = ByteWriter(capacity: 3 + parameters.count)
    writer.u16(opcode.rawValue)
    let parameters = parameters.prefix(255)
    writer.u8(UInt8(parameters.count))
    writer.append(parameters)
    return writer.bytes
  }
}

/// The parameters of one HCI command, with its opcode.
public protocol HCICommand: HCIPayload {
  static var opcode: HCIOpcode { get }
}

extension HCICommand {
  public var packet: HCICommandPacket { HCICommandPacket(opcode: Self.opcode, parameters: encoded) }

  /// Decodes a command packet that must carry this command.
  public init(packet: HCICommandPacket) throws(HCIDecodeError) {
    guard packet.opcode == Self.opcode else {
      throw HCIDecodeError(
        packet: Self.packetName, field: "Opcode", offset: 0, reason: .invalid("opcode is \(packet.opcode)"))
    }
    try self.init(decoding: packet.parameters, base: 3)
  }
}

/// A command without parameters.
public protocol HCIEmptyCommand: HCICommand {
  init()
}

extension HCIEmptyCommand {
  public init(reading reader: inout ByteReader<[UInt8]>) throws { self.init() }
  public func write(to writer: inout ByteWriter) {}
}

/// HCI status and error codes (Vol 1 Part F). Open; also the reason of Disconnect.
public struct HCIStatus: OpenByteID, Error {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let success: HCIStatus = 0x00
  public static let unknownCommand: HCIStatus = 0x01
  public static let unknownConnectionIdentifier: HCIStatus = 0x02
  public static let authenticationFailure: HCIStatus = 0x05
  public static let pinOrKeyMissing: HCIStatus = 0x06
  public static let connectionTimeout: HCIStatus = 0x08
  public static let commandDisallowed: HCIStatus = 0x0C
  public static let invalidParameters: HCIStatus = 0x12
  public static let remoteUserTerminatedConnection: HCIStatus = 0x13
  public static let remoteDeviceTerminatedLowResources: HCIStatus = 0x14
  public static let remoteDeviceTerminatedPowerOff: HCIStatus = 0x15
  public static let connectionTerminatedByLocalHost: HCIStatus = 0x16
  public static let unsupportedRemoteFeature: HCIStatus = 0x1A
  public static let unspecifiedError: HCIStatus = 0x1F
  public static let instantPassed: HCIStatus = 0x28
  public static let pairingWithUnitKeyNotSupported: HCIStatus = 0x29
  public static let connectionFailedToBeEstablished: HCIStatus = 0x3E
  public static let unknownAdvertisingIdentifier: HCIStatus = 0x42

  public static let names: [UInt8: String] = [
    0x00: "success", 0x01: "unknownCommand", 0x02: "unknownConnectionIdentifier", 0x05: "authenticationFailure",
    0x06: "pinOrKeyMissing", 0x08: "connectionTimeout", 0x0C: "commandDisallowed", 0x12: "invalidParameters",
    0x13: "remoteUserTerminatedConnection", 0x14: "remoteDeviceTerminatedLowResources",
    0x15: "remoteDeviceTerminatedPowerOff", 0x16: "connectionTerminatedByLocalHost",
    0x1A: "unsupportedRemoteFeature", 0x1F: "unspecifiedError", 0x28: "instantPassed",
    0x29: "pairingWithUnitKeyNotSupported", 0x3E: "connectionFailedToBeEstablished",
    0x42: "unknownAdvertisingIdentifier",
  ]
}
