import Wire

/// Read By Type Request: StartingHandle(2) EndingHandle(2) AttributeType(2 or 16).
public struct ReadByTypeRequest: ATTPDUBody {
  public static let opcode = ATTOpcode.readByTypeRequest
  public var range: HandleRange
  public var type: BluetoothUUID

  public init(range: HandleRange, type: BluetoothUUID) {
    self.range = range
    self.type = type
  }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    range = try HandleRange.read(&reader)
    type = try reader.uuidRest("AttributeType")
  }

  public func encode(to writer: inout ByteWriter) {
    range.write(&writer)
    writer.append(type.littleEndian)
  }
}

/// One handle and its value, as listed in a Read By Type Response.
public struct HandleValue: Hashable, Sendable {
  public var handle: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.value = value
  }
}

/// Read By Type Response: Length(1) (each entry's size, handle included), then entries of
/// AttributeHandle(2) AttributeValue(Length-2).
public struct ReadByTypeResponse: ATTPDUBody {
  public static let opcode = ATTOpcode.readByTypeResponse
  public var entries: [HandleValue]

  public init(entries: [HandleValue]) { self.entries = entries }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    let at = reader.offset
    let length = Int(try reader.u8("Length"))
    guard length >= 2 else {
      throw FormatError(field: "Length", offset: at, detail: "entry length \(length) is under 2")
    }
    entries = try reader.list("AttributeDataList", entrySize: length) { reader in
      HandleValue(handle: try reader.u16("AttributeHandle"), value: try reader.bytes(length - 2, "AttributeValue"))
    }
  }

  public func encode(to writer: inout ByteWriter) {
    writer.u8(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
    for entry in entries {
      writer.u16(entry.handle)
      writer.append(entry.value)
    }
  }
}

/// Read By Group Type Request: StartingHandle(2) EndingHandle(2) AttributeGroupType(2 or 16).
public struct ReadByGroupTypeRequest: ATTPDUBody {
  public static let opcode = ATTOpcode.readByGroupTypeRequest
  public var range: HandleRange
  public var type: BluetoothUUID

  public init(range: HandleRange, type: BluetoothUUID) {
    self.range = range
    self.type = type
  }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    range = try HandleRange.read(&reader)
    type = try reader.uuidRest("AttributeGroupType")
  }

  public func encode(to writer: inout ByteWriter) {
    range.write(&writer)
    writer.append(type.littleEndian)
  }
}

/// One group in a Read By Group Type Response.
public struct GroupValue: Hashable, Sendable {
  public var handle: UInt16
  public var endGroupHandle: UInt16
  public var value: [UInt8]
  public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.endGroupHandle = endGroupHandle
    self.value = value
  }
}

/// Read By Group Type Response: Length(1), then entries of AttributeHandle(2)
/// EndGroupHandle(2) AttributeValue(Length-4).
public struct ReadByGroupTypeResponse: ATTPDUBody {
  public static let opcode = ATTOpcode.readByGroupTypeResponse
  public var entries: [GroupValue]

  public init(entries: [GroupValue]) { self.entries = entries }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    let at = reader.offset
    let length = Int(try reader.u8("Length"))
    guard length >= 4 else {
      throw FormatError(field: "Length", offset: at, detail: "entry length \(length) is under 4")
    }
    entries = try reader.list("AttributeDataList", entrySize: length) { reader in
      GroupValue(
        handle: try reader.u16("AttributeHandle"), endGroupHandle: try reader.u16("EndGroupHandle"),
        value: try reader.bytes(length - 4, "AttributeValue"))
    }
  }

  public func encode(to writer: inout ByteWriter) {
    writer.u8(UInt8(truncatingIfNeeded: 4 + (entries.first?.value.count ?? 0)))
    for entry in entries {
      writer.u16(entry.handle)
      writer.u16(entry.endGroupHandle)
      writer.append(entry.value)
    }
  }
}
