/// One HCI packet of a capture, whatever the container: what `ancs inspect` reads
/// (Protocol/captures.md).
public struct HCIRecord: Hashable, Sendable {
  public enum Kind: String, Hashable, Sendable {
    case command, event, acl, sco, iso, other
  }

  /// The record's number in the file, from 1 (as Wireshark numbers frames).
  public var number: Int
  /// Microseconds since the Unix epoch, as the capture says.
  public var microseconds: Int64
  /// True from the host to the controller (commands, data sent), false the other way.
  public var sent: Bool
  public var kind: Kind
  /// The packet without any H4 indicator byte.
  public var bytes: [UInt8]
  /// Not an HCI packet but what a capture of the air showed (`kind` is `other`).
  public var note: CaptureNote?

  public init(number: Int, microseconds: Int64, sent: Bool, kind: Kind, bytes: [UInt8], note: CaptureNote? = nil) {
    self.number = number
    self.microseconds = microseconds
    self.sent = sent
    self.kind = kind
    self.bytes = bytes
    self.note = note
  }
}

/// What an LE sniffer's capture showed that an HCI log would not: the CONNECT_IND, the
/// encryption procedure, packets left out (the event `linkLayer`).
public struct CaptureNote: Hashable, Sendable {
  public var connection: UInt16?
  public var text: String
  public init(connection: UInt16?, text: String) {
    self.connection = connection
    self.text = text
  }
}

/// Why a capture cannot be read: what is wrong, and where (a byte offset in the file).
public struct CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String
  /// The file ends inside a record: more may still come (`--follow`).
  public var endsEarly = false
  public init(_ message: String, endsEarly: Bool = false) {
    self.message = message
    self.endsEarly = endsEarly
  }
  public var description: String { message }
}

/// The capture formats `ancs inspect` reads, told apart by their content.
public enum CaptureFormat: String, Hashable, Sendable {
  /// btsnoop version 1 with HCI without a header (1001), HCI UART / H4 (1002, ours and
  /// Android's), or the Linux monitor's records (2001, `btmon -w`).
  case btsnoop
  /// Apple's PacketLogger (.pklg), with its lengths big-endian (macOS) or little-endian
  /// (iOS sysdiagnose).
  case packetLogger = "PacketLogger"
  /// pcap and pcapng with the Bluetooth HCI H4 link types (with and without the direction
  /// header), the Linux monitor's, or an LE sniffer's link layer with its RF header.
  case pcap

  /// The records of `bytes`, and a description of the container ("btsnoop, H4"). With
  /// `growing`, a file that ends inside a record is a file still being written: the
  /// records before it are returned. `keys`: the long-term keys to open the encrypted
  /// links of an LE sniffer's capture with.
  public static func read(_ bytes: [UInt8], growing: Bool = false, keys: [UInt128] = []) throws(CaptureError) -> (
    format: String, records: [HCIRecord]
  ) {
    // A file still being written may not hold its magic or its whole header yet: nothing
    // to read so far.
    if growing && bytes.count < 8 { return ("", []) }
    do {
      if bytes.starts(with: BtsnoopFile.magic) { return try BtsnoopFile.read(bytes, growing: growing) }
      if Pcap.classic(bytes) != nil { return try Pcap.readClassic(bytes, growing: growing, keys: keys) }
      if Pcap.isNextGeneration(bytes) { return try Pcap.readNextGeneration(bytes, growing: growing, keys: keys) }
      if let endian = PacketLogger.endianness(of: bytes, growing: growing) {
        return try PacketLogger.read(bytes, littleEndian: endian, growing: growing)
      }
    } catch  where growing && error.endsEarly {
      return ("", [])
    }
    // Too little yet to tell a PacketLogger record (its type byte is its 13th).
    if growing && bytes.count < 13 { return ("", []) }
    if bytes.isEmpty { throw CaptureError("the file is empty") }
    throw CaptureError(
      "not a capture this tool reads: neither btsnoop (it starts \"btsnoop\\0\"), pcap, pcapng nor PacketLogger records "
        + "(it starts \(bytes.prefix(8).map { hexByte($0) }.joined(separator: " ")))")
  }
}

func hexByte(_ byte: UInt8) -> String {
  let digits = String(byte, radix: 16, uppercase: true)
  return digits.count == 1 ? "0" + digits : digits
}

/// A big- or little-endian reader over a file's bytes that says where it ran out.
struct FileCursor {
  let bytes: [UInt8]
  var offset = 0
  /// The bytes of one whole block (a pcapng block's body): running out of them is damage,
  /// not a file still being written.
  var isBlock = false

