/// pcap and pcapng files with Bluetooth HCI link types (tcpdump.org's LINKTYPE list;
/// Protocol/captures.md): H4 without (187) and with (201) a 4-byte direction header, the
/// Linux monitor's records (254), and an LE sniffer's link-layer packets with their RF
/// header (256) or the nRF Sniffer's (272), made into the records the peripheral's host
/// would have logged (Sniffer.swift).
enum Pcap {
  static let h4: UInt32 = 187
  static let h4WithDirection: UInt32 = 201
  static let linuxMonitor: UInt32 = 254
  static let leLinkLayer: UInt32 = 256
  static let nordicBLE: UInt32 = 272

  /// The classic format's magic numbers, as the file's first four bytes, and what they mean:
  /// its byte order and whether timestamps count nanoseconds.
  static func classic(_ bytes: [UInt8]) -> (littleEndian: Bool, nanoseconds: Bool)? {
    switch Array(bytes.prefix(4)) {
    case [0xA1, 0xB2, 0xC3, 0xD4]: return (false, false)
    case [0xD4, 0xC3, 0xB2, 0xA1]: return (true, false)
    case [0xA1, 0xB2, 0x3C, 0x4D]: return (false, true)
    case [0x4D, 0x3C, 0xB2, 0xA1]: return (true, true)
    default: return nil
    }
  }

  static func isNextGeneration(_ bytes: [UInt8]) -> Bool { bytes.starts(with: [0x0A, 0x0D, 0x0D, 0x0A]) }

  static func name(_ linktype: UInt32) -> String? {
    switch linktype {
    case h4: return "H4"
    case h4WithDirection: return "H4 with direction"
    case linuxMonitor: return "Linux monitor"
    case leLinkLayer: return "LE link layer from a sniffer, told as the peripheral's host"
    case nordicBLE: return "nRF Sniffer for Bluetooth LE, told as the peripheral's host"
    default: return nil
    }
  }

  static func unsupported(_ linktype: UInt32) -> CaptureError {
    CaptureError(
      "link type \(linktype) is not read (187 Bluetooth HCI H4, 201 H4 with direction, 254 Linux monitor, 256 "
        + "LE link layer with RF header and 272 nRF Sniffer are)")
  }

  /// One packet of `linktype` as an HCI record; nil for what carries no HCI packet.
  static func record(
    _ data: [UInt8], linktype: UInt32, number: Int, microseconds: Int64
  ) throws(CaptureError) -> HCIRecord {
    var payload = data[...]
    var sent: Bool?
    var kind: HCIRecord.Kind?
    switch linktype {
    case h4WithDirection:
      guard payload.count >= 4 else { throw CaptureError("packet \(number) is shorter than its direction header") }
      // Bit 0 of the big-endian direction: set when the host received the packet.
      sent = payload[payload.startIndex + 3] & 1 == 0
      payload = payload.dropFirst(4)
    case linuxMonitor:
      guard payload.count >= 4 else { throw CaptureError("packet \(number) is shorter than its monitor header") }
      let opcode = UInt16(payload[payload.startIndex + 2]) << 8 | UInt16(payload[payload.startIndex + 3])
      payload = payload.dropFirst(4)
      guard let found = BtsnoopFile.monitorKind(opcode) else {
        return HCIRecord(number: number, microseconds: microseconds, sent: false, kind: .other, bytes: [])
      }
      return HCIRecord(
        number: number, microseconds: microseconds, sent: found.sent, kind: found.kind, bytes: Array(payload))
    default:
      break
    }
    guard let indicator = payload.first else { throw CaptureError("packet \(number) is empty: no H4 packet indicator") }
    kind = BtsnoopFile.h4Kind(indicator)
    // Without a direction header the packet's kind says it where it can: commands are
    // sent, events received; data is taken as received.
    let direction = sent ?? (kind == .command)
    return HCIRecord(
      number: number, microseconds: microseconds, sent: direction, kind: kind ?? .other,
      bytes: Array(payload.dropFirst()))
  }

