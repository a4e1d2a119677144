import Wire

/// One SMP command (Vol 3 Part H 3.3), as carried on L2CAP CID 0x0006: a code byte, then fixed
/// parameters. Multi-byte values are little-endian on the wire; 128-bit ones are numbers here
/// and P-256 coordinates keep the spec's big-endian bytes (see SMPToolbox).
public enum SMPPDU: Hashable, Sendable {
  case pairingRequest(PairingFeatures)
  case pairingResponse(PairingFeatures)
  case pairingConfirm(UInt128)
  case pairingRandom(UInt128)
  case pairingFailed(SMPReason)
  case encryptionInformation(ltk: UInt128)
  case centralIdentification(ediv: UInt16, rand: UInt64)
  case identityInformation(irk: UInt128)
  case identityAddressInformation(DeviceAddress)
  case signingInformation(csrk: UInt128)
  case securityRequest(AuthReq)
  case pairingPublicKey(P256PublicKey)
  case pairingDHKeyCheck(UInt128)
  case keypressNotification(KeypressType)

  public var code: SMPCode {
    switch self {
    case .pairingRequest: return .pairingRequest
    case .pairingResponse: return .pairingResponse
    case .pairingConfirm: return .pairingConfirm
    case .pairingRandom: return .pairingRandom
    case .pairingFailed: return .pairingFailed
    case .encryptionInformation: return .encryptionInformation
    case .centralIdentification: return .centralIdentification
    case .identityInformation: return .identityInformation
    case .identityAddressInformation: return .identityAddressInformation
    case .signingInformation: return .signingInformation
    case .securityRequest: return .securityRequest
    case .pairingPublicKey: return .pairingPublicKey
    case .pairingDHKeyCheck: return .pairingDHKeyCheck
    case .keypressNotification: return .keypressNotification
    }
  }

  /// Decodes one PDU. An unknown code is `.unknownCode` (answer: Pairing Failed, Command Not
  /// Supported); a wrong length is `.truncated` or `.trailingBytes` (answer: Invalid
  /// Parameters).
  public init(decoding bytes: [UInt8]) throws(HCIDecodeError) {
    guard let first = bytes.first else {
      throw HCIDecodeError(packet: "SMP", field: "Code", offset: 0, reason: .truncated(needed: 1, available: 0))
    }
    let code = SMPCode(rawValue: first)
    guard let name = code.name else {
      throw HCIDecodeError(packet: "SMP", field: "Code", offset: 0, reason: .unknownCode(first))
    }
    self = try decodeWhole(bytes, packet: "SMP \(name)") { reader in
      _ = try reader.u8("Code")
      return try Self.parameters(code, &reader)
    }
  }

  private static func parameters(_ code: SMPCode, _ reader: inout ByteReader<[UInt8]>) throws -> SMPPDU {
    switch code {
    case .pairingRequest: return .pairingRequest(try PairingFeatures(reading: &reader))
    case .pairingResponse: return .pairingResponse(try PairingFeatures(reading: &reader))
    case .pairingConfirm: return .pairingConfirm(try reader.u128("Confirm_Value"))
    case .pairingRandom: return .pairingRandom(try reader.u128("Random_Value"))
    case .pairingFailed: return .pairingFailed(SMPReason(rawValue: try reader.u8("Reason")))
    case .encryptionInformation: return .encryptionInformation(ltk: try reader.u128("Long_Term_Key"))
    case .centralIdentification:
      return .centralIdentification(ediv: try reader.u16("EDIV"), rand: try reader.u64("Rand"))
    case .identityInformation: return .identityInformation(irk: try reader.u128("Identity_Resolving_Key"))
    case .identityAddressInformation:
      let type = AddressType(rawValue: try reader.u8("AddrType"))
      return .identityAddressInformation(DeviceAddress(type: type, address: try reader.address("BD_ADDR")))
    case .signingInformation: return .signingInformation(csrk: try reader.u128("Signature_Key"))
    case .securityRequest: return .securityRequest(AuthReq(rawValue: try reader.u8("AuthReq")))
    case .pairingPublicKey:
      let x = try reader.bytes(32, "Public_Key_X")
      let y = try reader.bytes(32, "Public_Key_Y")
      guard let x = P256Value(littleEndian: x), let y = P256Value(littleEndian: y) else {
        throw FieldError(field: "Public_Key_X", offset: 1, reason: .invalid("not 32 bytes"))
      }
      return .pairingPublicKey(P256PublicKey(x: x, y: y))
    case .pairingDHKeyCheck: return .pairingDHKeyCheck(try reader.u128("DHKey_Check"))
    case .keypressNotification:
      return .keypressNotification(KeypressType(rawValue: try reader.u8("Notification_Type")))
    default: throw FieldError(field: "Code", offset: 0, reason: .unknownCode(code.rawValue))
    }
  }

  public var encoded: [UInt8] {
    var writer = ByteWriter()
    writer.u8(code.rawValue)
    switch self {
    case .pairingRequest(let features), .pairingResponse(let features): features.write(to: &writer)
    case .pairingConfirm(let value), .pairingRandom(let value), .pairingDHKeyCheck(let value):
      writer.u128(value)
    case .encryptionInformation(let key), .identityInformation(let key), .signingInformation(let key):
      writer.u128(key)
    case .pairingFailed(let reason): writer.u8(reason.rawValue)
    case .centralIdentification(let ediv, let rand):
      writer.u16(ediv)
      writer.u64(rand)
    case .identityAddressInformation(let address):
      writer.u8(address.type.rawValue)
      writer.address(address.address)
    case .securityRequest(let authReq): writer.u8(authReq.rawValue)
    case .pairingPublicKey(let key):
      writer.append(key.x.littleEndian)
      writer.append(key.y.littleEndian)
    case .keypressNotification(let type): writer.u8(type.rawValue)
    }
    return writer.bytes
  }
}