  init(bytes: [UInt8], isBlock: Bool = false) {
    self.bytes = bytes
    self.isBlock = isBlock
  }

  var remaining: Int { bytes.count - offset }

  mutating func take(_ count: Int, _ what: String) throws(CaptureError) -> ArraySlice<UInt8> {
    guard count >= 0, remaining >= count else {
      if isBlock {
        throw CaptureError(
          "\(what) runs past the end of its block (at byte \(offset) of it, \(count) bytes wanted, \(remaining) left)")
      }
      throw CaptureError(
        "the file ends inside \(what) at byte \(offset) (\(count) bytes wanted, \(remaining) left)", endsEarly: true)
    }
    defer { offset += count }
    return bytes[offset..<offset + count]
  }

  /// Reads one record with `body`; at a file still being written (`growing`) that ends
  /// inside it, nil, the cursor back at the record's start.
  mutating func whole<T>(_ growing: Bool, _ body: (inout FileCursor) throws(CaptureError) -> T) throws(CaptureError)
    -> T?
  {
    let start = offset
    do { return try body(&self) } catch  where growing && error.endsEarly {
      offset = start
      return nil
    }
  }

  mutating func integer<T: FixedWidthInteger>(_: T.Type, littleEndian: Bool = false, _ what: String)
    throws(CaptureError) -> T
  {
    let slice = try take(T.bitWidth / 8, what)
    let ordered = littleEndian ? Array(slice.reversed()) : Array(slice)
    return ordered.reduce(T.zero) { $0 << 8 | T($1) }
  }
}

enum BtsnoopFile {
  static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
  /// Microseconds from 0 AD (the btsnoop epoch) to 1970.
  static let epochOffset: Int64 = 0x00DC_DDB3_0F2F_8000

  static func read(_ bytes: [UInt8], growing: Bool) throws(CaptureError) -> (format: String, records: [HCIRecord]) {
    var cursor = FileCursor(bytes: bytes)
    _ = try cursor.take(8, "the btsnoop header")
    let version = try cursor.integer(UInt32.self, "the btsnoop header")
    guard version == 1 else { throw CaptureError("btsnoop version \(version): only version 1 is defined") }
    let datalink = try cursor.integer(UInt32.self, "the btsnoop header")
    let name: String
    switch datalink {
    case 1001: name = "btsnoop, HCI without a header"
    case 1002: name = "btsnoop, H4"
    case 2001: name = "btsnoop, Linux monitor (btmon)"
    default:
      throw CaptureError("btsnoop datalink \(datalink) is not read (1001 HCI, 1002 H4 and 2001 monitor are)")
    }
    var records: [HCIRecord] = []
    while cursor.remaining > 0,
      let (data, flags, microseconds) = try cursor.whole(
        growing,
        { cursor throws(CaptureError) in
          let what = "record \(records.count + 1)"
          _ = try cursor.integer(UInt32.self, what)
          let included = try cursor.integer(UInt32.self, what)
          let flags = try cursor.integer(UInt32.self, what)
          _ = try cursor.integer(UInt32.self, what)
          let stamp = try cursor.integer(UInt64.self, what)
          let data = Array(try cursor.take(Int(included), "\(what)'s \(included) bytes of data"))
          return (data, flags, Int64(bitPattern: stamp) &- epochOffset)
        })
    {
      let number = records.count + 1
      let what = "record \(number)"
      let record: HCIRecord?
      switch datalink {
      case 1001:
        let sent = flags & 1 == 0
        let kind: HCIRecord.Kind = flags & 2 == 0 ? .acl : sent ? .command : .event
        record = HCIRecord(number: number, microseconds: microseconds, sent: sent, kind: kind, bytes: data)
      case 1002:
        guard let indicator = data.first else { throw CaptureError("\(what) is empty: no H4 packet indicator") }
        record = HCIRecord(
          number: number, microseconds: microseconds, sent: flags & 1 == 0, kind: h4Kind(indicator),
          bytes: Array(data.dropFirst()))
      default:
        // The monitor's opcode is the flags' low 16 bits (its controller index the high 16).
        record = monitorKind(UInt16(truncatingIfNeeded: flags)).map {
          HCIRecord(number: number, microseconds: microseconds, sent: $0.sent, kind: $0.kind, bytes: data)
        }
      }
      // A monitor record that is no HCI packet keeps its number: records are counted as the
      // file has them.
      records.append(
        record ?? HCIRecord(number: number, microseconds: microseconds, sent: false, kind: .other, bytes: []))
    }
    return (name, records)
  }

