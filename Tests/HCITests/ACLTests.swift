import HCI
import Testing
import Wire

@Suite struct ACLTests {
  /// An ATT PDU of 100 bytes in an L2CAP B-frame: 104 bytes.
  static let pdu = L2CAPFrame(channel: .att, payload: (0..<100).map { UInt8($0) }).encoded

  @Test func headerCodec() throws {
    let packet = try ACLPacket(decoding: bytes("40 20 03 00 aa bb cc"))
    #expect(packet == ACLPacket(handle: 0x0040, packetBoundary: .firstFlushable, data: [0xaa, 0xbb, 0xcc]))
    let other = ACLPacket(handle: 0x0EFF, packetBoundary: .continuing, broadcast: 0b01, data: [])
    #expect(Hex.encode(other.encoded) == "ff 5e 00 00")
    #expect(try ACLPacket(decoding: other.encoded) == other)
    #expect(ACLPacket(handle: 0xFFFF, packetBoundary: .complete, data: []).handle == 0x0FFF)
    expectTotal(bytes("40 20 03 00 aa bb cc")) { bytes throws(HCIDecodeError) in try ACLPacket(decoding: bytes) }
  }

  @Test(arguments: [1, 2, 5, 23, 27, 103, 104, 251, 1000])
  func fragmentsToTheBufferSize(_ size: Int) throws {
    let packets = ACLPacket.fragments(of: Self.pdu, handle: 0x0040, bufferSize: size)
    #expect(packets.count == (Self.pdu.count + size - 1) / size)
    #expect(packets.allSatisfy { $0.data.count <= size && $0.handle == 0x0040 && $0.broadcast == 0 })
    #expect(packets.first?.packetBoundary == .firstNonFlushable)
    #expect(packets.dropFirst().allSatisfy { $0.packetBoundary == .continuing })
    #expect(Array(packets.map(\.data).joined()) == Self.pdu)
    // The same fragments, as a controller would send them, reassemble to the PDU.
    var reassembler = ACLReassembler()
    var results: [[UInt8]] = []
    for var packet in packets {
      if packet.packetBoundary == .firstNonFlushable { packet.packetBoundary = .firstFlushable }
      let decoded = try ACLPacket(decoding: packet.encoded)
      if let pdu = try reassembler.push(decoded) { results.append(pdu) }
    }
    #expect(results == [Self.pdu])
    #expect(reassembler.pendingHandles == [])
  }

