import HCI
import Testing
import Wire

@Suite struct HCICommandTests {
  static let peer = BDAddress("C0:11:22:33:44:55")!
  static let ltk = u128("000102030405060708090a0b0c0d0e0f")

  /// Each command of the LE set-up and connection set, with its packet (without the H4
  /// indicator) built from the Core spec's parameter tables (Vol 4 Part E 7.1, 7.3, 7.4, 7.8).
  static let vectors: [(any HCICommand, String)] = [
    (Reset(), "03 0c 00"),
    (SetEventMask(eventMask: SetEventMask.leHost), "01 0c 08 90 80 00 02 00 80 00 20"),
    (LESetEventMask(leEventMask: LESetEventMask.leHost), "01 20 08 17 02 00 00 00 00 00 00"),
    (LEReadBufferSize(), "02 20 00"),
    (ReadBDADDR(), "09 10 00"),
    (LESetRandomAddress(randomAddress: peer), "05 20 06 55 44 33 22 11 c0"),
    (LESetAdvertisingParameters(), "06 20 0f 20 00 20 00 00 01 00 00 00 00 00 00 00 07 00"),
    (
      LESetAdvertisingData(advertisingData: [0x02, 0x01, 0x06]),
      "08 20 20 03 02 01 06" + String(repeating: " 00", count: 28)
    ),
    (LESetScanResponseData(scanResponseData: []), "09 20 20 00" + String(repeating: " 00", count: 31)),
    (LESetAdvertisingEnable(advertisingEnable: true), "0a 20 01 01"),
    (LESetScanParameters(), "0b 20 07 01 10 00 10 00 01 00"),
    (LESetScanEnable(scanEnable: true), "0c 20 02 01 01"),
    (
      LECreateConnection(peerAddressType: .public, peerAddress: BDAddress("B1:B2:B3:B4:B5:B6")!),
      "0d 20 19 10 00 10 00 00 00 b6 b5 b4 b3 b2 b1 01 18 00 28 00 00 00 f4 01 00 00 00 00"
    ),
    (LECreateConnectionCancel(), "0e 20 00"),
    (Disconnect(connectionHandle: 0x0040), "06 04 03 40 00 13"),
    (
      LEConnectionUpdate(connectionHandle: 0x0040, connection: ConnectionParameters()),
      "13 20 0e 40 00 18 00 28 00 00 00 f4 01 00 00 00 00"
    ),
    (
      LEStartEncryption(
        connectionHandle: 0x0040, randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0x1234, longTermKey: ltk),
      "19 20 1c 40 00 08 07 06 05 04 03 02 01 34 12 0f 0e 0d 0c 0b 0a 09 08 07 06 05 04 03 02 01 00"
    ),
    (
      LELongTermKeyRequestReply(connectionHandle: 0x0040, longTermKey: ltk),
      "1a 20 12 40 00 0f 0e 0d 0c 0b 0a 09 08 07 06 05 04 03 02 01 00"
    ),
    (LELongTermKeyRequestNegativeReply(connectionHandle: 0x0040), "1b 20 02 40 00"),
  ]

  @Test(arguments: vectors.indices)
  func encodesAndDecodes(_ index: Int) throws {
    let (command, hex) = Self.vectors[index]
    try check(command, bytes(hex))
  }

  private func check<C: HCICommand>(_ command: C, _ expected: [UInt8]) throws {
    #expect(Hex.encode(command.packet.encoded) == Hex.encode(expected), "\(C.packetName)")
    let packet = try HCICommandPacket(decoding: expected)
    #expect(try C(packet: packet) == command)
    expectTotal(expected) { bytes throws(HCIDecodeError) in try C(packet: HCICommandPacket(decoding: bytes)) }
    // Field by field: a packet whose length byte agrees with fewer parameters names the field.
    for length in 0..<packet.parameters.count {
      let short = HCICommandPacket(opcode: C.opcode, parameters: Array(packet.parameters[0..<length]))
      let error = decodeError { () throws(HCIDecodeError) in _ = try C(packet: short) }
      #expect(error?.packet == C.packetName)
      if case .truncated = error?.reason {
      } else {
        Issue.record("\(C.packetName) at \(length): \(String(describing: error))")
      }
    }
    let long = HCICommandPacket(opcode: C.opcode, parameters: packet.parameters + [0])
    #expect(decodeError { () throws(HCIDecodeError) in _ = try C(packet: long) }?.reason == .trailingBytes(count: 1))
  }

  @Test func opcodeSplitsIntoOGFAndOCF() {
    let opcode = LECreateConnection.opcode
    #expect(opcode.rawValue == 0x200D)
    #expect(opcode.ogf == 0x08 && opcode.ocf == 0x000D)
    #expect(HCIOpcode(ogf: 0x03, ocf: 0x0003) == Reset.opcode)
    #expect(Reset.opcode.description == "0x0c03 (OGF 0x3, OCF 0x3)")
  }

  @Test func wrongOpcodeIsRefused() {
    let error = decodeError { () throws(HCIDecodeError) in _ = try Reset(packet: ReadBDADDR().packet) }
    #expect(error?.field == "Opcode")
  }

  @Test func advertisingDataOver31BytesIsRefused() {
    let packet = HCICommandPacket(
      opcode: LESetAdvertisingData.opcode, parameters: [32] + [UInt8](repeating: 0, count: 31))
    let error = decodeError { () throws(HCIDecodeError) in _ = try LESetAdvertisingData(packet: packet) }
    #expect(error?.field == "Advertising_Data_Length")
    #expect(error?.offset == 3)
  }

  @Test func enableMustBeZeroOrOne() {
    let packet = HCICommandPacket(opcode: LESetAdvertisingEnable.opcode, parameters: [2])
    #expect(throws: HCIDecodeError.self) { try LESetAdvertisingEnable(packet: packet) }
  }

  @Test func returnParameters() throws {
    let buffer = try LEReadBufferSize.ReturnParameters(decoding: bytes("00 1b 00 0f"))
    #expect(buffer == .init(status: .success, leACLDataPacketLength: 27, totalNumLEACLDataPackets: 15))
    let address = try ReadBDADDR.ReturnParameters(decoding: bytes("00 55 44 33 22 11 c0"))
    #expect(address.address == Self.peer)
    #expect(try LongTermKeyRequestReplyReturn(decoding: [0x00, 0x40, 0x00]).connectionHandle == 0x0040)
    expectTotal(buffer.encoded) { bytes throws(HCIDecodeError) in try LEReadBufferSize.ReturnParameters(decoding: bytes)
    }
    expectTotal(address.encoded) { bytes throws(HCIDecodeError) in try ReadBDADDR.ReturnParameters(decoding: bytes) }
  }

  @Test func addresses() {
    #expect(Self.peer.description == "C0:11:22:33:44:55")
    #expect(Self.peer.isRandomStatic)
    #expect(!BDAddress("00:11:22:33:44:55")!.isRandomStatic)
    #expect(BDAddress("C0:11:22:33:44") == nil)
    #expect(BDAddress("nonsense") == nil)
    #expect(DeviceAddress(type: .random, address: Self.peer).description == "C0:11:22:33:44:55 (random)")
  }
}
