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
