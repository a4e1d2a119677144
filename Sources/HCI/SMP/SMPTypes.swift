import Wire

/// SMP command codes (Vol 3 Part H 3.3). Open: an unknown code is kept, and answered with
/// Pairing Failed "Command Not Supported".
public struct SMPCode: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let pairingRequest: SMPCode = 0x01
  public static let pairingResponse: SMPCode = 0x02
  public static let pairingConfirm: SMPCode = 0x03
  public static let pairingRandom: SMPCode = 0x04
  public static let pairingFailed: SMPCode = 0x05
  public static let encryptionInformation: SMPCode = 0x06
  public static let centralIdentification: SMPCode = 0x07
  public static let identityInformation: SMPCode = 0x08
  public static let identityAddressInformation: SMPCode = 0x09
  public static let signingInformation: SMPCode = 0x0A
  public static let securityRequest: SMPCode = 0x0B
  public static let pairingPublicKey: SMPCode = 0x0C
  public static let pairingDHKeyCheck: SMPCode = 0x0D
  public static let keypressNotification: SMPCode = 0x0E

  public static let names: [UInt8: String] = [
    0x01: "pairingRequest", 0x02: "pairingResponse", 0x03: "pairingConfirm", 0x04: "pairingRandom",
    0x05: "pairingFailed", 0x06: "encryptionInformation", 0x07: "centralIdentification",
    0x08: "identityInformation", 0x09: "identityAddressInformation", 0x0A: "signingInformation",
    0x0B: "securityRequest", 0x0C: "pairingPublicKey", 0x0D: "pairingDHKeyCheck", 0x0E: "keypressNotification",
  ]
}

/// Pairing Failed reasons (Vol 3 Part H 3.5.5). Open.
public struct SMPReason: OpenByteID, Error {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let passkeyEntryFailed: SMPReason = 0x01
  public static let oobNotAvailable: SMPReason = 0x02
  public static let authenticationRequirements: SMPReason = 0x03
  public static let confirmValueFailed: SMPReason = 0x04
  public static let pairingNotSupported: SMPReason = 0x05
  public static let encryptionKeySize: SMPReason = 0x06
  public static let commandNotSupported: SMPReason = 0x07
  public static let unspecifiedReason: SMPReason = 0x08
  public static let repeatedAttempts: SMPReason = 0x09
  public static let invalidParameters: SMPReason = 0x0A
  public static let dhKeyCheckFailed: SMPReason = 0x0B
  public static let numericComparisonFailed: SMPReason = 0x0C
  public static let bredrPairingInProgress: SMPReason = 0x0D
  public static let crossTransportKeyDerivationNotAllowed: SMPReason = 0x0E
  public static let keyRejected: SMPReason = 0x0F
  public static let busy: SMPReason = 0x10

  public static let names: [UInt8: String] = [
    0x01: "passkeyEntryFailed", 0x02: "oobNotAvailable", 0x03: "authenticationRequirements",
    0x04: "confirmValueFailed", 0x05: "pairingNotSupported", 0x06: "encryptionKeySize",
    0x07: "commandNotSupported", 0x08: "unspecifiedReason", 0x09: "repeatedAttempts", 0x0A: "invalidParameters",
    0x0B: "dhKeyCheckFailed", 0x0C: "numericComparisonFailed", 0x0D: "bredrPairingInProgress",
    0x0E: "crossTransportKeyDerivationNotAllowed", 0x0F: "keyRejected", 0x10: "busy",
  ]
}

/// IO capabilities (Vol 3 Part H 3.5.1). Open.
public struct IOCapability: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let displayOnly: IOCapability = 0x00
  public static let displayYesNo: IOCapability = 0x01
  public static let keyboardOnly: IOCapability = 0x02
  public static let noInputNoOutput: IOCapability = 0x03
  public static let keyboardDisplay: IOCapability = 0x04

  public static let names: [UInt8: String] = [
    0x00: "displayOnly", 0x01: "displayYesNo", 0x02: "keyboardOnly", 0x03: "noInputNoOutput",
    0x04: "keyboardDisplay",
  ]
}

