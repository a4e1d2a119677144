import Wire

/// Read Request: AttributeHandle(2).
public struct ReadRequest: ATTPDUBody {
  public static let opcode = ATTOpcode.readRequest
  public var handle: UInt16

  public init(handle: UInt16) { self.handle = handle }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    handle = try reader.u16("AttributeHandle")
    try reader.end()
  }

  public func encode(to writer: inout ByteWriter) { writer.u16(handle) }
}

/// Read Blob Request: AttributeHandle(2) ValueOffset(2).
public struct ReadBlobRequest: ATTPDUBody {
  public static let opcode = ATTOpcode.readBlobRequest
  public var handle: UInt16
  public var offset: UInt16

  public init(handle: UInt16, offset: UInt16) {
    self.handle = handle
    self.offset = offset
  }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    handle = try reader.u16("AttributeHandle")
    offset = try reader.u16("ValueOffset")
    try reader.end()
  }

  public func encode(to writer: inout ByteWriter) {
    writer.u16(handle)
    writer.u16(offset)
  }
}

/// A PDU whose parameters are one opaque value: Read Response, Read Blob Response.
public protocol ATTValuePDU: ATTPDUBody {
  var value: [UInt8] { get }
  init(value: [UInt8])
}

extension ATTValuePDU {
  public init(parameters reader: inout ByteReader<[UInt8]>) throws { self.init(value: reader.rest()) }
  public func encode(to writer: inout ByteWriter) { writer.append(value) }
}

/// Read Response: AttributeValue(rest, at most ATT_MTU-1).
public struct ReadResponse: ATTValuePDU {
  public static let opcode = ATTOpcode.readResponse
  public var value: [UInt8]
  public init(value: [UInt8]) { self.value = value }
}

/// Read Blob Response: PartAttributeValue(rest).
public struct ReadBlobResponse: ATTValuePDU {
  public static let opcode = ATTOpcode.readBlobResponse
  public var value: [UInt8]
  public init(value: [UInt8]) { self.value = value }
}
