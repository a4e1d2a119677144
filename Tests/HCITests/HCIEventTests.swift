import HCI
import Testing
import Wire

@Suite struct HCIEventTests {
  static let peer = BDAddress("C0:11:22:33:44:55")!

  /// Event packets (without the H4 indicator) laid out from Vol 4 Part E 7.7, and their decode.
  static let vectors: [(String, HCIEvent)] = [
    (
      "0e 04 01 03 0c 00",
      .commandComplete(.init(numHCICommandPackets: 1, commandOpcode: Reset.opcode, returnParameters: [0]))
    ),
    (
      "0e 07 01 02 20 00 1b 00 0f",
      .commandComplete(
        .init(numHCICommandPackets: 1, commandOpcode: LEReadBufferSize.opcode, returnParameters: [0, 0x1b, 0, 0x0f]))
    ),
    (
      "0f 04 00 01 0d 20",
      .commandStatus(.init(status: .success, numHCICommandPackets: 1, commandOpcode: LECreateConnection.opcode))
    ),
    (
      "05 04 00 40 00 13",
      .disconnectionComplete(.init(connectionHandle: 0x40, reason: .remoteUserTerminatedConnection))
    ),
    ("08 04 00 40 00 01", .encryptionChange(.init(connectionHandle: 0x40, encryptionEnabled: 1))),
    ("30 03 00 40 00", .encryptionKeyRefreshComplete(.init(connectionHandle: 0x40))),
    (
      "13 09 02 40 00 01 00 41 00 02 00",
      .numberOfCompletedPackets(
        .init(entries: [
          .init(connectionHandle: 0x40, numCompletedPackets: 1), .init(connectionHandle: 0x41, numCompletedPackets: 2),
        ]))
    ),
    (
      "3e 13 01 00 40 00 01 01 55 44 33 22 11 c0 18 00 00 00 f4 01 00",
      .leConnectionComplete(
        .init(
          connectionHandle: 0x40, role: 1, peerAddressType: .random, peerAddress: peer, connectionInterval: 0x18,
          supervisionTimeout: 0x1f4))
    ),
    (
      "3e 1f 0a 00 40 00 00 01 55 44 33 22 11 c0 01 02 03 04 05 46 00 00 00 00 00 00 18 00 00 00 f4 01 05",
      .leEnhancedConnectionComplete(
        .init(
          connectionHandle: 0x40, role: 0, peerAddressType: .random, peerAddress: peer,
          localResolvablePrivateAddress: BDAddress("46:05:04:03:02:01")!, connectionInterval: 0x18,
          supervisionTimeout: 0x1f4, centralClockAccuracy: 5))
    ),
    (
      "3e 0f 02 01 00 01 55 44 33 22 11 c0 03 02 01 06 c5",
      .leAdvertisingReport(
        .init(reports: [.init(eventType: 0, addressType: .random, address: peer, data: [2, 1, 6], rssi: -59)]))
    ),
    (
      "3e 0a 03 00 40 00 28 00 00 00 f4 01",
      .leConnectionUpdateComplete(
        .init(connectionHandle: 0x40, connectionInterval: 0x28, peripheralLatency: 0, supervisionTimeout: 0x1f4))
    ),
    (
      "3e 0d 05 40 00 08 07 06 05 04 03 02 01 34 12",
      .leLongTermKeyRequest(
        .init(connectionHandle: 0x40, randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0x1234))
    ),
    ("57 03 01 02 03", .unknown(code: 0x57, parameters: [1, 2, 3])),
    ("3e 02 0d ff", .leUnknown(subevent: 0x0d, parameters: [0xff])),
    ("ff 00", .unknown(code: 0xff, parameters: [])),
  ]

  @Test(arguments: vectors.indices)
  func decodesAndEncodes(_ index: Int) throws {
    let (hex, event) = Self.vectors[index]
    let packet = bytes(hex)
    #expect(try HCIEvent(decoding: packet) == event)
    #expect(Hex.encode(event.encoded) == Hex.encode(packet))
    expectTotal(packet) { bytes throws(HCIDecodeError) in try HCIEvent(decoding: bytes) }
  }

