import Wire

/// Find Information Request: StartingHandle(2) EndingHandle(2).
public struct FindInformationRequest: ATTPDUBody {
  public static let opcode = ATTOpcode.findInformationRequest
  public var range: HandleRange

  public init(range: HandleRange) { self.range = range }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    range = try HandleRange.read(&reader)
    try reader.end()
  }

  public func encode(to writer: inout ByteWriter) { range.write(&writer) }
}

/// Find Information Response: Format(1) then (Handle(2), UUID) pairs; Format 1 = 16-bit
/// UUIDs, 2 = 128-bit. All pairs of one response share the format.
public struct FindInformationResponse: ATTPDUBody {
  public static let opcode = ATTOpcode.findInformationResponse
  public struct Entry: Hashable, Sendable {
    public var handle: UInt16
    public var type: BluetoothUUID
    public init(handle: UInt16, type: BluetoothUUID) {
      self.handle = handle
      self.type = type
    }
  }
  public var entries: [Entry]

  public init(entries: [Entry]) { self.entries = entries }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    let at = reader.offset
    let format = try reader.u8("Format")
    let uuidSize: Int
    switch format {
    case 1: uuidSize = 2
    case 2: uuidSize = 16
    default: throw FormatError(field: "Format", offset: at, detail: "format \(format) is neither 1 nor 2")
    }
    entries = try reader.list("InformationData", entrySize: 2 + uuidSize) { reader in
      let handle = try reader.u16("Handle")
      let bytes = try reader.bytes(uuidSize, "UUID")
      // Lengths 2 and 16 always form a UUID.
      return Entry(handle: handle, type: BluetoothUUID(littleEndian: bytes) ?? .bit16(0))
    }
  }

  public func encode(to writer: inout ByteWriter) {
    // One format for the whole list: a single 128-bit UUID makes every entry 128-bit.
    let wide = entries.contains { !$0.type.is16Bit }
    writer.u8(wide ? 2 : 1)
    for entry in entries {
      writer.u16(entry.handle)
      writer.append(wide ? entry.type.littleEndian128 : entry.type.littleEndian)
    }
  }
}
