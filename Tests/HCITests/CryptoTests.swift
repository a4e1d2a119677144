import HCI
import Testing

/// AES-128, AES-CMAC and P-256 through libcrypto, against published vectors.
@Suite struct CryptoTests {
  /// FIPS-197 Appendix C.1.
  @Test func aes128MatchesFIPS197() throws {
    let key = u128("000102030405060708090a0b0c0d0e0f")
    #expect(
      try AES.encrypt(key: key, u128("00112233445566778899aabbccddeeff")) == u128("69c4e0d86a7b0430d8cdb78070b4c55a"))
    #expect(try SMPToolbox.e(key, u128("00112233445566778899aabbccddeeff")) == u128("69c4e0d86a7b0430d8cdb78070b4c55a"))
  }

  /// RFC 4493 section 4, which the Core spec repeats in Vol 3 Part H D.1.
  @Test(arguments: [
    ("", "bb1d6929 e9593728 7fa37d12 9b756746"),
    ("6bc1bee2 2e409f96 e93d7e11 7393172a", "070a16b4 6b4d4144 f79bdd9d d04a287c"),
    (
      "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51 30c81c46 a35ce411",
      "dfa66747 de9ae630 30ca3261 1497c827"
    ),
    (
      "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51 "
        + "30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710",
      "51f0bebf 7e3b9d92 fc497417 79363cfe"
    ),
  ])
  func aesCMACMatchesRFC4493(message: String, mac: String) throws {
    #expect(try AES.cmac(key: u128("2b7e1516 28aed2a6 abf71588 09cf4f3c"), bytes(message)) == u128(mac))
  }

  // Vol 3 Part H 2.3.5.6.1 (debug key) and D.1 (P-256 data set 1).
  static let privateA = p256("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
  static let publicA = P256PublicKey(
    x: p256("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6"),
    y: p256("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b"))
  static let privateB = p256("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
  static let publicB = P256PublicKey(
    x: p256("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190"),
    y: p256("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a"))
  static let dhKey = p256("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")

  @Test func debugKeyPairIsConsistent() throws {
    let pair = try P256KeyPair(privateKey: Self.privateA)
    #expect(pair.publicKey == Self.publicA, "the spec's debug public key is the debug private key times G")
    #expect(pair.publicKey.bytes.count == 64)
    #expect(Array(pair.publicKey.bytes[0..<32]) == Self.publicA.x.bigEndian)
    #expect(try P256KeyPair(privateKey: Self.privateB).publicKey == Self.publicB)
  }

  @Test func dhKeyMatchesDataSet1BothWays() throws {
    #expect(try P256KeyPair(privateKey: Self.privateA).dhKey(peer: Self.publicB) == Self.dhKey)
    #expect(try P256KeyPair(privateKey: Self.privateB).dhKey(peer: Self.publicA) == Self.dhKey)
  }

  @Test func generatedPairsAgree() throws {
    let a = try P256KeyPair.generate()
    let b = try P256KeyPair.generate()
    #expect(a.publicKey != b.publicKey)
    #expect(try a.dhKey(peer: b.publicKey) == b.dhKey(peer: a.publicKey))
    try P256KeyPair.validate(a.publicKey)
  }

  /// An invalid-curve attack sends a point of another curve (same x, a different y): the
  /// key must be refused before any multiplication.
  @Test func peerKeyOffTheCurveIsRefused() throws {
    let pair = try P256KeyPair(privateKey: Self.privateA)
    var y = Self.publicB.y.bigEndian
    y[31] ^= 0x01
    let forged = P256PublicKey(x: Self.publicB.x, y: P256Value(bigEndian: y)!)
    #expect(throws: CryptoError.publicKeyNotOnCurve) { try pair.dhKey(peer: forged) }
    #expect(throws: CryptoError.publicKeyNotOnCurve) { try P256KeyPair.validate(forged) }
    let zero = P256Value(bigEndian: [UInt8](repeating: 0, count: 32))!
    #expect(throws: CryptoError.publicKeyNotOnCurve) { try pair.dhKey(peer: P256PublicKey(x: zero, y: zero)) }
  }

  @Test func coordinatesNotBelowThePrimeAreRefused() throws {
    let pair = try P256KeyPair(privateKey: Self.privateA)
    let p = p256("ffffffff 00000001 00000000 00000000 00000000 ffffffff ffffffff ffffffff")
    #expect(throws: CryptoError.coordinateOutOfRange) { try pair.dhKey(peer: P256PublicKey(x: p, y: Self.publicB.y)) }
    let all = P256Value(bigEndian: [UInt8](repeating: 0xFF, count: 32))!
    #expect(throws: CryptoError.coordinateOutOfRange) { try pair.dhKey(peer: P256PublicKey(x: Self.publicB.x, y: all)) }
  }

  @Test func privateKeyOutOfRangeIsRefused() {
    let zero = P256Value(bigEndian: [UInt8](repeating: 0, count: 32))!
    #expect(throws: CryptoError.privateKeyOutOfRange) { try P256KeyPair(privateKey: zero) }
    let n = p256("ffffffff 00000000 ffffffff ffffffff bce6faad a7179e84 f3b9cac2 fc632551")
    #expect(throws: CryptoError.privateKeyOutOfRange) { try P256KeyPair(privateKey: n) }
  }

  @Test func p256ValueByteOrders() {
    let value = Self.publicA.x
    #expect(value.littleEndian.first == 0xe6 && value.littleEndian.last == 0x20)
    #expect(P256Value(littleEndian: value.littleEndian) == value)
    #expect(P256Value(bigEndian: [1, 2, 3]) == nil)
    #expect(P256Value(hex: "zz") == nil)
    #expect(value.description.hasPrefix("20b003d2"))
  }
}

/// LE link-layer encryption against the Core specification's sample data (v5.3, Vol 6,
/// Part C, 1 "Encryption sample data": the session key of 1.1 and the packets of 1.2).
@Suite struct LinkLayerCipherTests {
  /// LTK 0x4C68384139F574D836BCF34E9DFB01BF; SKDm 0xACBDCEDFE0F10213, SKDs
  /// 0x0213243546576879; IVm 0xBADCAB24, IVs 0xDEAFBABE.
  static func sample() throws -> LinkLayerCipher {
    try LinkLayerCipher(
      ltk: u128("4C68384139F574D836BCF34E9DFB01BF"), centralDiversifier: 0xACBD_CEDF_E0F1_0213,
      peripheralDiversifier: 0x0213_2435_4657_6879, centralIV: 0xBADC_AB24, peripheralIV: 0xDEAF_BABE)
  }

  /// (direction, header, counter, plaintext, the packet's payload on the air)
  static let packets: [(fromCentral: Bool, header: UInt8, counter: UInt64, plain: String, sealed: String)] = [
    // LL_START_ENC_RSP1 and LL_START_ENC_RSP2: packet 0 of each side.
    (true, 0x0F, 0, "06", "9fcda7f448"),
    (false, 0x07, 0, "06", "a34c13a415"),
    // LL_DATA1 and LL_DATA2: packet 1 of each side.
    (
      true, 0x0E, 1, "1700 636465666768696a6b6c6d6e6f7071 31323334353637383930",
      "7a70d6641522 6df26b17839a060405596bd6564f79 6b5b9ce6ff32f75a6d33"
    ),
    (
      false, 0x06, 1, "1700 37363534333231304142434445464748494a4b4c4d4e4f5051",
      "f38881e7bd94 c9c369b9a66846dd4786aa8c39ce540d 0dae3adcdf89b96088"
    ),
  ]

  @Test func theSessionKeyIsTheSpecs() throws {
    #expect(try Self.sample().sessionKey == u128("99AD1B5226A37E3E058E3B8E27C2C666"))
  }

  @Test func eachSamplePacketEncryptsAndDecrypts() throws {
    let cipher = try Self.sample()
    for packet in Self.packets {
      let plain = bytes(packet.plain)
      let sealed = bytes(packet.sealed)
      #expect(
        try cipher.encrypt(plain, header: packet.header, counter: packet.counter, fromCentral: packet.fromCentral)
          == sealed, "\(packet.plain)")
      #expect(
        try cipher.decrypt(sealed, header: packet.header, counter: packet.counter, fromCentral: packet.fromCentral)
          == plain, "\(packet.sealed)")
    }
  }

  /// The MIC tells a wrong counter, direction, key or header, and a changed octet; a resend
  /// (NESN, SN and MD changed) still decrypts.
  @Test func theMICRefusesWhatIsNotThePacket() throws {
    let cipher = try Self.sample()
    let sealed = bytes("9fcda7f448")
    #expect(try cipher.decrypt(sealed, header: 0x0F, counter: 1, fromCentral: true) == nil)
    #expect(try cipher.decrypt(sealed, header: 0x0F, counter: 0, fromCentral: false) == nil)
    #expect(try cipher.decrypt(sealed, header: 0x0E, counter: 0, fromCentral: true) == nil)
    for index in sealed.indices {
      var damaged = sealed
      damaged[index] ^= 0x01
      #expect(try cipher.decrypt(damaged, header: 0x0F, counter: 0, fromCentral: true) == nil)
    }
    #expect(try cipher.decrypt(sealed, header: 0x0F ^ 0x1C, counter: 0, fromCentral: true) == [0x06])
    let other = try LinkLayerCipher(
      ltk: u128("4C68384139F574D836BCF34E9DFB01BE"), centralDiversifier: 0xACBD_CEDF_E0F1_0213,
      peripheralDiversifier: 0x0213_2435_4657_6879, centralIV: 0xBADC_AB24, peripheralIV: 0xDEAF_BABE)
    #expect(try other.decrypt(sealed, header: 0x0F, counter: 0, fromCentral: true) == nil)
    #expect(try cipher.decrypt([1, 2, 3], header: 0x0F, counter: 0, fromCentral: true) == nil)
  }
}