  /// The classic format: a 24-byte header (magic, version, zone, accuracy, snapshot length,
  /// link type), then records of a 16-byte header (seconds, micro- or nanoseconds, included
  /// length, original length) and the packet.
  static func readClassic(_ bytes: [UInt8], growing: Bool, keys: [UInt128]) throws(CaptureError) -> (
    format: String, records: [HCIRecord]
  ) {
    guard let (little, nanoseconds) = classic(bytes) else { throw CaptureError("not a pcap file") }
    var cursor = FileCursor(bytes: bytes)
    _ = try cursor.take(20, "the pcap header")
    let linktype = try cursor.integer(UInt32.self, littleEndian: little, "the pcap header") & 0x0FFF_FFFF
    guard let name = name(linktype) else { throw unsupported(linktype) }
    var frames: [Frame] = []
    while cursor.remaining > 0,
      let (seconds, fraction, data) = try cursor.whole(
        growing,
        { cursor throws(CaptureError) in
          let what = "record \(frames.count + 1)"
          let seconds = try cursor.integer(UInt32.self, littleEndian: little, what)
          let fraction = try cursor.integer(UInt32.self, littleEndian: little, what)
          let included = try cursor.integer(UInt32.self, littleEndian: little, what)
          _ = try cursor.integer(UInt32.self, littleEndian: little, what)
          return (seconds, fraction, Array(try cursor.take(Int(included), "\(what)'s \(included) bytes of data")))
        })
    {
      let microseconds = Int64(seconds) * 1_000_000 + Int64(nanoseconds ? fraction / 1000 : fraction)
      frames.append(Frame(data: data, linktype: linktype, number: frames.count + 1, microseconds: microseconds))
    }
    return ("pcap, \(name)", try records(frames, keys: keys, growing: growing))
  }

  /// pcapng: blocks of a type, a total length, a body and the length again. The Section
  /// Header gives the byte order; each Interface Description a link type and a timestamp
  /// resolution (if_tsresol, 10^-6 s by default); Enhanced and Simple Packet Blocks carry the
  /// packets. Other blocks are skipped.
  static func readNextGeneration(_ bytes: [UInt8], growing: Bool, keys: [UInt128]) throws(CaptureError) -> (
    format: String, records: [HCIRecord]
  ) {
    var cursor = FileCursor(bytes: bytes)
    var little = true
    var interfaces: [(linktype: UInt32, unitsPerSecond: Double)] = []
    var frames: [Frame] = []
    var blocks = 0
    while cursor.remaining > 0,
      let typeBytes = try cursor.whole(
        growing,
        { cursor throws(CaptureError) in
          // A whole block, or none: its length (in the section's byte order, or in the one a new
          // section's magic gives) says where it ends.
          let at = cursor.offset
          guard cursor.remaining >= 12 else {
            throw CaptureError("the file ends inside a block header", endsEarly: true)
          }
          let bytes = cursor.bytes
          let isSection = Array(bytes[at..<at + 4]) == [0x0A, 0x0D, 0x0D, 0x0A]
          let order = isSection ? bytes[at + 8] == 0x4D : little
          let field = Array(bytes[at + 4..<at + 8])
          let length = Int((order ? field.reversed() : field).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
          guard cursor.remaining >= length else { throw CaptureError("the file ends inside a block", endsEarly: true) }
          return Array(try cursor.take(4, "block \(blocks + 1)"))
        })
    {
      blocks += 1
      let start = cursor.offset - 4
      let what = "block \(blocks)"
      let type: UInt32
      if typeBytes == [0x0A, 0x0D, 0x0D, 0x0A] {
        // A new section: its byte-order magic follows the length.
        guard cursor.remaining >= 8 else { throw CaptureError("the file ends inside \(what) at byte \(start)") }
        let magic = Array(bytes[(cursor.offset + 4)..<(cursor.offset + 8)])
        guard magic == [0x4D, 0x3C, 0x2B, 0x1A] || magic == [0x1A, 0x2B, 0x3C, 0x4D] else {
          throw CaptureError("\(what) at byte \(start): a section header without its byte-order magic")
        }
        little = magic == [0x4D, 0x3C, 0x2B, 0x1A]
        interfaces = []
        type = 0x0A0D_0D0A
      } else {
        type = typeBytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }.byteSwappedIf(!little)
      }
      let length = Int(try cursor.integer(UInt32.self, littleEndian: little, what))
      guard length >= 12, length % 4 == 0 else {
        throw CaptureError("\(what) at byte \(start) says it is \(length) bytes long (a multiple of 4, at least 12)")
      }
      var body = FileCursor(bytes: Array(try cursor.take(length - 12, "\(what)'s body")), isBlock: true)
      _ = try cursor.take(4, "\(what)'s closing length")
      switch type {
      case 1:  // Interface Description
        let linktype = UInt32(try body.integer(UInt16.self, littleEndian: little, what))
        _ = try body.take(6, what)
        interfaces.append((linktype, try resolution(&body, little: little)))
      case 6:  // Enhanced Packet
        let interface = Int(try body.integer(UInt32.self, littleEndian: little, what))
        let high = UInt64(try body.integer(UInt32.self, littleEndian: little, what))
        let low = UInt64(try body.integer(UInt32.self, littleEndian: little, what))
        let captured = Int(try body.integer(UInt32.self, littleEndian: little, what))
        _ = try body.integer(UInt32.self, littleEndian: little, what)
        let data = Array(try body.take(captured, "\(what)'s \(captured) bytes of packet"))
        guard interface < interfaces.count else {
          throw CaptureError("\(what) at byte \(start) names interface \(interface), which no block described")
        }
        let (linktype, units) = interfaces[interface]
        let microseconds = Int64(clamping: Int64(exactly: (Double(high << 32 | low) / units * 1e6).rounded()) ?? 0)
        frames.append(try frame(data, linktype: linktype, number: frames.count + 1, microseconds: microseconds))
      case 3:  // Simple Packet: the first interface, no timestamp; the packet padded to 4 bytes
        let original = Int(try body.integer(UInt32.self, littleEndian: little, what))
        guard let linktype = interfaces.first?.linktype else {
          throw CaptureError("\(what) at byte \(start): a packet before any interface was described")
        }
        let data = Array(body.bytes[body.offset...].prefix(original))
        frames.append(try frame(data, linktype: linktype, number: frames.count + 1, microseconds: 0))
      default:
        break
      }
    }
    let names = Set(interfaces.compactMap { name($0.linktype) })
    return ("pcapng, \(names.sorted().joined(separator: ", "))", try records(frames, keys: keys, growing: growing))
  }

