import ATT
import Testing
import Wire

/// Encoding rules that the vectors cannot show: values built in code rather than decoded.
@Suite struct ATTPDUTests {
  static let ancs = BluetoothUUID("9FBF120D-6301-42D9-8C58-25E699A21DBD")!

  /// All entries of a Find Information Response share one format: a 128-bit UUID anywhere in
  /// the list makes it format 2, with the 16-bit UUIDs written in their 128-bit form.
  @Test func findInformationResponseWithMixedUUIDsUsesFormat2() throws {
    let pdu = ATTPDU.findInformationResponse(
      .init(entries: [.init(handle: 3, type: 0x2902), .init(handle: 4, type: Self.ancs)]))
    let bytes = pdu.encoded()
    #expect(bytes.count == 2 + 2 * 18)
    #expect(bytes[1] == 2)
    #expect(Array(bytes[4..<20]) == BluetoothUUID.bit16(0x2902).littleEndian128)
    #expect(try ATTPDU(decoding: bytes) == pdu)
  }

  @Test func findInformationResponseOf16BitUUIDsUsesFormat1() throws {
    let pdu = ATTPDU.findInformationResponse(
      .init(entries: [.init(handle: 3, type: 0x2902), .init(handle: 4, type: 0x2901)]))
    #expect(pdu.encoded() == [0x05, 0x01, 0x03, 0x00, 0x02, 0x29, 0x04, 0x00, 0x01, 0x29])
  }

  @Test func everyPDUReportsItsOpcode() throws {
    let pdus: [ATTPDU] = [
      .errorResponse(.init(requestOpcode: .readRequest, handle: 1, errorCode: .invalidHandle)),
      .exchangeMTURequest(.init(clientRxMTU: 23)), .exchangeMTUResponse(.init(serverRxMTU: 23)),
      .findInformationRequest(.init(range: .all)), .readRequest(.init(handle: 1)),
      .writeResponse(.init()), .handleValueConfirmation(.init()),
      .writeCommand(.init(handle: 1, value: [])), .unknown(opcode: 0x0E, parameters: [1, 0]),
    ]
    for pdu in pdus {
      #expect(pdu.encoded().first == pdu.opcode.rawValue)
      #expect(try ATTPDU(decoding: pdu.encoded()) == pdu)
    }
  }

  @Test func opcodeClasses() {
    #expect(ATTOpcode.writeCommand.isCommand && !ATTOpcode.writeCommand.needsResponse)
    #expect(ATTOpcode.signedWriteCommand.isCommand)
    #expect(ATTOpcode.readRequest.needsResponse)
    #expect(ATTOpcode.readMultipleRequest.needsResponse, "known but not implemented: refused with an error")
    #expect(!ATTOpcode.readResponse.needsResponse)
    #expect(!ATTOpcode.handleValueNotification.needsResponse)
    #expect(!ATTOpcode.handleValueConfirmation.needsResponse)
    #expect(ATTOpcode(rawValue: 0x3F).needsResponse, "an unknown request is answered Request Not Supported")
    #expect(!ATTOpcode(rawValue: 0x7F).needsResponse, "an unknown command is ignored")
  }

  @Test func decodeErrorsDescribeThemselves() {
    let error = #expect(throws: ATTDecodeError.self) { try ATTPDU(decoding: [0x0A, 0x03]) }
    #expect(error?.description == "readRequest(10) AttributeHandle at byte 1: needs 2 byte(s), 1 left")
    let empty = #expect(throws: ATTDecodeError.self) { try ATTPDU(decoding: []) }
    #expect(empty?.description == "Opcode at byte 0: no opcode")
  }
}
