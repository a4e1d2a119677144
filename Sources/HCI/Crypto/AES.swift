import COpenSSL

/// Why a cryptographic operation failed.
public enum CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
  /// libcrypto refused: the function and OpenSSL's error code (ERR_get_error, 0 if none).
  case openSSL(function: String, code: UInt)
  /// A peer's P-256 public key that is not a point of the curve (an invalid-curve attack, or
  /// corruption): it must never reach the Diffie-Hellman computation.
  case publicKeyNotOnCurve
  /// A coordinate of a peer's public key that is not below the field prime p.
  case coordinateOutOfRange
  /// A private key that is 0 or not below the group order n.
  case privateKeyOutOfRange

  public var description: String {
    switch self {
    case .openSSL(let function, let code): return "libcrypto \(function) failed (error 0x\(String(code, radix: 16)))"
    case .publicKeyNotOnCurve: return "the peer's public key is not a point on P-256"
    case .coordinateOutOfRange: return "a coordinate of the peer's public key is not below the field prime"
    case .privateKeyOutOfRange: return "the private key is not in [1, n-1]"
    }
  }

  /// The error for a failed libcrypto call, with OpenSSL's queued reason (the queue is cleared).
  static func openSSL(_ function: String) -> CryptoError {
    let code = ERR_get_error()
    ERR_clear_error()
    return .openSSL(function: function, code: UInt(code))
  }
}

/// Checks a libcrypto return value (1 is success).
func check(_ result: Int32, _ function: String) throws(CryptoError) {
  if result != 1 { throw CryptoError.openSSL(function) }
}

/// AES-128 and AES-CMAC on 128-bit numbers.
///
/// Convention: a key, plaintext or MAC is a `UInt128`, and its most significant byte is the
/// first byte AES sees (FIPS-197 `in[0]`), as Vol 3 Part H 2.2.1 states for the security
/// function e. A CMAC message is bytes in the order the spec concatenates the fields
/// (most significant first), so toolbox functions build it from big-endian fields.
public enum AES {
  /// The security function e (Vol 3 Part H 2.2.1): AES-128 encryption of one block.
  public static func encrypt(key: UInt128, _ plaintext: UInt128) throws(CryptoError) -> UInt128 {
    guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError.openSSL("EVP_CIPHER_CTX_new") }
    defer { EVP_CIPHER_CTX_free(context) }
    let keyBytes = key.bigEndianBytes
    let input = plaintext.bigEndianBytes
    var output = [UInt8](repeating: 0, count: 32)
    var written: Int32 = 0
    try check(EVP_EncryptInit_ex(context, EVP_aes_128_ecb(), nil, keyBytes, nil), "EVP_EncryptInit_ex")
    try check(EVP_CIPHER_CTX_set_padding(context, 0), "EVP_CIPHER_CTX_set_padding")
    try check(EVP_EncryptUpdate(context, &output, &written, input, 16), "EVP_EncryptUpdate")
    guard written == 16 else { throw CryptoError.openSSL(function: "EVP_EncryptUpdate", code: 0) }
    return UInt128(bigEndianBytes: output[0..<16])
  }

  /// AES-CMAC with AES-128 (RFC 4493; Vol 3 Part H 2.2.5) of `message` under `key`.
  public static func cmac(key: UInt128, _ message: [UInt8]) throws(CryptoError) -> UInt128 {
    guard let mac = EVP_MAC_fetch(nil, "CMAC", nil) else { throw CryptoError.openSSL("EVP_MAC_fetch") }
    defer { EVP_MAC_free(mac) }
    guard let context = EVP_MAC_CTX_new(mac) else { throw CryptoError.openSSL("EVP_MAC_CTX_new") }
    defer { EVP_MAC_CTX_free(context) }
    let keyBytes = key.bigEndianBytes
    let initialised = "cipher".withCString { name in
      "AES-128-CBC".withCString { cipher in
        let params = [
          OSSL_PARAM_construct_utf8_string(name, UnsafeMutablePointer(mutating: cipher), 0),
          OSSL_PARAM_construct_end(),
        ]
        return EVP_MAC_init(context, keyBytes, 16, params)
      }
    }
    try check(initialised, "EVP_MAC_init")
    try check(EVP_MAC_update(context, message, message.count), "EVP_MAC_update")
    var output = [UInt8](repeating: 0, count: 16)
    var written = 0
    try check(EVP_MAC_final(context, &output, &written, 16), "EVP_MAC_final")
    guard written == 16 else { throw CryptoError.openSSL(function: "EVP_MAC_final", code: 0) }
    return UInt128(bigEndianBytes: output)
  }
}
