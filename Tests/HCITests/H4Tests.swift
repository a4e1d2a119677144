import HCI
import Testing

@Suite struct H4Tests {
  /// One packet of each type, back to back: command (Reset), ACL, SCO, event (Command
  /// Complete), ISO (its length is 14 bits: the top two bits are RFU and ignored).
  static let stream: [UInt8] =
    [0x01, 0x03, 0x0C, 0x00]
    + [0x02, 0x40, 0x20, 0x03, 0x00, 0xAA, 0xBB, 0xCC]
    + [0x03, 0x01, 0x00, 0x02, 0x11, 0x22]
    + [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
    + [0x05, 0x01, 0x00, 0x01, 0xC0, 0x99]
  static let expected: [H4Packet] = [
    H4Packet(type: .command, bytes: [0x03, 0x0C, 0x00]),
    H4Packet(type: .acl, bytes: [0x40, 0x20, 0x03, 0x00, 0xAA, 0xBB, 0xCC]),
    H4Packet(type: .sco, bytes: [0x01, 0x00, 0x02, 0x11, 0x22]),
    H4Packet(type: .event, bytes: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
    H4Packet(type: .iso, bytes: [0x01, 0x00, 0x01, 0xC0, 0x99]),
  ]

  @Test func decodesPacketsBackToBack() throws {
    var decoder = H4Decoder()
    #expect(try decoder.packets(after: Self.stream) == Self.expected)
    #expect(decoder.pendingCount == 0)
    #expect(Self.expected.flatMap(\.encoded) == Self.stream)
  }

  @Test func decodesByteByByte() throws {
    var decoder = H4Decoder()
    var packets: [H4Packet] = []
    for byte in Self.stream { packets += try decoder.packets(after: [byte]) }
    #expect(packets == Self.expected)
  }

  /// Every split of the stream into two chunks gives the same packets.
  @Test func decodesAtEverySplitPoint() throws {
    for split in 0...Self.stream.count {
      var decoder = H4Decoder()
      let first = try decoder.packets(after: Self.stream[0..<split])
      let second = try decoder.packets(after: Self.stream[split...])
      #expect(first + second == Self.expected, "split at \(split)")
    }
  }

  @Test func waitsForTheWholePacket() throws {
    var decoder = H4Decoder()
    #expect(try decoder.packets(after: [0x04, 0x0E]) == [])
    #expect(decoder.pendingCount == 2)
    #expect(try decoder.packets(after: [0x01, 0x05]) == [H4Packet(type: .event, bytes: [0x0E, 0x01, 0x05])])
  }

  @Test func longStreamStaysCorrect() throws {
    var decoder = H4Decoder()
    let packet = H4Packet(type: .acl, bytes: [0x40, 0x20, 0xFB, 0x00] + [UInt8](repeating: 7, count: 251))
    let stream = Array([[UInt8]](repeating: packet.encoded, count: 100).joined())
    var packets: [H4Packet] = []
    for start in stride(from: 0, to: stream.count, by: 97) {
      packets += try decoder.packets(after: stream[start..<min(start + 97, stream.count)])
    }
    #expect(packets == [H4Packet](repeating: packet, count: 100))
  }

  /// An unknown indicator is terminal: packets before it come out, then the error, then the
  /// same error on every later call, whatever arrives.
  @Test func unknownIndicatorIsTerminal() throws {
    var decoder = H4Decoder()
    decoder.append([0x04, 0x0E, 0x01, 0x05, 0x09, 0x04, 0x0E])
    #expect(try decoder.next() == H4Packet(type: .event, bytes: [0x0E, 0x01, 0x05]))
    let error = H4Error.unknownPacketIndicator(0x09, offset: 4)
    #expect(throws: error) { try decoder.next() }
    #expect(decoder.failure == error)
    #expect(throws: error) { try decoder.packets(after: [0x04, 0x0E, 0x00]) }
    #expect(decoder.pendingCount == 0)
    #expect(error.description.contains("0x09"))
  }

  @Test(arguments: [0x00, 0x06, 0xFF] as [UInt8])
  func refusesIndicator(_ byte: UInt8) {
    var decoder = H4Decoder()
    #expect(throws: H4Error.unknownPacketIndicator(byte, offset: 0)) { try decoder.packets(after: [byte]) }
  }
}
