import HCI
import Wire

/// One packet an LE sniffer caught on the air (pcap LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR, 256;
/// Protocol/captures.md): the 10-octet RF header (channel, signal and noise power, access
/// address offenses, reference access address, flags, all little-endian), then the packet
/// without its preamble: access address, PDU header, payload, CRC.
struct AirPacket: Sendable {
  var number: Int
  var microseconds: Int64
  /// RF channel 0-39 (2402 + 2k MHz): 0, 12 and 39 are the advertising channels 37, 38, 39.
  var channel: UInt8
  var flags: UInt16
  var accessAddress: UInt32
  /// The PDU: its 2-octet header, any CTEInfo octet, the payload.
  var pdu: [UInt8]
  /// The 3 CRC octets as received.
  var crc: [UInt8]
  /// Caught damaged: not to be read.
  var damaged = false

  static let advertisingAddress: UInt32 = 0x8E89_BED6
  static let advertisingCRCInit: UInt32 = 0x55_5555

  // The RF header's flags (tcpdump.org, LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR).
  static let decrypted: UInt16 = 0x0008
  static let offensesValid: UInt16 = 0x0020
  static let crcChecked: UInt16 = 0x0400
  static let crcValid: UInt16 = 0x0800
  static let micChecked: UInt16 = 0x1000
  static let micValid: UInt16 = 0x2000

  var header: UInt8 { pdu[0] }
  /// The payload after the header (and the CTEInfo octet when CP is set).
  var payload: ArraySlice<UInt8> { pdu.dropFirst(pdu[0] & 0x20 != 0 && !isAdvertising ? 3 : 2) }
  var isAdvertising: Bool { accessAddress == Self.advertisingAddress }

  /// The RF header's PDU type (bits 7-9): 2 a data packet from the central, 3 from the
  /// peripheral; 0 when the sniffer does not say.
  var direction: Bool? {
    switch flags >> 7 & 0b111 {
    case 2: return true
    case 3: return false
    default: return nil
    }
  }

  /// The packet's time on the air in microseconds, from its length and PHY (flags bits
  /// 14-15: LE 1M, 2M, Coded), for telling connection events apart.
  var airtime: Int64 {
    let octets = Int64(4 + pdu.count + 3)
    switch flags >> 14 {
    case 1: return (2 + octets) * 4
    case 2: return 376 + octets * 8 * 8
    default: return (1 + octets) * 8
    }
  }

  /// Reads one packet; nil for one too short for an access address and a header. One the
  /// sniffer caught damaged (its CRC checked and wrong, its access address off, or its
  /// length past its end) is `damaged`: it still tells who had the air when.
  static func read(_ data: [UInt8], number: Int, microseconds: Int64) throws(CaptureError) -> AirPacket? {
    guard data.count >= 10 else { throw CaptureError("packet \(number) is shorter than its 10-octet RF header") }
    let flags = UInt16(data[8]) | UInt16(data[9]) << 8
    let air = data.dropFirst(10)
    guard air.count >= 6 else { return nil }
    let address = air.prefix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    let header = Array(air.dropFirst(4).prefix(2))
    let cte = address != advertisingAddress && header[0] & 0x20 != 0 ? 1 : 0
    let end = 4 + 2 + cte + Int(header[1])
    let whole = air.count >= end + 3 || flags & decrypted != 0 && air.count >= end
    let damaged =
      !whole || flags & crcChecked != 0 && flags & crcValid == 0 || flags & offensesValid != 0 && data[3] != 0
    return AirPacket(
      number: number, microseconds: microseconds, channel: data[0], flags: flags, accessAddress: address,
      pdu: whole ? Array(air.dropFirst(4).prefix(end - 4)) : header, crc: Array(air.dropFirst(end).prefix(3)),
      damaged: damaged)
  }

