import Wire

/// Error Response: RequestOpcodeInError(1) AttributeHandleInError(2) ErrorCode(1).
public struct ErrorResponse: ATTPDUBody {
  public static let opcode = ATTOpcode.errorResponse
  public var requestOpcode: ATTOpcode
  public var handle: UInt16
  public var errorCode: ATTErrorCode

  public init(requestOpcode: ATTOpcode, handle: UInt16, errorCode: ATTErrorCode) {
    self.requestOpcode = requestOpcode
    self.handle = handle
    self.errorCode = errorCode
  }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    requestOpcode = ATTOpcode(rawValue: try reader.u8("RequestOpcodeInError"))
    handle = try reader.u16("AttributeHandleInError")
    errorCode = ATTErrorCode(rawValue: try reader.u8("ErrorCode"))
    try reader.end()
  }

  public func encode(to writer: inout ByteWriter) {
    writer.u8(requestOpcode.rawValue)
    writer.u16(handle)
    writer.u8(errorCode.rawValue)
  }
}