  /// With the length byte agreeing, shorter or longer parameters of a known event are refused
  /// with the event's name and the field, never taken or trapped on.
  @Test(arguments: vectors.indices)
  func refusesShortAndLongParameters(_ index: Int) throws {
    let packet = bytes(Self.vectors[index].0)
    let event = try HCIEvent(decoding: packet)
    switch event {
    case .unknown, .leUnknown: return
    default: break
    }
    let parameters = Array(packet[2...])
    // Command Complete's return parameters are open-ended: only its first three bytes are fields.
    let fixed: Int = if case .commandComplete = event { 3 } else { parameters.count }
    for length in 0..<fixed {
      let short = [packet[0], UInt8(length)] + parameters[0..<length]
      let error = decodeError { () throws(HCIDecodeError) in _ = try HCIEvent(decoding: short) }
      #expect(error?.packet != "HCI event", "names the event, at \(length)")
      if case .truncated = error?.reason {} else { Issue.record("at \(length): \(String(describing: error))") }
    }
    if case .commandComplete = event { return }
    let long = [packet[0], UInt8(parameters.count + 1)] + parameters + [0]
    let error = decodeError { () throws(HCIDecodeError) in _ = try HCIEvent(decoding: long) }
    #expect(error?.reason == .trailingBytes(count: 1))
  }

  @Test func errorsNameEventAndField() {
    let error = decodeError { () throws(HCIDecodeError) in _ = try HCIEvent(decoding: bytes("3e 04 01 00 40 00")) }
    #expect(error?.packet == "HCI_LE_Connection_Complete event")
    #expect(error?.field == "Role")
    #expect(error?.offset == 6)
    #expect(error?.description == "HCI_LE_Connection_Complete event: Role at byte 6: needs 1 byte(s), 0 left")
  }

  @Test func emptyLEMetaIsRefused() {
    let error = decodeError { () throws(HCIDecodeError) in _ = try HCIEvent(decoding: [0x3e, 0x00]) }
    #expect(error?.field == "Subevent_Code")
  }

  @Test func advertisingReportDataOver31IsRefused() {
    let packet = bytes("3e 2c 02 01 00 01 55 44 33 22 11 c0 20") + [UInt8](repeating: 0, count: 32) + [0xc5]
    let error = decodeError { () throws(HCIDecodeError) in _ = try HCIEvent(decoding: packet) }
    #expect(error?.field == "Data_Length[0]")
  }

  @Test func advertisingReportsInARow() throws {
    let one = LEAdvertisingReport.Report(
      eventType: 0, addressType: .random, address: Self.peer, data: [2, 1, 6], rssi: -40)
    let two = LEAdvertisingReport.Report(eventType: 4, addressType: .public, address: .zero, data: [], rssi: 127)
    let event = HCIEvent.leAdvertisingReport(.init(reports: [one, two]))
    #expect(try HCIEvent(decoding: event.encoded) == event)
  }

  @Test func commandCompleteStatus() throws {
    guard case .commandComplete(let complete) = try HCIEvent(decoding: bytes("0e 07 01 02 20 00 1b 00 0f")) else {
      Issue.record("not a Command Complete")
      return
    }
    #expect(complete.status == .success)
    let buffer = try LEReadBufferSize.ReturnParameters(decoding: complete.returnParameters)
    #expect(buffer.leACLDataPacketLength == 27)
    #expect(
      CommandComplete(numHCICommandPackets: 1, commandOpcode: HCIOpcode(rawValue: 0), returnParameters: []).status
        == nil)
  }

  @Test func statusNames() {
    #expect(HCIStatus.remoteUserTerminatedConnection.description == "remoteUserTerminatedConnection(19)")
    #expect(HCIStatus(rawValue: 0xEE).description == "reserved(238)")
  }
}