  /// Reads one packet of the nRF Sniffer for Bluetooth LE (pcap LINKTYPE_NORDIC_BLE, 272;
  /// Protocol/captures.md), as the same packet with link type 256's RF header would read:
  /// the board (1 octet); the header (the payload's length, 2 octets little-endian, or in
  /// protocol version 1 the header's and the payload's, 1 octet each; the protocol version;
  /// a packet counter, 2 octets; the packet ID); then, for the IDs that carry a packet from
  /// the air, the event header (its own length, then flags, channel index, RSSI, event
  /// counter, timestamp) and the packet from its access address on. Nil for the other IDs
  /// (the sniffer's own messages), for a packet too short to read, and for one of version 3
  /// marked advertising off the advertising access address (periodic advertising, not read).
  static func readNordic(_ data: [UInt8], number: Int, microseconds: Int64) throws(CaptureError) -> AirPacket? {
    if data.starts(with: [0xBE, 0xEF]) {
      throw CaptureError("packet \(number) is in the nRF Sniffer's format before protocol version 1, which is not read")
    }
    guard data.count >= 7 else { throw CaptureError("packet \(number) is shorter than the nRF Sniffer's header") }
    // Protocol version 3 names advertising (0x02) and data (0x06) packets apart; before it,
    // 0x06 carries both, told apart by their access address. Other IDs are the sniffer's own.
    let id = data[6]
    let version = data[3]
    guard id == 0x06 || id == 0x02 else { return nil }
    guard (1...3).contains(version) else {
      throw CaptureError("packet \(number): nRF Sniffer protocol version \(version) is not read (1 to 3 are)")
    }
    guard data.count >= 8 else { return nil }
    let air = 7 + Int(data[7])
    guard data.count >= air + 4 + 2, data[7] >= 10 else { return nil }
    let flags = data[8]
    let index = data[9]
    let address = Array(data[air..<air + 4])
    let onAdvertisingAddress = address == [0xD6, 0xBE, 0x89, 0x8E]
    let isData: Bool
    if version == 3 {
      isData = id == 0x06
      if !isData && !onAdvertisingAddress { return nil }
    } else {
      guard id == 0x06 else { return nil }
      isData = !onAdvertisingAddress
    }
    var header: UInt16 = 0x0001 | 0x0002 | crcChecked | (flags & 0x01 != 0 ? crcValid : 0)
    // PHY (bits 4-6): 0 LE 1M, 1 LE 2M, 2 LE Coded, the rest reserved; in bits 14-15 of the
    // RF header's flags, where 3 is reserved.
    header |= UInt16(min(flags >> 4 & 0b111, 3)) << 14
    if isData {
      // Bit 1: from the central. Bit 2: encrypted on the air, the sniffer checked its MIC;
      // bit 3: the MIC was right, so the sniffer decrypted it (the MIC still in the
      // payload). With bit 2 alone the sniffer had no key: the packet is read as the air's
      // ciphertext, for the link's key (`--ltk`) to open.
      header |= (flags & 0x02 != 0 ? 2 : 3) << 7
      if flags & 0x0C == 0x0C { header |= decrypted | micChecked | micValid }
    }
    // The channel index (37, 38, 39 advertising; 0-36 data) as the RF channel (Vol 6, Part
    // A, 2); the RSSI's magnitude, as a signed dBm.
    let channel: UInt8 =
      switch index {
      case 37: 0
      case 38: 12
      case 39: 39
      case 0...10: index + 1
      case 11...36: index + 2
      // No such channel: kept as it is, which no channel of the capture's is.
      default: index
      }
    let rf = [channel, UInt8(bitPattern: -Int8(clamping: Int(data[10]))), 0, 0] + address
    return try read(
      rf + [UInt8(header & 0xFF), UInt8(header >> 8)] + data[air...], number: number, microseconds: microseconds)
  }

  /// The 24-bit CRC of a PDU (Core v5.3, Vol 6, Part B, 3.1.1): polynomial x^24 + x^10 +
  /// x^9 + x^6 + x^4 + x^3 + x + 1, the register preset with `initial` (its bit 0 in
  /// position 0), the PDU's bits fed least significant first; sent from position 23 down,
  /// so as octets each is the register's bits reversed.
  static func crc(_ pdu: some Sequence<UInt8>, initial: UInt32) -> [UInt8] {
    var state = initial & 0xFF_FFFF
    for byte in pdu {
      for bit in 0..<8 {
        let feedback = (state >> 23 ^ UInt32(byte >> bit)) & 1
        state = state << 1 & 0xFF_FFFF
        if feedback != 0 { state ^= 0x00_065B }
      }
    }
    return [16, 8, 0].map { shift in
      let octet = UInt8(truncatingIfNeeded: state >> shift)
      return (0..<8).reduce(UInt8(0)) { $0 | (octet >> $1 & 1) << (7 - $1) }
    }
  }
}

