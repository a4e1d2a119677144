import Foundation
import HCI
import TestSupport
import Testing
import Wire

@testable import Capture

/// A session as an LE sniffer catches it on the air (pcap LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR):
/// the CONNECT_IND on an advertising channel, then one connection event every 30 ms on the
/// next data channel (hop 7), the central's packet first and the peripheral's 150 µs after
/// it ends, each an empty PDU when that side has nothing to send; SN and NESN as the link
/// layer sets them; L2CAP frames cut into 27-octet PDUs; the encryption procedure (LL_ENC_REQ,
/// LL_ENC_RSP, LL_START_ENC_REQ, both LL_START_ENC_RSP) where the HCI log has its Encryption
/// Change, every non-empty PDU after it sealed with the session's AES-CCM; LL_TERMINATE_IND
/// for the disconnection.
struct AirSession {
  /// The session in HCI terms (the peripheral's host's log).
  var packets: [(h4: [UInt8], sent: Bool)]
  /// The long-term key the link is encrypted with.
  var ltk: UInt128 = 0x4C68_3841_39F5_74D8_36BC_F34E_9DFB_01BF
  /// The RF header says each data packet's direction (its PDU type) instead of leaving it
  /// to timing.
  var directionInHeader = false
  /// The sniffer checked each CRC (flags 0x0C00) instead of leaving it to the reader.
  var crcChecked = false
  /// The central misses the peripheral's first transmission of its Nth data PDU (from 0),
  /// which the peripheral sends again in the next event.
  var missedByCentral: Int? = 3
  /// The sniffer catches the central's Nth empty PDU (from 0) damaged (its CRC wrong).
  var damagedEmpty: Int? = 2
  /// Written as the nRF Sniffer for Bluetooth LE writes it (link type 272), whose header
  /// always says each data packet's direction and whether its CRC was right.
  var nordic = false

