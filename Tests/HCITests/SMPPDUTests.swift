import HCI
import Testing
import Wire

@Suite struct SMPPDUTests {
  static let value = u128("000102030405060708090a0b0c0d0e0f")
  /// `value` on the wire: least significant byte first.
  static let valueLE = "0f 0e 0d 0c 0b 0a 09 08 07 06 05 04 03 02 01 00"

  /// Every SMP command (Vol 3 Part H 3.5, 3.6) and its bytes.
  static let vectors: [(SMPPDU, String)] = [
    (
      .pairingRequest(
        PairingFeatures(
          ioCapability: .noInputNoOutput, authReq: [.bonding, .mitm, .secureConnections, .ct2],
          initiatorKeyDistribution: [.encKey, .idKey, .signKey, .linkKey], responderKeyDistribution: [.encKey, .idKey])),
      "01 03 00 2d 10 0f 03"
    ),
    (
      .pairingResponse(
        PairingFeatures(
          ioCapability: .displayYesNo, oobDataFlag: 0, authReq: [.bonding, .secureConnections],
          maxEncryptionKeySize: 7, initiatorKeyDistribution: [], responderKeyDistribution: [.encKey])),
      "02 01 00 09 07 00 01"
    ),
    (.pairingConfirm(value), "03 " + valueLE),
    (.pairingRandom(value), "04 " + valueLE),
    (.pairingFailed(.dhKeyCheckFailed), "05 0b"),
    (.encryptionInformation(ltk: value), "06 " + valueLE),
    (.centralIdentification(ediv: 0x1234, rand: 0x0102_0304_0506_0708), "07 34 12 08 07 06 05 04 03 02 01"),
    (.identityInformation(irk: value), "08 " + valueLE),
    (
      .identityAddressInformation(DeviceAddress(type: .random, address: BDAddress("C0:11:22:33:44:55")!)),
      "09 01 55 44 33 22 11 c0"
    ),
    (.signingInformation(csrk: value), "0a " + valueLE),
    (.securityRequest([.bonding, .mitm]), "0b 05"),
    (.pairingDHKeyCheck(value), "0d " + valueLE),
    (.keypressNotification(.passkeyDigitEntered), "0e 01"),
  ]

  @Test(arguments: vectors.indices)
  func decodesAndEncodes(_ index: Int) throws {
    let (pdu, hex) = Self.vectors[index]
    let packet = bytes(hex)
    #expect(Hex.encode(pdu.encoded) == Hex.encode(packet))
    #expect(try SMPPDU(decoding: packet) == pdu)
    #expect(pdu.code.rawValue == packet[0])
    expectTotal(packet) { bytes throws(HCIDecodeError) in try SMPPDU(decoding: bytes) }
  }

  /// The debug public key goes on the air as X then Y, each least significant byte first.
  @Test func pairingPublicKeyIsLittleEndianPerCoordinate() throws {
    let pdu = SMPPDU.pairingPublicKey(CryptoTests.publicA)
    let encoded = pdu.encoded
    #expect(encoded.count == 65)
    #expect(Array(encoded[0..<5]) == [0x0c, 0xe6, 0x9d, 0x35, 0x0e])
    #expect(Array(encoded[33..<37]) == [0x8b, 0xd2, 0x89, 0x15])
    #expect(try SMPPDU(decoding: encoded) == pdu)
    expectTotal(encoded) { bytes throws(HCIDecodeError) in try SMPPDU(decoding: bytes) }
  }

  @Test func errorsNameTheCommandAndField() {
    let error = decodeError { () throws(HCIDecodeError) in _ = try SMPPDU(decoding: [0x01, 0x03, 0x00]) }
    #expect(error?.packet == "SMP pairingRequest")
    #expect(error?.field == "AuthReq")
    #expect(error?.offset == 3)
  }

  @Test func unknownAndEmptyPDUs() {
    #expect(
      decodeError { () throws(HCIDecodeError) in _ = try SMPPDU(decoding: [0x0f, 0x00]) }?.reason == .unknownCode(0x0f))
    let empty = decodeError { () throws(HCIDecodeError) in _ = try SMPPDU(decoding: []) }
    #expect(empty?.field == "Code")
    #expect(SMPReason.confirmValueFailed.description == "confirmValueFailed(4)")
  }

  /// Reserved AuthReq and key distribution bits are kept: c1 and f6 hash the bytes as sent.
  @Test func reservedBitsSurvive() throws {
    let packet = bytes("01 07 02 ff 10 f0 f0")
    #expect(try SMPPDU(decoding: packet).encoded == packet)
  }
}