/// An LE sniffer's capture told as the peripheral's host would have logged it: each
/// CONNECT_IND an LE Connection Complete, the data PDUs ACL packets (the peripheral's sent),
/// the encryption procedure an Encryption Change, LL_TERMINATE_IND a Disconnection Complete;
/// and notes of what the air showed (events `linkLayer`). Pure, packet by packet.
///
/// - Direction: from the sniffer's RF header when it says; otherwise from timing: the
///   central opens each connection event (a new channel, or a gap longer than two packets
///   and the 150 µs between them), then the two take turns.
/// - Retransmissions: a packet with the SN and the octets of the last one its side sent,
///   which the other side has not acknowledged (its NESN), is the same packet again.
/// - Encryption: LL_ENC_REQ and LL_ENC_RSP give the session's diversifiers and IVs; the
///   first encrypted packet (the central's LL_START_ENC_RSP) chooses among the long-term
///   keys given the one whose MIC matches; each side's packet counter counts its new
///   encrypted packets. A packet a missed one put ahead is found by trying the next counters.
struct SnifferDecoder: Sendable {
  /// The long-term keys to try on each encrypted connection.
  let keys: [UInt128]
  private var connections: [UInt32: AirConnection] = [:]
  private var nextHandle: UInt16 = 0x0040
  private var out: [HCIRecord] = []
  private var now: (number: Int, microseconds: Int64) = (0, 0)

  init(keys: [UInt128]) { self.keys = keys }

  mutating func take(_ packet: AirPacket) -> [HCIRecord] {
    now = (packet.number, packet.microseconds)
    out = []
    if packet.isAdvertising {
      advertising(packet)
    } else {
      data(packet)
    }
    return out
  }

  /// The capture ended: what each connection still open left out.
  mutating func finish() -> [HCIRecord] {
    out = []
    for (_, connection) in connections.sorted(by: { $0.value.handle < $1.value.handle }) { summary(connection) }
    connections = [:]
    return out
  }

  // MARK: - What is told

  private mutating func note(_ handle: UInt16?, _ text: String) {
    out.append(
      HCIRecord(
        number: now.number, microseconds: now.microseconds, sent: false, kind: .other, bytes: [],
        note: CaptureNote(connection: handle, text: text)))
  }

  private mutating func hciEvent(_ code: UInt8, _ parameters: [UInt8]) {
    out.append(
      HCIRecord(
        number: now.number, microseconds: now.microseconds, sent: false, kind: .event,
        bytes: [code, UInt8(parameters.count)] + parameters))
  }