  @Test func fragmentsAnEmptyPDUAndClampsTheBufferSize() {
    #expect(
      ACLPacket.fragments(of: [], handle: 1, bufferSize: 27) == [
        ACLPacket(handle: 1, packetBoundary: .firstNonFlushable, data: [])
      ])
    #expect(ACLPacket.fragments(of: [1, 2], handle: 1, bufferSize: 0).count == 2)
  }

  /// Bumble's controller advertises 27 bytes and sends 66-byte packets: take them whole.
  @Test func reassemblesFragmentsLargerThanTheBufferSize() throws {
    var reassembler = ACLReassembler()
    let whole = ACLPacket(handle: 0x0001, packetBoundary: .firstFlushable, data: Self.pdu)
    #expect(try reassembler.push(whole) == Self.pdu)
  }

  @Test func reassemblesAtEverySplitPoint() throws {
    for split in 1..<Self.pdu.count {
      var reassembler = ACLReassembler()
      let first = ACLPacket(handle: 2, packetBoundary: .firstFlushable, data: Array(Self.pdu[0..<split]))
      let rest = ACLPacket(handle: 2, packetBoundary: .continuing, data: Array(Self.pdu[split...]))
      #expect(try reassembler.push(first) == nil, "split at \(split)")
      #expect(try reassembler.push(rest) == Self.pdu, "split at \(split)")
    }
  }

  @Test func keepsHandlesApart() throws {
    var reassembler = ACLReassembler()
    let other = L2CAPFrame(channel: .smp, payload: [0x0b, 0x2d]).encoded
    #expect(
      try reassembler.push(ACLPacket(handle: 1, packetBoundary: .firstFlushable, data: Array(Self.pdu[0..<10]))) == nil)
    #expect(
      try reassembler.push(ACLPacket(handle: 2, packetBoundary: .firstFlushable, data: Array(other[0..<3]))) == nil)
    #expect(reassembler.pendingHandles == [1, 2])
    #expect(try reassembler.push(ACLPacket(handle: 2, packetBoundary: .continuing, data: Array(other[3...]))) == other)
    #expect(
      try reassembler.push(ACLPacket(handle: 1, packetBoundary: .continuing, data: Array(Self.pdu[10...]))) == Self.pdu)
  }

  @Test func continuationWithoutStartIsRefused() {
    var reassembler = ACLReassembler()
    #expect(throws: ACLReassemblyError.continuationWithoutStart(handle: 3)) {
      try reassembler.push(ACLPacket(handle: 3, packetBoundary: .continuing, data: [1, 2]))
    }
  }

  @Test func tooManyBytesIsALengthMismatch() throws {
    var reassembler = ACLReassembler()
    // The header announces 1 byte of payload; the fragments carry 3.
    #expect(
      try reassembler.push(ACLPacket(handle: 4, packetBoundary: .firstFlushable, data: [0x01, 0x00, 0x04])) == nil)
    #expect(throws: ACLReassemblyError.lengthMismatch(handle: 4, expected: 5, received: 7)) {
      try reassembler.push(ACLPacket(handle: 4, packetBoundary: .continuing, data: [0x00, 0xaa, 0xbb, 0xcc]))
    }
    #expect(reassembler.pendingHandles == [], "the bad PDU is dropped")
    let frame = L2CAPFrame(channel: .att, payload: [0x1b]).encoded
    #expect(try reassembler.push(ACLPacket(handle: 4, packetBoundary: .firstFlushable, data: frame)) == frame)
  }

  @Test func aNewStartDropsTheIncompletePDU() throws {
    var reassembler = ACLReassembler()
    let frame = L2CAPFrame(channel: .att, payload: [0x1b, 0x01]).encoded
    #expect(
      try reassembler.push(ACLPacket(handle: 5, packetBoundary: .firstFlushable, data: Array(Self.pdu[0..<8]))) == nil)
    #expect(try reassembler.push(ACLPacket(handle: 5, packetBoundary: .firstNonFlushable, data: frame)) == frame)
    #expect(reassembler.interruptedPDUs == 1)
  }

  @Test func completeFlagIsRefusedOnLE() {
    var reassembler = ACLReassembler()
    #expect(throws: ACLReassemblyError.unexpectedPacketBoundary(handle: 6, flag: 0b11)) {
      try reassembler.push(ACLPacket(handle: 6, packetBoundary: .complete, data: [0, 0, 4, 0]))
    }
  }

  @Test func resetForgetsAHandle() throws {
    var reassembler = ACLReassembler()
    _ = try reassembler.push(ACLPacket(handle: 7, packetBoundary: .firstFlushable, data: [9, 0]))
    reassembler.reset(handle: 7)
    #expect(reassembler.pendingHandles == [])
  }

  @Test func l2capFrames() throws {
    let frame = try L2CAPFrame(decoding: bytes("03 00 04 00 aa bb cc"))
    #expect(frame == L2CAPFrame(channel: .att, payload: [0xaa, 0xbb, 0xcc]))
    #expect(frame.encoded == bytes("03 00 04 00 aa bb cc"))
    expectTotal(bytes("03 00 04 00 aa bb cc")) { bytes throws(HCIDecodeError) in try L2CAPFrame(decoding: bytes) }
    #expect([ChannelID.att.rawValue, ChannelID.leSignaling.rawValue, ChannelID.smp.rawValue] == [4, 5, 6])
    #expect(ChannelID.smp.description == "SMP(0x0006)")
    #expect(ChannelID(rawValue: 0x0040).description == "CID 0x0040")
  }
}