  /// One packet of a pcap or pcapng file, before it is read as HCI records.
  struct Frame {
    var data: [UInt8]
    var linktype: UInt32
    var number: Int
    var microseconds: Int64
  }

  /// A packet of an interface whose link type is read; an error naming the link type otherwise.
  private static func frame(_ data: [UInt8], linktype: UInt32, number: Int, microseconds: Int64)
    throws(CaptureError) -> Frame
  {
    guard name(linktype) != nil else { throw unsupported(linktype) }
    return Frame(data: data, linktype: linktype, number: number, microseconds: microseconds)
  }

  /// The HCI records of the packets, in order: an LE sniffer's packets through one
  /// `SnifferDecoder` (opening encrypted links with `keys`), the others one by one. In a
  /// file still being written the sniffer's summaries wait for its end, so the records read
  /// are a prefix of those read later.
  static func records(_ frames: [Frame], keys: [UInt128], growing: Bool) throws(CaptureError) -> [HCIRecord] {
    var records: [HCIRecord] = []
    var sniffer: SnifferDecoder?
    for frame in frames {
      if frame.linktype == leLinkLayer || frame.linktype == nordicBLE {
        var decoder = sniffer ?? SnifferDecoder(keys: keys)
        let read = frame.linktype == nordicBLE ? AirPacket.readNordic : AirPacket.read
        if let packet = try read(frame.data, frame.number, frame.microseconds) {
          records += decoder.take(packet)
        }
        sniffer = decoder
      } else {
        records.append(
          try record(frame.data, linktype: frame.linktype, number: frame.number, microseconds: frame.microseconds))
      }
    }
    if var sniffer, !growing { records += sniffer.finish() }
    return records
  }

  /// Timestamp units per second from an Interface Description's options (if_tsresol, code 9:
  /// bit 7 clear, a power of ten; set, a power of two).
  private static func resolution(_ options: inout FileCursor, little: Bool) throws(CaptureError) -> Double {
    while options.remaining >= 4 {
      let code = try options.integer(UInt16.self, littleEndian: little, "an interface option")
      let length = Int(try options.integer(UInt16.self, littleEndian: little, "an interface option"))
      let value = Array(try options.take((length + 3) / 4 * 4, "an interface option's value").prefix(length))
      if code == 0 { break }
      if code == 9, let exponent = value.first {
        let power = Double(exponent & 0x7F)
        return exponent & 0x80 == 0 ? pow10(power) : pow2(power)
      }
    }
    return 1e6
  }

  private static func pow10(_ exponent: Double) -> Double { (0..<Int(exponent)).reduce(1) { value, _ in value * 10 } }
  private static func pow2(_ exponent: Double) -> Double { (0..<Int(exponent)).reduce(1) { value, _ in value * 2 } }
}

extension UInt32 {
  fileprivate func byteSwappedIf(_ condition: Bool) -> UInt32 { condition ? byteSwapped : self }
}
