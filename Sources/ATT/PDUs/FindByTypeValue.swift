import Wire

/// Find By Type Value Request: StartingHandle(2) EndingHandle(2) AttributeType(2, a 16-bit
/// UUID) AttributeValue(rest).
public struct FindByTypeValueRequest: ATTPDUBody {
  public static let opcode = ATTOpcode.findByTypeValueRequest
  public var range: HandleRange
  public var type: UInt16
  public var value: [UInt8]

  public init(range: HandleRange, type: UInt16, value: [UInt8]) {
    self.range = range
    self.type = type
    self.value = value
  }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    range = try HandleRange.read(&reader)
    type = try reader.u16("AttributeType")
    value = reader.rest()
  }

  public func encode(to writer: inout ByteWriter) {
    range.write(&writer)
    writer.u16(type)
    writer.append(value)
  }
}

/// Find By Type Value Response: (FoundAttributeHandle(2), GroupEndHandle(2)) pairs.
public struct FindByTypeValueResponse: ATTPDUBody {
  public static let opcode = ATTOpcode.findByTypeValueResponse
  public var ranges: [HandleRange]

  public init(ranges: [HandleRange]) { self.ranges = ranges }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    ranges = try reader.list("HandlesInformationList", entrySize: 4) { reader in
      HandleRange(try reader.u16("FoundAttributeHandle"), try reader.u16("GroupEndHandle"))
    }
  }

  public func encode(to writer: inout ByteWriter) {
    for range in ranges { range.write(&writer) }
  }
}