  static func h4Kind(_ indicator: UInt8) -> HCIRecord.Kind {
    switch indicator {
    case 1: return .command
    case 2: return .acl
    case 3: return .sco
    case 4: return .event
    case 5: return .iso
    default: return .other
    }
  }

  /// The btsnoop monitor opcodes that carry HCI packets (BlueZ, doc/btsnoop.rst).
  static func monitorKind(_ opcode: UInt16) -> (kind: HCIRecord.Kind, sent: Bool)? {
    switch opcode {
    case 2: return (.command, true)
    case 3: return (.event, false)
    case 4: return (.acl, true)
    case 5: return (.acl, false)
    case 6: return (.sco, true)
    case 7: return (.sco, false)
    case 18: return (.iso, true)
    case 19: return (.iso, false)
    default: return nil
    }
  }
}

/// Apple's PacketLogger format: records of a 4-byte length (of what follows it), seconds and
/// microseconds (4 bytes each), a type byte, then the packet. Wireshark's reader of it is
/// the public description (wiretap/packetlogger.c).
enum PacketLogger {
  /// Whether `bytes` start as PacketLogger records, and in which byte order (true: little).
  /// An order whose first records are whole wins over one that is plausible only as a
  /// file still being written, so a whole file reads alike either way.
  static func endianness(of bytes: [UInt8], growing: Bool = false) -> Bool? {
    for little in [false, true] where plausible(bytes, littleEndian: little, growing: false) { return little }
    guard growing else { return nil }
    for little in [false, true] where plausible(bytes, littleEndian: little, growing: true) { return little }
    return nil
  }

  /// The first records (up to 4) have lengths that fit, known types and sane sizes; in a
  /// file still being written, the last may be cut short once its type is there.
  private static func plausible(_ bytes: [UInt8], littleEndian: Bool, growing: Bool) -> Bool {
    var cursor = FileCursor(bytes: bytes)
    var checked = 0
    while checked < 4 && cursor.remaining > 0 {
      // A record whose type has not come yet, after whole ones: a file being written.
      if cursor.remaining < 13 { return growing && checked > 0 }
      guard let length = try? cursor.integer(UInt32.self, littleEndian: littleEndian, ""), length >= 9,
        length <= 65_536 + 9
      else { return false }
      let type = cursor.bytes[cursor.offset + 8]
      guard kind(type) != nil || [0xFB, 0xFC, 0xFD, 0xFE, 0xFF].contains(type) else { return false }
      guard cursor.remaining >= Int(length) else { return growing }
      cursor.offset += Int(length)
      checked += 1
    }
    return checked > 0
  }

  static func kind(_ type: UInt8) -> (kind: HCIRecord.Kind, sent: Bool)? {
    switch type {
    case 0x00: return (.command, true)
    case 0x01: return (.event, false)
    case 0x02: return (.acl, true)
    case 0x03: return (.acl, false)
    case 0x08: return (.sco, true)
    case 0x09: return (.sco, false)
    default: return nil
    }
  }

  static func read(_ bytes: [UInt8], littleEndian: Bool, growing: Bool) throws(CaptureError) -> (
    format: String, records: [HCIRecord]
  ) {
    var cursor = FileCursor(bytes: bytes)
    var records: [HCIRecord] = []
    while cursor.remaining > 0,
      let (type, data, microseconds) = try cursor.whole(
        growing,
        { cursor throws(CaptureError) in
          let what = "record \(records.count + 1)"
          let length = try cursor.integer(UInt32.self, littleEndian: littleEndian, what)
          guard length >= 9 else {
            throw CaptureError("\(what) at byte \(cursor.offset - 4) is \(length) bytes long, under 9")
          }
          let seconds = try cursor.integer(UInt32.self, littleEndian: littleEndian, what)
          let micros = try cursor.integer(UInt32.self, littleEndian: littleEndian, what)
          let type = try cursor.take(1, what).first ?? 0
          let data = Array(try cursor.take(Int(length) - 9, "\(what)'s data"))
          return (type, data, Int64(seconds) * 1_000_000 + Int64(micros))
        })
    {
      let number = records.count + 1
      let found = kind(type)
      records.append(
        HCIRecord(
          number: number, microseconds: microseconds, sent: found?.sent ?? false, kind: found?.kind ?? .other,
          bytes: found == nil ? [] : data))
    }
    return ("PacketLogger, \(littleEndian ? "little" : "big")-endian", records)
  }
}
