import HCI
import Testing

/// The SMP toolbox against the Core spec's sample data (Vol 3 Part H 2.2.3, 2.2.4, Appendix D).
/// Every value is written as the spec prints it, most significant byte first.
@Suite struct SMPToolboxTests {
  static let u = CryptoTests.publicA.x
  /// The spec's f4 and g2 samples use this as V.
  static let v = p256("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
  static let n1 = u128("d5cb8454 d177733e ffffb2ec 712baeab")
  static let n2 = u128("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf")
  static let a1 = DeviceAddress(type: .public, address: BDAddress("56:12:37:37:BF:CE")!)
  static let a2 = DeviceAddress(type: .public, address: BDAddress("A7:13:70:2D:CF:C1")!)
  static let macKey = u128("2965f176 a1084a02 fd3f6a20 ce636e20")

  /// 2.2.3: preq 0x07071000000101, pres 0x05000800000302 (the opcode is the low byte).
  @Test func c1() throws {
    let preq = try SMPPDU(decoding: [0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07])
    let pres = try SMPPDU(decoding: [0x02, 0x03, 0x00, 0x00, 0x08, 0x00, 0x05])
    guard case .pairingRequest(let request) = preq, case .pairingResponse(let response) = pres else {
      Issue.record("not a pairing request and response")
      return
    }
    let confirm = try SMPToolbox.c1(
      k: 0, r: u128("5783D52156AD6F0E6388274EC6702EE0"), preq: request, pres: response,
      initiator: DeviceAddress(type: .random, address: BDAddress("A1:A2:A3:A4:A5:A6")!),
      responder: DeviceAddress(type: .public, address: BDAddress("B1:B2:B3:B4:B5:B6")!))
    #expect(confirm == u128("1e1e3fef878988ead2a74dc5bef13b86"))
  }

  /// 2.2.4.
  @Test func s1() throws {
    let key = try SMPToolbox.s1(
      k: 0, r1: u128("000F0E0D0C0B0A091122334455667788"), r2: u128("010203040506070899AABBCCDDEEFF00"))
    #expect(key == u128("9a1fe1f0e8b0f49b5b4216ae796da062"))
  }

  /// D.7.
  @Test func ah() throws {
    let irk = u128("ec0234a3 57c8ad05 341010a6 0a397d9b")
    #expect(try SMPToolbox.e(irk, 0x708194) == u128("159d5fb7 2ebe2311 a48c1bdc c40dfbaa"), "the spec's AES_128 step")
    #expect(try SMPToolbox.ah(irk, 0x708194) == 0x0dfbaa)
  }

  /// D.2.
  @Test func f4() throws {
    #expect(try SMPToolbox.f4(u: Self.u, v: Self.v, x: Self.n1, z: 0) == u128("f2c916f1 07a9bd1c f1eda1be a974872d"))
  }

  /// D.3.
  @Test func f5() throws {
    let (macKey, ltk) = try SMPToolbox.f5(w: CryptoTests.dhKey, n1: Self.n1, n2: Self.n2, a1: Self.a1, a2: Self.a2)
    #expect(macKey == Self.macKey)
    #expect(ltk == u128("69867911 69d7cd23 980522b5 94750a38"))
  }

  /// D.4: IOcap 0x010102 is AuthReq 0x01, OOB flag 0x01, IO capability 0x02.
  @Test func f6() throws {
    let features = PairingFeatures(
      ioCapability: .keyboardOnly, oobDataFlag: 1, authReq: .bonding, initiatorKeyDistribution: [],
      responderKeyDistribution: [])
    #expect(features.ioCap == 0x010102)
    let check = try SMPToolbox.f6(
      w: Self.macKey, n1: Self.n1, n2: Self.n2, r: u128("12a3343b b453bb54 08da42d2 0c2d0fc8"), ioCap: features.ioCap,
      a1: Self.a1, a2: Self.a2)
    #expect(check == u128("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
  }

  /// D.5.
  @Test func g2() throws {
    let value = try SMPToolbox.g2(u: Self.u, v: Self.v, x: Self.n1, y: Self.n2)
    #expect(value == 0x2f9e_d5ba)
    #expect(value % 1_000_000 == 0x2f9e_d5ba % 1_000_000)
  }

  /// Appendix D, h6 sample: keyID "lebr".
  @Test func h6() throws {
    #expect(
      try SMPToolbox.h6(w: u128("ec0234a3 57c8ad05 341010a6 0a397d9b"), keyID: 0x6c65_6272)
        == u128("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
  }

  /// Appendix D, h7 sample: SALT "tmp1".
  @Test func h7() throws {
    #expect(
      try SMPToolbox.h7(
        salt: u128("00000000 00000000 00000000 746D7031"), w: u128("ec0234a3 57c8ad05 341010a6 0a397d9b"))
        == u128("fb173597 c6a3c0ec d2998c2a 75a57011"))
  }

  /// f5 and f6 take the address type from the low bit: an identity type counts as its base type.
  @Test func addressValue56() {
    #expect(Self.a1.value56 == 0x00_5612_3737_bfce)
    let random = DeviceAddress(type: .randomIdentity, address: BDAddress("C0:11:22:33:44:55")!)
    #expect(random.value56 == 0x01_c011_2233_4455)
  }
}