  static let accessAddress: UInt32 = 0x5065_4A8B
  static let crcInit: UInt32 = 0x12_3456
  static let peripheralAddress: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xD0]  // D0:11:22:33:44:55
  static let start: Int64 = 1_764_590_400_000_000

  /// An air packet: when, on which RF channel, from whom, and its PDU (header first).
  struct Air {
    var microseconds: Int64
    var channel: UInt8
    var fromCentral: Bool?
    var accessAddress: UInt32
    var pdu: [UInt8]
    var damaged = false
    /// RF header flags of its own (a sniffer that decrypted it: 0x0008, MIC checked 0x1000,
    /// valid 0x2000).
    var flags: UInt16 = 0
    /// Sealed with the link's AES-CCM: the nRF Sniffer, which has no key for it, marks it
    /// encrypted with its MIC wrong.
    var sealed = false
  }

  /// One PDU to send: its LLID and payload.
  private struct Item {
    var fromCentral: Bool
    var llid: UInt8
    var payload: [UInt8]
  }

  var air: [Air] {
    get throws {
      var out: [Air] = []
      var items: [Item] = []
      var connectAt: Int?
      for packet in packets {
        let h4 = packet.h4
        switch (h4.first, h4.dropFirst().first) {
        case (0x04, 0x3E):
          connectAt = items.count
          // InitA: the peer address of the LE Connection Complete.
          out.append(connectIndication(initiator: Array(h4[9..<15])))
        case (0x04, 0x08):
          // SKDc, IVc; SKDp, IVp: LE Secure Connections (EDIV and Rand 0).
          items.append(
            Item(fromCentral: true, llid: 3, payload: [0x03] + [UInt8](repeating: 0, count: 10) + Self.skdC + Self.ivC))
          items.append(Item(fromCentral: false, llid: 3, payload: [0x04] + Self.skdP + Self.ivP))
          items.append(Item(fromCentral: false, llid: 3, payload: [0x05]))
          items.append(Item(fromCentral: true, llid: 3, payload: [0x06]))
          items.append(Item(fromCentral: false, llid: 3, payload: [0x06]))
        case (0x04, 0x05):
          items.append(Item(fromCentral: true, llid: 3, payload: [0x02, h4[6]]))
        case (0x02, _):
          let frame = Array(h4.dropFirst(5))
          for (index, start) in stride(from: 0, to: frame.count, by: 27).enumerated() {
            items.append(
              Item(
                fromCentral: !packet.sent, llid: index == 0 ? 2 : 1,
                payload: Array(frame[start..<min(start + 27, frame.count)])))
          }
        default: break
        }
      }
      guard connectAt != nil else { return out }
      out += try events(items)
      return out
    }
  }

  static let skdC: [UInt8] = [0x13, 0x02, 0xF1, 0xE0, 0xDF, 0xCE, 0xBD, 0xAC]
  static let ivC: [UInt8] = [0x24, 0xAB, 0xDC, 0xBA]
  static let skdP: [UInt8] = [0x79, 0x68, 0x57, 0x46, 0x35, 0x24, 0x13, 0x02]
  static let ivP: [UInt8] = [0xBE, 0xBA, 0xAF, 0xDE]

  private func connectIndication(initiator: [UInt8]) -> Air {
    var payload = initiator + Self.peripheralAddress
    payload += littleEndian(UInt64(Self.accessAddress), 4) + littleEndian(UInt64(Self.crcInit), 3)
    payload += [2] + littleEndian(0, 2) + littleEndian(24, 2) + littleEndian(0, 2) + littleEndian(72, 2)
    payload += [0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 7]  // all 37 channels, hop 7, SCA 0
    // CONNECT_IND (type 5), TxAdd and RxAdd random.
    return Air(
      microseconds: Self.start, channel: 0, fromCentral: nil, accessAddress: 0x8E89_BED6,
      pdu: [0xC5, UInt8(payload.count)] + payload)
  }

  /// One connection event per item, in order: the item from its side, an empty PDU (or a
  /// resend) from the other.
  private func events(_ items: [Item]) throws -> [Air] {
    var out: [Air] = []
    var sn: [Bool: UInt8] = [true: 0, false: 0]
    var nesn: [Bool: UInt8] = [true: 0, false: 0]
    var encrypting: [Bool: Bool] = [true: false, false: false]
    var counter: [Bool: UInt64] = [true: 0, false: 0]
    var cipher: LinkLayerCipher?
    var pending: [Bool: [UInt8]] = [:]  // a sealed PDU to send again
    var peripheralData = 0
    var centralEmpties = 0
    var event = 0
    var queue = items[...]
    var sealed = false
    func pdu(_ item: Item?, fromCentral: Bool) throws -> [UInt8] {
      var payload = item?.payload ?? []
      let llid = item?.llid ?? 1
      let header = llid | nesn[fromCentral]! << 2 | sn[fromCentral]! << 3
      sealed = encrypting[fromCentral]! && !payload.isEmpty && cipher != nil
      if encrypting[fromCentral]!, !payload.isEmpty, let cipher {
        payload = try cipher.encrypt(
          payload, header: header, counter: counter[fromCentral]!, fromCentral: fromCentral)
        counter[fromCentral]! += 1
      }
      return [header, UInt8(payload.count)] + payload
    }
    while !queue.isEmpty || pending[false] != nil {
      let time = Self.start + 5_000 + Int64(event) * 30_000
      let channel = Self.rfChannel((event + 1) * 7 % 37)
      event += 1
      // The central's packet.
      let central: Item? = queue.first?.fromCentral == true && pending[false] == nil ? queue.popFirst() : nil
      let sent = try pdu(central, fromCentral: true)
      var damaged = false
      if central == nil {
        damaged = centralEmpties == damagedEmpty
        centralEmpties += 1
      }
      out.append(
        Air(
          microseconds: time, channel: channel, fromCentral: true, accessAddress: Self.accessAddress, pdu: sent,
          damaged: damaged, sealed: sealed))
      // The peripheral has it: a new packet.
      nesn[false]! ^= 1
      sn[true]! ^= 1
      if central?.llid == 3, central?.payload.first == 0x06 { encrypting[false] = true }
      if central?.llid == 3, central?.payload.first == 0x02 { break }
      // The peripheral's answer: a resend, its next item, or an empty PDU.
      let answer: [UInt8]
      var item: Item?
      if let again = pending.removeValue(forKey: false) {
        answer = [again[0] & 0xF3 | nesn[false]! << 2 | sn[false]! << 3] + again.dropFirst()
        sealed = encrypting[false]! && again.count > 2
      } else {
        if queue.first?.fromCentral == false { item = queue.popFirst() }
        answer = try pdu(item, fromCentral: false)
      }
      let at = time + Int64(sent.count + 4 + 3 + 1) * 8 + 150
      out.append(
        Air(
          microseconds: at, channel: channel, fromCentral: false, accessAddress: Self.accessAddress, pdu: answer,
          sealed: sealed))
      if item != nil && item?.llid != 3 {
        defer { peripheralData += 1 }
        if peripheralData == missedByCentral {
          // The central misses it: its next packet does not acknowledge it; it comes again.
          pending[false] = answer
          continue
        }
      }
      nesn[true]! ^= 1
      sn[false]! ^= 1
      if let item, item.llid == 3 {
        switch item.payload.first {
        case 0x04:
          cipher = try LinkLayerCipher(
            ltk: ltk, centralDiversifier: number(Self.skdC), peripheralDiversifier: number(Self.skdP),
            centralIV: UInt32(number(Self.ivC)), peripheralIV: UInt32(number(Self.ivP)))
        case 0x05: encrypting[true] = true
        default: break
        }
      }
    }
    return out
  }

  /// Data channel index to RF channel (Core v5.3, Vol 6, Part A, 2).
  static func rfChannel(_ index: Int) -> UInt8 { UInt8(index <= 10 ? index + 1 : index + 2) }

  private func number(_ octets: [UInt8]) -> UInt64 { octets.reversed().reduce(0) { $0 << 8 | UInt64($1) } }

  private func littleEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
  }

  /// The session as classic pcap, link type 256.
  var pcap: [UInt8] {
    get throws { pcap(try air) }
  }

  /// `packets` as classic pcap, link type 256: the RF header (channel, signal -60 dBm,
  /// noise, no access address offenses, the reference access address; flags dewhitened,
  /// signal valid, reference valid, offenses valid, CRC checked and valid when `crcChecked`,
  /// the direction when `directionInHeader`), the access address, the PDU and its CRC.
  func pcap(_ packets: [Air]) -> [UInt8] {
    var file = littleEndian(0xA1B2_C3D4, 4) + [2, 0, 4, 0] + littleEndian(0, 8) + littleEndian(65_535, 4)
    file += littleEndian(nordic ? 272 : 256, 4)
    for (index, packet) in packets.enumerated() {
      let data = nordic ? nordicPacket(packet, counter: index) : rfPacket(packet)
      file += littleEndian(UInt64(packet.microseconds / 1_000_000), 4)
      file += littleEndian(UInt64(packet.microseconds % 1_000_000), 4)
      file += littleEndian(UInt64(data.count), 4) + littleEndian(UInt64(data.count), 4) + data
    }
    return file
  }

  /// The access address, the PDU and its CRC (made wrong for a damaged packet).
  private func onTheAir(_ packet: Air) -> [UInt8] {
    let initial = packet.accessAddress == 0x8E89_BED6 ? 0x55_5555 : Self.crcInit
    var crc = AirSession.crc(packet.pdu, initial: initial)
    if packet.damaged { crc[0] ^= 0x5A }
    return littleEndian(UInt64(packet.accessAddress), 4) + packet.pdu + crc
  }

  /// A packet as the nRF Sniffer writes it (protocol version 3; Wireshark's
  /// packet-nordic_ble.c describes the format): board, payload length, version, packet
  /// counter, packet ID (0x02 advertising, 0x06 data); the event header (its length 10,
  /// flags: CRC right, from the central, encrypted with its MIC checked, the MIC right; the
  /// channel index; RSSI 60, -60 dBm; event counter; timestamp); the packet from the air.
  /// A sealed packet is marked encrypted with its MIC wrong, as the sniffer marks what it
  /// has no key for.
  private func nordicPacket(_ packet: Air, counter: Int) -> [UInt8] {
    let advertising = packet.accessAddress == 0x8E89_BED6
    var flags: UInt8 = packet.damaged ? 0 : 0x01
    if !advertising {
      if packet.fromCentral == true { flags |= 0x02 }
      if packet.flags & 0x1000 != 0 { flags |= 0x04 | (packet.flags & 0x2000 != 0 ? 0x08 : 0) }
      if packet.sealed { flags |= 0x04 }
    }
    let rf = Int(packet.channel)
    let index = UInt8(rf == 0 ? 37 : rf == 12 ? 38 : rf == 39 ? 39 : rf <= 11 ? rf - 1 : rf - 2)
    let event =
      [10, flags, index, 60] + littleEndian(0, 2) + littleEndian(UInt64(packet.microseconds & 0xFFFF_FFFF), 4)
    let payload = event + onTheAir(packet)
    return [0x01] + littleEndian(UInt64(payload.count), 2) + [3] + littleEndian(UInt64(counter), 2)
      + [advertising ? 0x02 : 0x06] + payload
  }

  /// A packet with link type 256's RF header.
  private func rfPacket(_ packet: Air) -> [UInt8] {
    var flags: UInt16 = 0x0001 | 0x0002 | 0x0010 | 0x0020 | packet.flags
    if crcChecked { flags |= packet.damaged ? 0x0400 : 0x0C00 }
    if directionInHeader, let fromCentral = packet.fromCentral { flags |= (fromCentral ? 2 : 3) << 7 }
    return [packet.channel, 0xC4, 0xA6, 0] + littleEndian(UInt64(packet.accessAddress), 4)
      + littleEndian(UInt64(flags), 2) + onTheAir(packet)
  }

  /// The LE CRC, written from the specification's description (Vol 6, Part B, 3.1.1) apart
  /// from the reader's: a shift register of 24 positions, position 23's output XOR the
  /// next data bit fed back into positions 0, 1, 3, 4, 6, 9 and 10; sent from position 23.
  static func crc(_ pdu: [UInt8], initial: UInt32) -> [UInt8] {
    var positions = (0..<24).map { initial >> $0 & 1 == 1 }
    for byte in pdu {
      for bit in 0..<8 {
        let feedback = positions[23] != (byte >> bit & 1 == 1)
        positions = [feedback] + positions.prefix(23)
        if feedback {
          for tap in [1, 3, 4, 6, 9, 10] { positions[tap].toggle() }
        }
      }
    }
    let sent = positions.reversed()  // position 23 first
    return stride(from: 0, to: 24, by: 8).map { start in
      sent.dropFirst(start).prefix(8).enumerated().reduce(UInt8(0)) { $0 | ($1.element ? 1 << $1.offset : 0) }
    }
  }
}

