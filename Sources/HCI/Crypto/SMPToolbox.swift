/// The SMP cryptographic toolbox (Core spec Vol 3 Part H 2.2).
///
/// Conventions (the spec's): every value is a number. 128-bit values are `UInt128`; 256-bit
/// values are `P256Value`; the 56-bit addresses A1 and A2 are `DeviceAddress.value56`. "||"
/// concatenates with the left operand more significant, and AES and AES-CMAC take their
/// inputs most significant byte first, so a test vector reads exactly as the spec prints it.
/// The conversion to the little-endian order of SMP PDUs and HCI commands happens in their
/// codecs, never here.
public enum SMPToolbox {
  /// e (2.2.1): AES-128 of one block.
  public static func e(_ key: UInt128, _ plaintext: UInt128) throws(CryptoError) -> UInt128 {
    try AES.encrypt(key: key, plaintext)
  }

  /// ah (2.2.2), the random address hash: e(k, r') mod 2^24, r' = 104 zero bits || r.
  public static func ah(_ k: UInt128, _ r: UInt32) throws(CryptoError) -> UInt32 {
    let encrypted = try e(k, UInt128(r & 0xFF_FFFF))
    return UInt32(truncatingIfNeeded: encrypted) & 0xFF_FFFF
  }

  /// c1 (2.2.3), the LE legacy confirm value generation function:
  /// e(k, e(k, r XOR p1) XOR p2), p1 = pres || preq || rat' || iat', p2 = 32 zero bits || ia || ra.
  /// `preq` and `pres` are the Pairing Request and Response PDUs, opcode included; as numbers,
  /// the opcode (their first byte on the wire) is the least significant byte.
  public static func c1(
    k: UInt128, r: UInt128, preq: PairingFeatures, pres: PairingFeatures, initiator: DeviceAddress,
    responder: DeviceAddress
  ) throws(CryptoError) -> UInt128 {
    let request = UInt128(littleEndianValue(SMPPDU.pairingRequest(preq).encoded))
    let response = UInt128(littleEndianValue(SMPPDU.pairingResponse(pres).encoded))
    let iat = UInt128(initiator.type.rawValue & 0x01)
    let rat = UInt128(responder.type.rawValue & 0x01)
    let p1 = response << 72 | request << 16 | rat << 8 | iat
    let p2 = UInt128(initiator.address.rawValue) << 48 | UInt128(responder.address.rawValue)
    return try e(k, try e(k, r ^ p1) ^ p2)
  }

  /// s1 (2.2.4), the LE legacy key generation function: e(k, r1' || r2'), where r1' and r2'
  /// are the least significant 64 bits of r1 and r2.
  public static func s1(k: UInt128, r1: UInt128, r2: UInt128) throws(CryptoError) -> UInt128 {
    try e(k, r1 << 64 | (r2 & UInt128(UInt64.max)))
  }

  /// f4 (2.2.6), the LE Secure Connections confirm value: AES-CMAC_X(U || V || Z).
  public static func f4(u: P256Value, v: P256Value, x: UInt128, z: UInt8) throws(CryptoError) -> UInt128 {
    try AES.cmac(key: x, u.bigEndian + v.bigEndian + [z])
  }

  /// The salt of f5 (2.2.7).
  static let f5Salt: UInt128 = 0x6C88_8391_AAF5_A538_6037_0BDB_5A60_83BE
  /// keyID "btle" of f5 (2.2.7).
  static let f5KeyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]

  /// f5 (2.2.7), the LE Secure Connections key generation function: T = AES-CMAC_SALT(W), then
  /// MacKey = AES-CMAC_T(0 || keyID || N1 || N2 || A1 || A2 || 256) and LTK the same with 1.
  public static func f5(
    w: P256Value, n1: UInt128, n2: UInt128, a1: DeviceAddress, a2: DeviceAddress
  ) throws(CryptoError) -> (macKey: UInt128, ltk: UInt128) {
    let t = try AES.cmac(key: f5Salt, w.bigEndian)
    let body =
      f5KeyID + n1.bigEndianBytes + n2.bigEndianBytes + bigEndian56(a1.value56) + bigEndian56(a2.value56) + [
        0x01, 0x00,
      ]
    return (try AES.cmac(key: t, [0x00] + body), try AES.cmac(key: t, [0x01] + body))
  }

  /// f6 (2.2.8), the LE Secure Connections check value: AES-CMAC_W(N1 || N2 || R || IOcap || A1 || A2).
  /// `ioCap` is AuthReq || OOB data flag || IO capability (`PairingFeatures.ioCap`).
  public static func f6(
    w: UInt128, n1: UInt128, n2: UInt128, r: UInt128, ioCap: UInt32, a1: DeviceAddress, a2: DeviceAddress
  ) throws(CryptoError) -> UInt128 {
    let capability = [
      UInt8(truncatingIfNeeded: ioCap >> 16), UInt8(truncatingIfNeeded: ioCap >> 8), UInt8(truncatingIfNeeded: ioCap),
    ]
    let message =
      n1.bigEndianBytes + n2.bigEndianBytes + r.bigEndianBytes + capability + bigEndian56(a1.value56)
      + bigEndian56(a2.value56)
    return try AES.cmac(key: w, message)
  }

  /// g2 (2.2.9), the numeric comparison value: AES-CMAC_X(U || V || Y) mod 2^32. The six digits
  /// to show are this mod 10^6.
  public static func g2(u: P256Value, v: P256Value, x: UInt128, y: UInt128) throws(CryptoError) -> UInt32 {
    UInt32(truncatingIfNeeded: try AES.cmac(key: x, u.bigEndian + v.bigEndian + y.bigEndianBytes))
  }

  /// h6 (2.2.10), the link key conversion function: AES-CMAC_W(keyID).
  public static func h6(w: UInt128, keyID: UInt32) throws(CryptoError) -> UInt128 {
    try AES.cmac(key: w, (0..<4).map { UInt8(truncatingIfNeeded: keyID >> (8 * (3 - $0))) })
  }

  /// h7 (2.2.11), the link key conversion function with a salt: AES-CMAC_SALT(W).
  public static func h7(salt: UInt128, w: UInt128) throws(CryptoError) -> UInt128 {
    try AES.cmac(key: salt, w.bigEndianBytes)
  }

  private static func bigEndian56(_ value: UInt64) -> [UInt8] {
    littleEndianBytes(value, count: 7).reversed()
  }
}