  private func littleEndian(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

  // MARK: - Advertising channels

  /// CONNECT_IND (and AUX_CONNECT_REQ, the same PDU type): InitA, AdvA, then the LLData:
  /// access address, CRCInit, WinSize, WinOffset, Interval, Latency, Timeout, ChM, Hop/SCA.
  private mutating func advertising(_ packet: AirPacket) {
    guard !packet.damaged, crcMatches(packet, AirPacket.advertisingCRCInit) else { return }
    let payload = Array(packet.payload)
    guard packet.header & 0x0F == 0x05, payload.count >= 34 else { return }
    func u16(_ at: Int) -> UInt16 { UInt16(payload[at]) | UInt16(payload[at + 1]) << 8 }
    let address = payload[12..<16].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    let crcInit = payload[16..<19].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    if let old = connections.removeValue(forKey: address) { summary(old) }
    let handle = nextHandle
    nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
    connections[address] = AirConnection(handle: handle, crcInit: crcInit)
    let central = Self.address(payload[0..<6], random: packet.header & 0x40 != 0)
    let peripheral = Self.address(payload[6..<12], random: packet.header & 0x80 != 0)
    let interval = u16(22)
    note(
      handle,
      "CONNECT_IND from \(central) (central) to \(peripheral) (peripheral): access address 0x\(Self.hex(address)), "
        + "interval \(Double(interval) * 1.25) ms, latency \(u16(24)), timeout \(Int(u16(26)) * 10) ms, "
        + "hop \(payload[33] & 0x1F)")
    // As the peripheral's host hears it: LE Connection Complete, this host peripheral, the
    // peer the central (its address type from TxAdd).
    hciEvent(
      0x3E,
      [0x01, 0x00] + littleEndian(handle) + [0x01, packet.header & 0x40 != 0 ? 1 : 0] + Array(payload[0..<6])
        + littleEndian(interval) + littleEndian(u16(24)) + littleEndian(u16(26)) + [payload[33] >> 5])
  }

  static func address(_ octets: ArraySlice<UInt8>, random: Bool) -> String {
    octets.reversed().map(hexByte).joined(separator: ":") + (random ? " random" : " public")
  }

  static func hex(_ value: some FixedWidthInteger) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, value.bitWidth / 4 - digits.count)) + digits
  }

  private func crcMatches(_ packet: AirPacket, _ initial: UInt32?) -> Bool {
    guard let initial, packet.flags & AirPacket.crcChecked == 0, packet.flags & AirPacket.decrypted == 0 else {
      return true
    }
    return AirPacket.crc(packet.pdu, initial: initial) == packet.crc
  }

  // MARK: - Data channels

  private mutating func data(_ packet: AirPacket) {
    var connection: AirConnection
    if let known = connections[packet.accessAddress] {
      connection = known
    } else {
      // A damaged packet's access address may be noise.
      guard !packet.damaged else { return }
      connection = AirConnection(handle: nextHandle, crcInit: nil)
      nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
      note(
        connection.handle,
        "a connection already open (access address 0x\(Self.hex(packet.accessAddress)), no CONNECT_IND in the "
          + "capture): its direction from timing, and encrypted traffic unreadable without its LL_ENC_REQ")
    }
    defer { connections[packet.accessAddress] = connection }
    // Who had the air: a damaged packet tells it too.
    let fromCentral = connection.direction(of: packet)
    guard !packet.damaged, crcMatches(packet, connection.crcInit) else {
      connection.damaged += 1
      return
    }
    guard connection.isNew(packet, fromCentral: fromCentral) else { return }
    var payload = Array(packet.payload)
    if payload.isEmpty { return }
    if packet.flags & AirPacket.decrypted != 0 && packet.flags & AirPacket.micChecked != 0 {
      // Decrypted by the sniffer, its MIC checked: the last 4 octets are the MIC; one it
      // found wrong leaves the packet unread.
      guard packet.flags & AirPacket.micValid != 0 else {
        connection.damaged += 1
        return
      }
      payload = Array(payload.dropLast(LinkLayerCipher.micLength))
      if payload.isEmpty { return }
    }
    if connection.encrypting[fromCentral] == true && packet.flags & AirPacket.decrypted == 0 {
      // (An encrypted PDU holds at least one octet besides its MIC; a crafted one may not.)
      guard let plain = open(packet, fromCentral: fromCentral, &connection), !plain.isEmpty else { return }
      payload = plain
    }
    switch packet.header & 0x03 {
    case 0x03: control(payload, fromCentral: fromCentral, &connection)
    case 0x02, 0x01:
      let boundary: PacketBoundary = packet.header & 0x03 == 0x02 ? .firstFlushable : .continuing
      out.append(
        HCIRecord(
          number: now.number, microseconds: now.microseconds, sent: !fromCentral, kind: .acl,
          bytes: ACLPacket(handle: connection.handle, packetBoundary: boundary, data: payload).encoded))
    default: break
    }
  }

  /// The plaintext of an encrypted packet, or nil (counted, and said once) when no key or
  /// counter opens it.
  private mutating func open(_ packet: AirPacket, fromCentral: Bool, _ connection: inout AirConnection) -> [UInt8]? {
    let sealed = Array(packet.payload)
    if connection.cipher == nil, !connection.candidates.isEmpty {
      // The session's first encrypted packet chooses the key.
      for candidate in connection.candidates {
        if let plain = try? candidate.decrypt(sealed, header: packet.header, counter: 0, fromCentral: fromCentral) {
          connection.cipher = candidate
          connection.candidates = []
          connection.counters[fromCentral] = 1
          return plain
        }
      }
      connection.candidates = []
      connection.refused = true
      // Encrypted all the same.
      if connection.starting { encryptionChanged(&connection) }
      note(
        connection.handle,
        "\(keys.count == 1 ? "the LTK given does" : "none of the \(keys.count) LTKs given do") not open this link "
          + "(the MIC of its first encrypted packet does not match): its encrypted packets are not read")
    }
    if let cipher = connection.cipher {
      let counter = connection.counters[fromCentral] ?? 0
      // The next counters too: the sniffer may have missed packets.
      for next in counter..<counter + 3 {
        if let plain = try? cipher.decrypt(sealed, header: packet.header, counter: next, fromCentral: fromCentral) {
          connection.counters[fromCentral] = next + 1
          return plain
        }
      }
      if connection.pausing[fromCentral] == true {
        // Its LL_PAUSE_ENC_RSP may come unencrypted.
        connection.encrypting[fromCentral] = false
        return sealed
      }
      if !connection.micFailed {
        connection.micFailed = true
        note(connection.handle, "packet \(packet.number): its MIC does not match (damaged, or packets missed)")
      }
    }
    connection.unread += 1
    return nil
  }

  /// LL Control PDUs (Core v5.3, Vol 6, Part B, 2.4.2): the ones that tell the encryption
  /// procedure and the link's end.
  private mutating func control(_ payload: [UInt8], fromCentral: Bool, _ connection: inout AirConnection) {
    let parameters = payload.dropFirst()
    switch payload[0] {
    case 0x02:  // LL_TERMINATE_IND: an error code
      let reason = parameters.first ?? 0x13
      summary(connection)
      connection = AirConnection(handle: connection.handle, crcInit: connection.crcInit)
      connection.terminated = true
      // The peripheral's host hears the central's reason, or that it ended the link itself.
      hciEvent(0x05, [0x00] + littleEndian(connection.handle) + [fromCentral ? reason : 0x16])
    case 0x03 where parameters.count >= 22:  // LL_ENC_REQ: Rand, EDIV, SKDc, IVc
      connection.request = (
        littleEndianNumber(parameters.dropFirst(10).prefix(8)),
        UInt32(truncatingIfNeeded: littleEndianNumber(parameters.dropFirst(18).prefix(4)))
      )
      connection.ediv = UInt16(truncatingIfNeeded: littleEndianNumber(parameters.dropFirst(8).prefix(2)))
      connection.rand = littleEndianNumber(parameters.prefix(8))
      connection.starting = true
    case 0x04 where parameters.count >= 12:  // LL_ENC_RSP: SKDp, IVp
      guard let request = connection.request else { return }
      let skd = littleEndianNumber(parameters.prefix(8))
      let iv = UInt32(truncatingIfNeeded: littleEndianNumber(parameters.dropFirst(8).prefix(4)))
      connection.candidates = keys.compactMap {
        try? LinkLayerCipher(
          ltk: $0, centralDiversifier: request.skd, peripheralDiversifier: skd, centralIV: request.iv,
          peripheralIV: iv)
      }
      connection.cipher = nil
    case 0x05:  // LL_START_ENC_REQ, unencrypted: the central encrypts from its answer on
      connection.encrypting = [true: true, false: false]
      connection.counters = [:]
      connection.pausing = [:]
      let legacy = connection.ediv != 0 || connection.rand != 0
      let keyKind =
        connection.request == nil
        ? "" : legacy ? " (EDIV 0x\(Self.hex(connection.ediv)), Rand 0x\(Self.hex(connection.rand)))" : ""
      if connection.request == nil || connection.candidates.isEmpty && connection.cipher == nil {
        // Nothing can open it: the link is taken as encrypted now.
        connection.encrypting = [true: true, false: true]
        let why =
          connection.request == nil
          ? "the capture missed its LL_ENC_REQ, so no key opens it"
          : keys.isEmpty ? "give its LTK (--ltk) to read the rest" : "no LTK given opens it"
        note(connection.handle, "the link layer starts encryption\(keyKind): \(why)")
        encryptionChanged(&connection)
      } else {
        note(connection.handle, "the link layer starts encryption\(keyKind)")
      }
    case 0x06:  // LL_START_ENC_RSP: the central's (encrypted), then the peripheral's
      if fromCentral {
        connection.encrypting[false] = true
      } else if connection.starting {
        encryptionChanged(&connection)
      }
    case 0x0B:  // LL_PAUSE_ENC_RSP: unencrypted from here, each side after its own
      connection.encrypting[fromCentral] = false
      connection.pausing[!fromCentral] = true
    case 0x0D where connection.starting, 0x11 where connection.starting && parameters.first == 0x03:
      // LL_REJECT_IND (an error code), LL_REJECT_EXT_IND (the opcode refused, an error code)
      let status = (payload[0] == 0x0D ? parameters.first : parameters.dropFirst().first) ?? 0x1F
      connection.starting = false
      hciEvent(0x08, [status == 0 ? 0x1F : status] + littleEndian(connection.handle) + [0x00])
    default:
      break
    }
  }

  private mutating func encryptionChanged(_ connection: inout AirConnection) {
    connection.starting = false
    if connection.wasEncrypted {
      hciEvent(0x30, [0x00] + littleEndian(connection.handle))  // Encryption Key Refresh Complete
    } else {
      hciEvent(0x08, [0x00] + littleEndian(connection.handle) + [0x01])  // Encryption Change: on
    }
    connection.wasEncrypted = true
  }

  private func littleEndianNumber(_ octets: some Collection<UInt8>) -> UInt64 {
    octets.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
  }

  /// What a connection left out, when anything.
  private mutating func summary(_ connection: AirConnection) {
    guard !connection.terminated else { return }
    var parts: [String] = []
    func count(_ number: Int, _ what: String) -> String { "\(number) \(what)\(number == 1 ? "" : "s")" }
    if connection.retransmissions > 0 {
      parts.append(count(connection.retransmissions, "retransmission") + " read once")
    }
    if connection.damaged > 0 { parts.append(count(connection.damaged, "packet") + " with a wrong CRC left out") }
    if connection.unread > 0 { parts.append(count(connection.unread, "encrypted packet") + " not read") }
    if !parts.isEmpty { note(connection.handle, parts.joined(separator: "; ")) }
  }
}

