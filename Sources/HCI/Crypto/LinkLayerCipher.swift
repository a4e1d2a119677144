/// LE link-layer encryption (Core v5.3, Vol 6, Part E, "Low Energy Link Layer security"): the
/// session key of a connection and AES-CCM over its data PDUs, as a sniffer needs them to
/// read an encrypted link it was given the long-term key of.
///
/// - Session key: SK = e(LTK, SKD), SKD = SKDp || SKDc (the central's diversifier from
///   LL_ENC_REQ in the least significant octets, the peripheral's from LL_ENC_RSP in the most).
/// - Nonce (13 octets): the 39-bit packet counter and the direction bit (1 for the central's
///   packets) in five octets, least significant first, then IV = IVp || IVc, least
///   significant octet first.
/// - CCM (RFC 3610) with a 4-octet MIC and a 2-octet length field; the one octet of
///   additional data is the PDU header's first octet with NESN, SN and MD cleared (0xE3).
///
/// Checked against the specification's sample data (Vol 6, Part C, 1: "Encryption sample
/// data"), in Tests/HCITests/CryptoTests.swift.
public struct LinkLayerCipher: Hashable, Sendable {
  public let sessionKey: UInt128
  /// IVc in the low 32 bits, IVp in the high.
  public let iv: UInt64

  /// The session of `ltk` with the diversifiers and IVs of LL_ENC_REQ (the central's) and
  /// LL_ENC_RSP (the peripheral's), as numbers read little-endian from those PDUs.
  public init(
    ltk: UInt128, centralDiversifier: UInt64, peripheralDiversifier: UInt64, centralIV: UInt32,
    peripheralIV: UInt32
  ) throws(CryptoError) {
    sessionKey = try AES.encrypt(key: ltk, UInt128(peripheralDiversifier) << 64 | UInt128(centralDiversifier))
    iv = UInt64(peripheralIV) << 32 | UInt64(centralIV)
  }

  /// The MIC's length in octets.
  public static let micLength = 4
  /// The header bits the MIC covers: LLID, CP and RFU (NESN, SN and MD change on a resend).
  static let headerMask: UInt8 = 0xE3

  /// `payload` encrypted, its MIC after it.
  public func encrypt(_ payload: [UInt8], header: UInt8, counter: UInt64, fromCentral: Bool) throws(CryptoError)
    -> [UInt8]
  {
    let nonce = self.nonce(counter: counter, fromCentral: fromCentral)
    let tag = try mac(payload, header: header, nonce: nonce)
    return try keystream(payload, nonce: nonce) + mask(tag, nonce: nonce)
  }

  /// The plaintext of an encrypted payload (its MIC last), or nil when the MIC does not match
  /// (another key, counter or direction; or a damaged packet).
  public func decrypt(_ sealed: [UInt8], header: UInt8, counter: UInt64, fromCentral: Bool) throws(CryptoError)
    -> [UInt8]?
  {
    guard sealed.count >= Self.micLength else { return nil }
    let nonce = self.nonce(counter: counter, fromCentral: fromCentral)
    let plain = try keystream(Array(sealed.dropLast(Self.micLength)), nonce: nonce)
    let tag = try mask(try mac(plain, header: header, nonce: nonce), nonce: nonce)
    return tag == Array(sealed.suffix(Self.micLength)) ? plain : nil
  }

  private func nonce(counter: UInt64, fromCentral: Bool) -> [UInt8] {
    var octets = (0..<5).map { UInt8(truncatingIfNeeded: counter >> (8 * $0)) }
    octets[4] = octets[4] & 0x7F | (fromCentral ? 0x80 : 0)
    return octets + (0..<8).map { UInt8(truncatingIfNeeded: iv >> (8 * $0)) }
  }

  /// One AES block of `flags || nonce || value` (value big-endian in 2 octets).
  private func block(_ flags: UInt8, _ nonce: [UInt8], _ value: Int) -> UInt128 {
    UInt128(
      bigEndianBytes: [flags] + nonce + [UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)])
  }

  /// CBC-MAC over B0 (flags 0x49: additional data, M = 4, L = 2), the additional data block
  /// and the payload in 16-octet blocks, zero-padded: the first 4 octets.
  private func mac(_ payload: [UInt8], header: UInt8, nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
    var state = try AES.encrypt(key: sessionKey, block(0x49, nonce, payload.count))
    let additional = UInt128(bigEndianBytes: [0x00, 0x01, header & Self.headerMask] + [UInt8](repeating: 0, count: 13))
    state = try AES.encrypt(key: sessionKey, state ^ additional)
    var offset = 0
    while offset < payload.count {
      let chunk = payload[offset..<min(offset + 16, payload.count)]
      let padded = UInt128(bigEndianBytes: chunk + [UInt8](repeating: 0, count: 16 - chunk.count))
      state = try AES.encrypt(key: sessionKey, state ^ padded)
      offset += 16
    }
    return Array(state.bigEndianBytes.prefix(Self.micLength))
  }

  /// The tag XOR the first octets of S0 (counter block A0).
  private func mask(_ tag: [UInt8], nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
    let s0 = try AES.encrypt(key: sessionKey, block(0x01, nonce, 0)).bigEndianBytes
    return zip(tag, s0).map { $0 ^ $1 }
  }

  /// `data` XOR the keystream S1, S2, ... (counter blocks A1, A2, ...).
  private func keystream(_ data: [UInt8], nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(data.count)
    var index = 1
    while out.count < data.count {
      let stream = try AES.encrypt(key: sessionKey, block(0x01, nonce, index)).bigEndianBytes
      let start = out.count
      for (offset, byte) in data[start..<min(start + 16, data.count)].enumerated() { out.append(byte ^ stream[offset]) }
      index += 1
    }
    return out
  }
}
