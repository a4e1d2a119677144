import Wire

/// ATT opcode (Core Spec Vol 3 Part F 3.4.8). Bit 6 is the Command flag, bit 7 the
/// Authentication Signature flag. Open: unknown opcodes are kept.
public struct ATTOpcode: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let errorResponse: ATTOpcode = 0x01
  public static let exchangeMTURequest: ATTOpcode = 0x02
  public static let exchangeMTUResponse: ATTOpcode = 0x03
  public static let findInformationRequest: ATTOpcode = 0x04
  public static let findInformationResponse: ATTOpcode = 0x05
  public static let findByTypeValueRequest: ATTOpcode = 0x06
  public static let findByTypeValueResponse: ATTOpcode = 0x07
  public static let readByTypeRequest: ATTOpcode = 0x08
  public static let readByTypeResponse: ATTOpcode = 0x09
  public static let readRequest: ATTOpcode = 0x0A
  public static let readResponse: ATTOpcode = 0x0B
  public static let readBlobRequest: ATTOpcode = 0x0C
  public static let readBlobResponse: ATTOpcode = 0x0D
  public static let readMultipleRequest: ATTOpcode = 0x0E
  public static let readByGroupTypeRequest: ATTOpcode = 0x10
  public static let readByGroupTypeResponse: ATTOpcode = 0x11
  public static let writeRequest: ATTOpcode = 0x12
  public static let writeResponse: ATTOpcode = 0x13
  public static let prepareWriteRequest: ATTOpcode = 0x16
  public static let prepareWriteResponse: ATTOpcode = 0x17
  public static let executeWriteRequest: ATTOpcode = 0x18
  public static let executeWriteResponse: ATTOpcode = 0x19
  public static let handleValueNotification: ATTOpcode = 0x1B
  public static let handleValueIndication: ATTOpcode = 0x1D
  public static let handleValueConfirmation: ATTOpcode = 0x1E
  public static let writeCommand: ATTOpcode = 0x52
  public static let signedWriteCommand: ATTOpcode = 0xD2

  public static let names: [UInt8: String] = [
    0x01: "errorResponse", 0x02: "exchangeMTURequest", 0x03: "exchangeMTUResponse",
    0x04: "findInformationRequest", 0x05: "findInformationResponse", 0x06: "findByTypeValueRequest",
    0x07: "findByTypeValueResponse", 0x08: "readByTypeRequest", 0x09: "readByTypeResponse",
    0x0A: "readRequest", 0x0B: "readResponse", 0x0C: "readBlobRequest", 0x0D: "readBlobResponse",
    0x0E: "readMultipleRequest", 0x10: "readByGroupTypeRequest", 0x11: "readByGroupTypeResponse",
    0x12: "writeRequest", 0x13: "writeResponse", 0x16: "prepareWriteRequest", 0x17: "prepareWriteResponse",
    0x18: "executeWriteRequest", 0x19: "executeWriteResponse",
    0x1B: "handleValueNotification", 0x1D: "handleValueIndication", 0x1E: "handleValueConfirmation",
    0x52: "writeCommand", 0xD2: "signedWriteCommand",
  ]

  /// Commands (bit 6) are never answered, not even with an error.
  public var isCommand: Bool { rawValue & 0x40 != 0 }

  /// The opcodes a client sends that the server must answer.
  static let requests: Set<UInt8> = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20]
  /// The opcodes a server sends in answer, plus the confirmation a client answers with.
  static let answers: Set<UInt8> = [0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x21]

  /// True for a PDU that a server must answer: a known request, or any unknown opcode that is
  /// neither a command nor one of the answers, notifications and indications. (An unknown
  /// request gets "Request Not Supported"; Vol 3 Part F 3.4.9.)
  public var needsResponse: Bool {
    if isCommand { return false }
    if Self.requests.contains(rawValue) { return true }
    if Self.answers.contains(rawValue) { return false }
    return ![0x1B, 0x1D, 0x1E].contains(rawValue)
  }
}

/// ATT error codes (Vol 3 Part F 3.4.1.1, and the common profile codes of CSS Part B).
public struct ATTErrorCode: OpenByteID, Error {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let invalidHandle: ATTErrorCode = 0x01
  public static let readNotPermitted: ATTErrorCode = 0x02
  public static let writeNotPermitted: ATTErrorCode = 0x03
  public static let invalidPDU: ATTErrorCode = 0x04
  public static let insufficientAuthentication: ATTErrorCode = 0x05
  public static let requestNotSupported: ATTErrorCode = 0x06
  public static let invalidOffset: ATTErrorCode = 0x07
  public static let insufficientAuthorization: ATTErrorCode = 0x08
  public static let prepareQueueFull: ATTErrorCode = 0x09
  public static let attributeNotFound: ATTErrorCode = 0x0A
  public static let attributeNotLong: ATTErrorCode = 0x0B
  public static let insufficientEncryptionKeySize: ATTErrorCode = 0x0C
  public static let invalidAttributeValueLength: ATTErrorCode = 0x0D
  public static let unlikelyError: ATTErrorCode = 0x0E
  public static let insufficientEncryption: ATTErrorCode = 0x0F
  public static let unsupportedGroupType: ATTErrorCode = 0x10
  public static let insufficientResources: ATTErrorCode = 0x11
  public static let databaseOutOfSync: ATTErrorCode = 0x12
  public static let valueNotAllowed: ATTErrorCode = 0x13
  public static let cccdImproperlyConfigured: ATTErrorCode = 0xFD
  public static let procedureAlreadyInProgress: ATTErrorCode = 0xFE
  public static let outOfRange: ATTErrorCode = 0xFF

  public static let names: [UInt8: String] = [
    0x01: "invalidHandle", 0x02: "readNotPermitted", 0x03: "writeNotPermitted", 0x04: "invalidPDU",
    0x05: "insufficientAuthentication", 0x06: "requestNotSupported", 0x07: "invalidOffset",
    0x08: "insufficientAuthorization", 0x09: "prepareQueueFull", 0x0A: "attributeNotFound",
    0x0B: "attributeNotLong", 0x0C: "insufficientEncryptionKeySize", 0x0D: "invalidAttributeValueLength",
    0x0E: "unlikelyError", 0x0F: "insufficientEncryption", 0x10: "unsupportedGroupType",
    0x11: "insufficientResources", 0x12: "databaseOutOfSync", 0x13: "valueNotAllowed",
    0xA0: "unknownCommand(ANCS)", 0xA1: "invalidCommand(ANCS)", 0xA2: "invalidParameter(ANCS)",
    0xA3: "actionFailed(ANCS)",
    0xFD: "cccdImproperlyConfigured", 0xFE: "procedureAlreadyInProgress", 0xFF: "outOfRange",
  ]
}