/// Reading an LE sniffer's capture (issue #18 item 1).
@Suite struct SnifferTests {
  /// What the HCI log of the same session tells, without the notes only the air has.
  static func told(_ events: [CaptureEvent]) -> [String] {
    events.filter { $0.event != "linkLayer" }.map(\.text)
  }

  static func timeline(_ bytes: [UInt8], keys: [UInt128]) throws -> [CaptureEvent] {
    var inspector = CaptureInspector()
    for record in try CaptureFormat.read(bytes, keys: keys).records { inspector.take(record) }
    inspector.finish()
    return inspector.timeline
  }

  /// With its LTK, the sniffer's capture tells what the peripheral's HCI log tells, whether
  /// the direction comes from timing or the RF header and the CRC from the reader or the
  /// sniffer; the retransmission is read once and the damaged packet left out.
  /// The same from the nRF Sniffer's capture (link type 272), whose header says both.
  @Test(arguments: [(false, false, false), (true, true, false), (true, true, true)])
  func withItsLTKTheAirTellsWhatTheHCILogTells(directionInHeader: Bool, crcChecked: Bool, nordic: Bool) throws {
    let session = Session()
    let hci = try SnifferTests.timeline(session.h4, keys: [])
    var air = AirSession(packets: session.packets)
    air.directionInHeader = directionInHeader
    air.crcChecked = crcChecked
    air.nordic = nordic
    let bytes = try air.pcap
    #expect(
      try CaptureFormat.read(bytes).format
        == (nordic
          ? "pcap, nRF Sniffer for Bluetooth LE, told as the peripheral's host"
          : "pcap, LE link layer from a sniffer, told as the peripheral's host"))
    let events = try Self.timeline(bytes, keys: [0x1234, air.ltk])
    #expect(Self.told(events) == Self.told(hci), "\(events.map(\.text))")
    let notes = events.filter { $0.event == "linkLayer" }.map(\.text)
    #expect(
      notes == [
        "CONNECT_IND from C0:00:00:00:00:01 random (central) to D0:11:22:33:44:55 random (peripheral): "
          + "access address 0x50654A8B, interval 30.0 ms, latency 0, timeout 720 ms, hop 7",
        "the link layer starts encryption",
        "1 retransmission read once; 1 packet with a wrong CRC left out",
      ], "\(notes)")
    #expect(events.first { $0.event == "connected" }?.text == "connected to C0:00:00:00:00:01, this host peripheral")
    // Numbered as the file's packets: the answer is far past its HCI record.
    let answer = try #require(events.first { $0.event == "answer" })
    #expect(answer.record > (hci.first { $0.event == "answer" }?.record ?? 0))
  }

  /// Without the LTK the story stops where the link is encrypted, and says why; with a
  /// wrong one it says the key does not open it.
  @Test func withoutTheLTKTheEncryptedPartIsNotRead() throws {
    let air = AirSession(packets: Session().packets)
    let bytes = try air.pcap
    let hci = Self.told(try Self.timeline(Session().h4, keys: []))
    let cut = try #require(hci.firstIndex(of: "link encrypted"))
    for (keys, why) in [
      ([UInt128](), "the link layer starts encryption: give its LTK (--ltk) to read the rest"),
      ([air.ltk ^ 1], "the link layer starts encryption"),
    ] {
      let events = try Self.timeline(bytes, keys: keys)
      let told = Self.told(events)
      #expect(Array(told.prefix(cut + 1)) == Array(hci.prefix(cut + 1)), "\(told)")
      #expect(!told.contains { $0.contains("Added") }, "\(told)")
      let notes = events.filter { $0.event == "linkLayer" }.map(\.text)
      #expect(notes.contains(why), "\(notes)")
      #expect(notes.last?.contains("encrypted packets not read") == true, "\(notes)")
      if !keys.isEmpty {
        #expect(
          notes.contains {
            $0 == "the LTK given does not open this link (the MIC of its first encrypted packet does not match): "
              + "its encrypted packets are not read"
          }, "\(notes)")
      }
    }
  }

  /// The specification's sample packets (Vol 6, Part C, 1.2) through the reader: its
  /// LL_ENC_REQ and LL_ENC_RSP values, then LL_START_ENC_RSP1 and 2 and LL_DATA1 and 2 as
  /// they are on the air, give the plaintext of the data packets as ACL data.
  @Test func theSpecificationsSamplePacketsAreRead() throws {
    var air = AirSession(packets: [])
    air.directionInHeader = true
    let address = AirSession.accessAddress
    var packets: [AirSession.Air] = []
    func add(_ fromCentral: Bool, _ pdu: [UInt8]) {
      packets.append(
        AirSession.Air(
          microseconds: AirSession.start + Int64(packets.count) * 1000, channel: 5, fromCentral: fromCentral,
          accessAddress: address, pdu: pdu))
    }
    // LL_ENC_REQ: Rand 0xABCDEF1234567890, EDIV 0x2474, SKDm, IVm; LL_ENC_RSP: SKDs, IVs.
    add(
      true,
      [0x03, 23, 0x03, 0x90, 0x78, 0x56, 0x34, 0x12, 0xEF, 0xCD, 0xAB, 0x74, 0x24] + AirSession.skdC + AirSession.ivC)
    add(false, [0x07, 13, 0x04] + AirSession.skdP + AirSession.ivP)
    add(false, [0x03, 1, 0x05])
    add(true, Hex.decode("0f059fcda7f448")!)
    add(false, Hex.decode("0705a34c13a415")!)
    add(true, Hex.decode("0e1f7a70d66415226df26b17839a060405596bd6564f796b5b9ce6ff32f75a6d33")!)
    add(false, Hex.decode("061ff38881e7bd94c9c369b9a66846dd4786aa8c39ce540d0dae3adcdf89b96088")!)
    // A crafted LL Control PDU of a MIC alone (no opcode), sealed right: read, and nothing.
    let sample = try LinkLayerCipher(
      ltk: 0x4C68_3841_39F5_74D8_36BC_F34E_9DFB_01BF, centralDiversifier: 0xACBD_CEDF_E0F1_0213,
      peripheralDiversifier: 0x0213_2435_4657_6879, centralIV: 0xBADC_AB24, peripheralIV: 0xDEAF_BABE)
    let micOnly = try sample.encrypt([], header: 0x03, counter: 2, fromCentral: true)
    add(true, [0x03, UInt8(micOnly.count)] + micOnly)
    let bytes = air.pcap(packets)
    let records = try CaptureFormat.read(bytes, keys: [0x4C68_3841_39F5_74D8_36BC_F34E_9DFB_01BF]).records
    let data = records.filter { $0.kind == .acl }.map { (Array($0.bytes.dropFirst(4)), $0.sent) }
    #expect(data.count == 2)
    #expect(data.first?.0 == Hex.decode("1700636465666768696a6b6c6d6e6f707131323334353637383930"))
    #expect(data.first?.1 == false)
    #expect(data.last?.0 == Hex.decode("170037363534333231304142434445464748494a4b4c4d4e4f5051"))
    #expect(data.last?.1 == true)
    let changes = records.filter { $0.kind == .event }.map(\.bytes)
    #expect(changes == [[0x08, 4, 0x00, 0x40, 0x00, 0x01]])
    #expect(
      records.compactMap(\.note?.text).first
        == "a connection already open (access address 0x50654A8B, no CONNECT_IND in the capture): its direction from timing, and encrypted traffic unreadable without its LL_ENC_REQ"
    )
  }

  /// Packets the sniffer decrypted itself are read as they are; when it checked their MIC,
  /// the MIC is left out, and a MIC it found wrong leaves the packet out.
  @Test func packetsTheSnifferDecryptedAreRead() throws {
    var air = AirSession(packets: [])
    air.directionInHeader = true
    let attWrite: [UInt8] = [0x07, 0x00, 0x04, 0x00, 0x12, 0x0E, 0x00, 0x00, 0x2A, 0x00]  // L2CAP, Write Request
    let mic: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
    var packets: [AirSession.Air] = []
    for (index, flags) in [0x0008, 0x3008, 0x1008].enumerated() {
      let body = flags == 0x0008 ? attWrite : attWrite + mic
      packets.append(
        AirSession.Air(
          microseconds: AirSession.start + Int64(index) * 30_000, channel: UInt8(1 + index), fromCentral: false,
          accessAddress: AirSession.accessAddress, pdu: [0x02 | UInt8(index & 1) << 3, UInt8(body.count)] + body,
          flags: UInt16(flags)))
    }
    let read = try CaptureFormat.read(air.pcap(packets))
    let acl = read.records.filter { $0.kind == .acl }.map { Array($0.bytes.dropFirst(4)) }
    #expect(acl == [attWrite, attWrite], "\(acl)")
    #expect(read.records.filter { $0.kind == .acl }.map(\.number) == [1, 2])
    // The nRF Sniffer says "encrypted, MIC checked" (flags bit 2) and "MIC right" (bit 3):
    // with both it decrypted the packet, which is read without its MIC.
    air.nordic = true
    let nordic = try CaptureFormat.read(air.pcap([packets[1]]))
    #expect(nordic.records.filter { $0.kind == .acl }.map { Array($0.bytes.dropFirst(4)) } == [attWrite])
  }

  /// The nRF Sniffer's header, field by field: the channel index made the RF channel, the
  /// flags the RF header's, the sniffer's own messages skipped, the formats not read refused.
  @Test func theNRFSniffersHeaderIsRead() throws {
    // An empty data PDU: access address, header, CRC.
    let data: [UInt8] = [0x8B, 0x4A, 0x65, 0x50, 0x01, 0x00, 0xAA, 0xBB, 0xCC]
    // An ADV_IND with no payload, on the advertising access address.
    let advertising: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0x00, 0x00, 0xAA, 0xBB, 0xCC]
    func packet(id: UInt8 = 0x06, version: UInt8 = 3, flags: UInt8, channel: UInt8, air: [UInt8]? = nil) -> [UInt8] {
      let payload: [UInt8] = [10, flags, channel, 60, 0, 0, 0, 0, 0, 0] + (air ?? data)
      return [0x01, UInt8(payload.count), 0, version, 7, 0, id] + payload
    }
    // Index 255 names no channel (and must not overflow).
    for (index, rf) in [(37, 0), (38, 12), (39, 39), (0, 1), (10, 11), (11, 13), (36, 38), (255, 255)]
      as [(UInt8, UInt8)]
    {
      let read = try #require(try AirPacket.readNordic(packet(flags: 0x01, channel: index), number: 1, microseconds: 0))
      #expect(read.channel == rf, "channel index \(index)")
    }
    // CRC right, from the central, LE 2M; then CRC wrong, from the peripheral.
    let central = try #require(try AirPacket.readNordic(packet(flags: 0x13, channel: 5), number: 1, microseconds: 0))
    #expect(central.direction == true && central.flags >> 14 == 1 && !central.damaged)
    #expect(central.accessAddress == 0x5065_4A8B && central.pdu == [0x01, 0x00] && central.crc == [0xAA, 0xBB, 0xCC])
    let damaged = try #require(try AirPacket.readNordic(packet(flags: 0x00, channel: 5), number: 1, microseconds: 0))
    #expect(damaged.direction == false && damaged.damaged)
    // Decrypted by the sniffer, its MIC checked and right; encrypted with no key (the MIC
    // wrong): the air's ciphertext, for the link's key.
    let masks = AirPacket.decrypted | AirPacket.micChecked | AirPacket.micValid
    let decrypted = try #require(try AirPacket.readNordic(packet(flags: 0x0D, channel: 5), number: 1, microseconds: 0))
    #expect(decrypted.flags & masks == 0x3008)
    let sealed = try #require(try AirPacket.readNordic(packet(flags: 0x05, channel: 5), number: 1, microseconds: 0))
    #expect(sealed.flags & masks == 0)
    // Advertising: version 3 says so by its ID (0x02), and one off the advertising access
    // address (periodic advertising) is not read; versions 1 and 2 by the access address.
    for (id, version, air, isAdvertising) in [
      (0x02, 3, advertising, true), (0x06, 2, advertising, true), (0x06, 1, advertising, true),
      (0x06, 2, data, false),
    ] as [(UInt8, UInt8, [UInt8], Bool)] {
      let read = try #require(
        try AirPacket.readNordic(
          packet(id: id, version: version, flags: 0x03, channel: 37, air: air), number: 1,
          microseconds: 0))
      #expect(read.isAdvertising == isAdvertising && (read.direction == nil) == isAdvertising, "\(id) \(version)")
    }
    #expect(try AirPacket.readNordic(packet(id: 0x02, flags: 0x01, channel: 5), number: 1, microseconds: 0) == nil)
    // EVENT_FOLLOW and EVENT_DISCONNECT carry no packet.
    for id: UInt8 in [0x01, 0x09] {
      #expect(try AirPacket.readNordic(packet(id: id, flags: 0x01, channel: 5), number: 1, microseconds: 0) == nil)
    }
    #expect(throws: CaptureError("packet 4: nRF Sniffer protocol version 4 is not read (1 to 3 are)")) {
      try AirPacket.readNordic(packet(version: 4, flags: 0x01, channel: 5), number: 4, microseconds: 0)
    }
    #expect(
      throws: CaptureError("packet 2 is in the nRF Sniffer's format before protocol version 1, which is not read")
    ) { try AirPacket.readNordic([0xBE, 0xEF] + packet(flags: 0x01, channel: 5), number: 2, microseconds: 0) }
  }

  /// tshark reads the test's captures as a sniffer's: every CRC right (Wireshark checks it
  /// with the CONNECT_IND's CRCInit), the ATT before encryption decoded, nothing malformed.
  /// The nRF Sniffer's form of it too: Wireshark finds its lengths right and hands each
  /// packet on to its LE link layer dissector.
  @Test(.enabled(if: tsharkAvailable, "tshark is not installed"), arguments: [false, true])
  func tsharkReadsTheAirAsASniffersCapture(nordic: Bool) async throws {
    let tshark = try #require(tsharkPath)
    let path = NSTemporaryDirectory() + "ancs-air-\(getpid())-\(nordic).pcap"
    defer { try? FileManager.default.removeItem(atPath: path) }
    var session = AirSession(packets: Session().packets)
    session.damagedEmpty = nil
    session.nordic = nordic
    let packets = try session.air
    try Data(session.pcap(packets)).write(to: URL(fileURLWithPath: path))
    let (status, output, error) = try await offThread {
      try runToCompletion(tshark, ["-r", path, "-T", "fields", "-e", "btle.crc.incorrect", "-e", "btatt.opcode"])
    }
    #expect(status == 0, "\(error)")
    let rows = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(rows.count == packets.count)
    #expect(!rows.contains { !$0.hasPrefix("\t") }, "a CRC tshark finds wrong")
    // The ATT before encryption: Exchange MTU and Read By Type, request and response.
    let opcodes = rows.compactMap { $0.split(separator: "\t").last }.filter { !$0.isEmpty }
    #expect(opcodes.prefix(4) == ["0x02", "0x03", "0x08", "0x09"], "\(opcodes)")
    let malformed = try await offThread { try runToCompletion(tshark, ["-r", path, "-Y", "_ws.malformed"]) }
    #expect(malformed.output.isEmpty, "\(malformed.output)")
  }
}

extension SnifferTests {
  /// Protocol/vectors/sniffer-session.pcap, the example of `ancs inspect --help`, is the test
  /// session's air capture (`ANCS_WRITE_VECTORS=1 swift test --filter SnifferTests` writes it).
  @Test func theVectorFileIsTheTestSessionsAir() throws {
    let url = VectorFiles.directory.appendingPathComponent("sniffer-session.pcap")
    let made = try AirSession(packets: Session().packets).pcap
    if ProcessInfo.processInfo.environment["ANCS_WRITE_VECTORS"] == "1" { try Data(made).write(to: url) }
    #expect(
      Array(try Data(contentsOf: url)) == made,
      "Protocol/vectors/sniffer-session.pcap is not the test session's air: ANCS_WRITE_VECTORS=1 writes it")
  }
}