/// One connection on the air: its handle in the records made, who sent what, and its
/// encryption.
struct AirConnection: Sendable {
  let handle: UInt16
  /// From the CONNECT_IND; nil for a connection the capture joined.
  let crcInit: UInt32?
  // Who sent the last packet, where and when.
  private var last: (channel: UInt8, microseconds: Int64, airtime: Int64, fromCentral: Bool)?
  // Each side's last new packet (its SN and octets) and the NESN it last sent.
  private var lastSN: [Bool: UInt8] = [:]
  private var lastOctets: [Bool: [UInt8]] = [:]
  private var lastNESN: [Bool: UInt8] = [:]
  // Encryption.
  var request: (skd: UInt64, iv: UInt32)?
  var ediv: UInt16 = 0
  var rand: UInt64 = 0
  var candidates: [LinkLayerCipher] = []
  var cipher: LinkLayerCipher?
  var encrypting: [Bool: Bool] = [:]
  var pausing: [Bool: Bool] = [:]
  var counters: [Bool: UInt64] = [:]
  var starting = false
  var wasEncrypted = false
  var refused = false
  var micFailed = false
  var terminated = false
  // What was left out.
  var retransmissions = 0
  var damaged = 0
  var unread = 0

  init(handle: UInt16, crcInit: UInt32?) {
    self.handle = handle
    self.crcInit = crcInit
  }

