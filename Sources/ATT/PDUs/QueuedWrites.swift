import Wire

/// Prepare Write Request and Response: AttributeHandle(2) ValueOffset(2) PartAttributeValue
/// (Vol 3 Part F 3.4.6.1-2). A long write, or a value longer than ATT_MTU - 3, goes to the
/// server's queue in parts; the response echoes the request, so the client can check it.
public protocol ATTPreparedWritePDU: ATTPDUBody {
  var handle: UInt16 { get }
  var offset: UInt16 { get }
  var value: [UInt8] { get }
  init(handle: UInt16, offset: UInt16, value: [UInt8])
}

extension ATTPreparedWritePDU {
  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    self.init(handle: try reader.u16("AttributeHandle"), offset: try reader.u16("ValueOffset"), value: reader.rest())
  }

  public func encode(to writer: inout ByteWriter) {
    writer.u16(handle)
    writer.u16(offset)
    writer.append(value)
  }
}

public struct PrepareWriteRequest: ATTPreparedWritePDU {
  public static let opcode = ATTOpcode.prepareWriteRequest
  public var handle: UInt16
  public var offset: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, offset: UInt16, value: [UInt8]) {
    self.handle = handle
    self.offset = offset
    self.value = value
  }
}

public struct PrepareWriteResponse: ATTPreparedWritePDU {
  public static let opcode = ATTOpcode.prepareWriteResponse
  public var handle: UInt16
  public var offset: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, offset: UInt16, value: [UInt8]) {
    self.handle = handle
    self.offset = offset
    self.value = value
  }
}

/// Execute Write Request: Flags(1), 0x00 cancels every prepared write, 0x01 writes them all
/// (Vol 3 Part F 3.4.6.3). Other values are reserved.
public struct ExecuteWriteRequest: ATTPDUBody, Hashable, Sendable {
  public static let opcode = ATTOpcode.executeWriteRequest
  public var write: Bool

  public init(write: Bool) { self.write = write }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    let at = reader.offset
    let flags = try reader.u8("Flags")
    guard flags <= 1 else { throw FormatError(field: "Flags", offset: at, detail: "reserved value \(flags)") }
    write = flags == 1
    try reader.end()
  }

  public func encode(to writer: inout ByteWriter) { writer.u8(write ? 1 : 0) }
}

public struct ExecuteWriteResponse: ATTEmptyPDU {
  public static let opcode = ATTOpcode.executeWriteResponse
  public init() {}
}