/// The AuthReq field (Vol 3 Part H 3.5.1). Every bit is kept, reserved ones included, because
/// c1 and f6 hash the bytes as they were sent.
public struct AuthReq: OptionSet, Hashable, Sendable {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// Bonding_Flags 0b01 (bits 0-1).
  public static let bonding = AuthReq(rawValue: 0x01)
  public static let mitm = AuthReq(rawValue: 0x04)
  public static let secureConnections = AuthReq(rawValue: 0x08)
  public static let keypress = AuthReq(rawValue: 0x10)
  public static let ct2 = AuthReq(rawValue: 0x20)
}

/// Initiator/Responder Key Distribution (Vol 3 Part H 3.6.1). All bits kept.
public struct KeyDistribution: OptionSet, Hashable, Sendable {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let encKey = KeyDistribution(rawValue: 0x01)
  public static let idKey = KeyDistribution(rawValue: 0x02)
  public static let signKey = KeyDistribution(rawValue: 0x04)
  public static let linkKey = KeyDistribution(rawValue: 0x08)
}

/// Keypress notification types (Vol 3 Part H 3.5.8). Open.
public struct KeypressType: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let passkeyEntryStarted: KeypressType = 0x00
  public static let passkeyDigitEntered: KeypressType = 0x01
  public static let passkeyDigitErased: KeypressType = 0x02
  public static let passkeyCleared: KeypressType = 0x03
  public static let passkeyEntryCompleted: KeypressType = 0x04

  public static let names: [UInt8: String] = [
    0x00: "passkeyEntryStarted", 0x01: "passkeyDigitEntered", 0x02: "passkeyDigitErased", 0x03: "passkeyCleared",
    0x04: "passkeyEntryCompleted",
  ]
}

/// The parameters of a Pairing Request or Pairing Response (Vol 3 Part H 3.5.1, 3.5.2), in
/// wire order.
public struct PairingFeatures: Hashable, Sendable {
  public var ioCapability: IOCapability
  public var oobDataFlag: UInt8
  public var authReq: AuthReq
  /// 7 to 16; a smaller value is refused by the pairing engine, not by the codec.
  public var maxEncryptionKeySize: UInt8
  public var initiatorKeyDistribution: KeyDistribution
  public var responderKeyDistribution: KeyDistribution

  public init(
    ioCapability: IOCapability, oobDataFlag: UInt8 = 0, authReq: AuthReq, maxEncryptionKeySize: UInt8 = 16,
    initiatorKeyDistribution: KeyDistribution, responderKeyDistribution: KeyDistribution
  ) {
    self.ioCapability = ioCapability
    self.oobDataFlag = oobDataFlag
    self.authReq = authReq
    self.maxEncryptionKeySize = maxEncryptionKeySize
    self.initiatorKeyDistribution = initiatorKeyDistribution
    self.responderKeyDistribution = responderKeyDistribution
  }

  /// IOcap of f6 (Vol 3 Part H 2.2.8): AuthReq || OOB data flag || IO capability.
  public var ioCap: UInt32 {
    UInt32(authReq.rawValue) << 16 | UInt32(oobDataFlag) << 8 | UInt32(ioCapability.rawValue)
  }

  init(reading reader: inout ByteReader<[UInt8]>) throws(ReadError) {
    ioCapability = IOCapability(rawValue: try reader.u8("IO_Capability"))
    oobDataFlag = try reader.u8("OOB_Data_Flag")
    authReq = AuthReq(rawValue: try reader.u8("AuthReq"))
    maxEncryptionKeySize = try reader.u8("Maximum_Encryption_Key_Size")
    initiatorKeyDistribution = KeyDistribution(rawValue: try reader.u8("Initiator_Key_Distribution"))
    responderKeyDistribution = KeyDistribution(rawValue: try reader.u8("Responder_Key_Distribution"))
  }

  func write(to writer: inout ByteWriter) {
    writer.u8(ioCapability.rawValue)
    writer.u8(oobDataFlag)
    writer.u8(authReq.rawValue)
    writer.u8(maxEncryptionKeySize)
    writer.u8(initiatorKeyDistribution.rawValue)
    writer.u8(responderKeyDistribution.rawValue)
  }
}