  /// True for the central's packets.
  mutating func direction(of packet: AirPacket) -> Bool {
    let fromCentral: Bool
    if let said = packet.direction {
      fromCentral = said
    } else if let last, last.channel == packet.channel,
      packet.microseconds - last.microseconds <= last.airtime + packet.airtime + 150 + 500
    {
      fromCentral = !last.fromCentral
    } else {
      fromCentral = true
    }
    last = (packet.channel, packet.microseconds, packet.airtime, fromCentral)
    return fromCentral
  }

  /// False for a retransmission: the SN and octets of this side's last packet, which the
  /// other side has not acknowledged since (its last NESN still that SN).
  mutating func isNew(_ packet: AirPacket, fromCentral: Bool) -> Bool {
    let sn = packet.header >> 3 & 1
    let octets = [packet.header & 0xE3] + packet.pdu.dropFirst()
    defer { lastNESN[fromCentral] = packet.header >> 2 & 1 }
    if lastSN[fromCentral] == sn, lastOctets[fromCentral] == octets, lastNESN[!fromCentral].map({ $0 == sn }) ?? true {
      if !packet.payload.isEmpty { retransmissions += 1 }
      return false
    }
    lastSN[fromCentral] = sn
    lastOctets[fromCentral] = octets
    return true
  }
}
