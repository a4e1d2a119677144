import Wire

/// A PDU of AttributeHandle(2) then a value filling the rest: Write Request, Write Command,
/// Handle Value Notification and Indication.
public protocol ATTHandleValuePDU: ATTPDUBody {
  var handle: UInt16 { get }
  var value: [UInt8] { get }
  init(handle: UInt16, value: [UInt8])
}

extension ATTHandleValuePDU {
  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    self.init(handle: try reader.u16("AttributeHandle"), value: reader.rest())
  }

  public func encode(to writer: inout ByteWriter) {
    writer.u16(handle)
    writer.append(value)
  }

  /// Opcode, handle and value: the notifications and writes that carry the ANCS traffic.
  public var encodedCapacity: Int { 3 + value.count }
}

/// Write Request: AttributeHandle(2) AttributeValue. Answered by Write Response.
public struct WriteRequest: ATTHandleValuePDU {
  public static let opcode = ATTOpcode.writeRequest
  public var handle: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.value = value
  }
}

/// Write Command: AttributeHandle(2) AttributeValue. Never answered.
public struct WriteCommand: ATTHandleValuePDU {
  public static let opcode = ATTOpcode.writeCommand
  public var handle: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.value = value
  }
}

/// Handle Value Notification: AttributeHandle(2) AttributeValue(at most ATT_MTU-3).
public struct HandleValueNotification: ATTHandleValuePDU {
  public static let opcode = ATTOpcode.handleValueNotification
  public var handle: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.value = value
  }
}

/// Handle Value Indication: AttributeHandle(2) AttributeValue. Answered by Confirmation.
public struct HandleValueIndication: ATTHandleValuePDU {
  public static let opcode = ATTOpcode.handleValueIndication
  public var handle: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.value = value
  }
}

/// A PDU with no parameters: Write Response, Handle Value Confirmation.
public protocol ATTEmptyPDU: ATTPDUBody { init() }

extension ATTEmptyPDU {
  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    self.init()
    try reader.end()
  }
  public func encode(to writer: inout ByteWriter) {}
}

public struct WriteResponse: ATTEmptyPDU {
  public static let opcode = ATTOpcode.writeResponse
  public init() {}
}

public struct HandleValueConfirmation: ATTEmptyPDU {
  public static let opcode = ATTOpcode.handleValueConfirmation
  public init() {}
}
