import COpenSSL
import Wire

/// A 256-bit value of P-256: a coordinate, a private key, or the DHKey (the x-coordinate of
/// the shared point). It keeps the 32 big-endian bytes the Core spec prints; the SMP Pairing
/// Public Key PDU carries each coordinate little-endian (`littleEndian`).
public struct P256Value: Hashable, Sendable, CustomStringConvertible {
  /// 32 bytes, most significant first.
  public let bigEndian: [UInt8]

  /// nil unless `bytes` is 32 bytes long.
  public init?(bigEndian bytes: some Collection<UInt8>) {
    guard bytes.count == 32 else { return nil }
    bigEndian = Array(bytes)
  }

  /// nil unless `bytes` is 32 bytes long.
  public init?(littleEndian bytes: some Collection<UInt8>) {
    self.init(bigEndian: bytes.reversed())
  }

  /// 64 hex digits as the spec prints them (spaces allowed); nil otherwise.
  public init?(hex: String) {
    guard let bytes = Hex.decode(hex) else { return nil }
    self.init(bigEndian: bytes)
  }

  public var littleEndian: [UInt8] { bigEndian.reversed() }

  public var description: String { Hex.encode(bigEndian, separator: "") }
}

/// A P-256 public key: the affine coordinates of a point.
public struct P256PublicKey: Hashable, Sendable {
  public var x: P256Value
  public var y: P256Value

  public init(x: P256Value, y: P256Value) {
    self.x = x
    self.y = y
  }

  /// X || Y, 64 bytes, each coordinate big-endian.
  public var bytes: [UInt8] { x.bigEndian + y.bigEndian }
}

/// A P-256 key pair for LE Secure Connections, and the Diffie-Hellman computation of the DHKey
/// (Vol 3 Part H 2.3.5.6.1). The arithmetic is OpenSSL's EC_POINT (constant-time scalar
/// multiplication); a peer's key is checked against the curve equation before it is used.
public struct P256KeyPair: Sendable {
  public let privateKey: P256Value
  public let publicKey: P256PublicKey

  /// A fresh key pair from libcrypto's random generator.
  public static func generate() throws(CryptoError) -> P256KeyPair {
    let curve = try Curve()
    let scalar = try BigNumber()
    repeat {
      try check(BN_priv_rand_range(scalar.pointer, curve.order), "BN_priv_rand_range")
    } while BN_is_zero(scalar.pointer) == 1
    return try P256KeyPair(privateKey: scalar.value256(), curve: curve)
  }

  /// The key pair of a known private key (the spec's debug key, a test vector); its public key
  /// is computed, not taken on trust.
  public init(privateKey: P256Value) throws(CryptoError) {
    try self.init(privateKey: privateKey, curve: Curve())
  }

  private init(privateKey: P256Value, curve: Curve) throws(CryptoError) {
    let scalar = try curve.privateScalar(privateKey)
    let point = try Point(curve)
    try check(EC_POINT_mul(curve.group, point.pointer, scalar.pointer, nil, nil, curve.context), "EC_POINT_mul")
    self.privateKey = privateKey
    self.publicKey = try curve.coordinates(of: point)
  }

  /// The DHKey: the x-coordinate of this private key times the peer's public key. A key that
  /// is not on the curve is refused before any multiplication.
  public func dhKey(peer: P256PublicKey) throws(CryptoError) -> P256Value {
    let curve = try Curve()
    let peerPoint = try curve.validatedPoint(peer)
    let scalar = try curve.privateScalar(privateKey)
    let shared = try Point(curve)
    try check(
      EC_POINT_mul(curve.group, shared.pointer, nil, peerPoint.pointer, scalar.pointer, curve.context), "EC_POINT_mul")
    return try curve.coordinates(of: shared).x
  }

  /// Checks that `key` is a point of P-256 (both coordinates below p, y² = x³ - 3x + b).
  public static func validate(_ key: P256PublicKey) throws(CryptoError) {
    _ = try Curve().validatedPoint(key)
  }
}

/// An owned BIGNUM, cleared and freed with its owner.
private final class BigNumber {
  let pointer: OpaquePointer

  init() throws(CryptoError) {
    guard let pointer = BN_new() else { throw CryptoError.openSSL("BN_new") }
    self.pointer = pointer
  }

  convenience init(_ value: P256Value) throws(CryptoError) {
    try self.init()
    guard BN_bin2bn(value.bigEndian, 32, pointer) != nil else { throw CryptoError.openSSL("BN_bin2bn") }
  }

  deinit { BN_clear_free(pointer) }

  func value256() throws(CryptoError) -> P256Value {
    var bytes = [UInt8](repeating: 0, count: 32)
    guard BN_bn2binpad(pointer, &bytes, 32) == 32, let value = P256Value(bigEndian: bytes) else {
      throw CryptoError.openSSL("BN_bn2binpad")
    }
    return value
  }
}

/// An owned EC_POINT of P-256.
private final class Point {
  let pointer: OpaquePointer

  init(_ curve: Curve) throws(CryptoError) {
    guard let pointer = EC_POINT_new(curve.group) else { throw CryptoError.openSSL("EC_POINT_new") }
    self.pointer = pointer
  }

  deinit { EC_POINT_free(pointer) }
}

/// The P-256 group with a BIGNUM scratch context, for one operation.
private final class Curve {
  let group: OpaquePointer
  let context: OpaquePointer
  /// The field prime p, the coefficients a and b, and the group order n.
  let prime: BigNumber
  let a: BigNumber
  let b: BigNumber
  let order: OpaquePointer

  init() throws(CryptoError) {
    guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
      throw CryptoError.openSSL("EC_GROUP_new_by_curve_name")
    }
    self.group = group
    guard let context = BN_CTX_new() else {
      EC_GROUP_free(group)
      throw CryptoError.openSSL("BN_CTX_new")
    }
    self.context = context
    do {
      (prime, a, b) = (try BigNumber(), try BigNumber(), try BigNumber())
    } catch {
      BN_CTX_free(context)
      EC_GROUP_free(group)
      throw error
    }
    order = EC_GROUP_get0_order(group)
    // Fully initialised from here: a throw runs deinit, which frees the group and context.
    try check(EC_GROUP_get_curve(group, prime.pointer, a.pointer, b.pointer, context), "EC_GROUP_get_curve")
  }

  deinit {
    BN_CTX_free(context)
    EC_GROUP_free(group)
  }

  /// The private key as a scalar, which must be in [1, n-1].
  func privateScalar(_ value: P256Value) throws(CryptoError) -> BigNumber {
    let scalar = try BigNumber(value)
    if BN_is_zero(scalar.pointer) == 1 || BN_cmp(scalar.pointer, order) >= 0 {
      throw CryptoError.privateKeyOutOfRange
    }
    return scalar
  }

  /// The point of a peer's public key, after checking it against the curve equation
  /// y² = x³ + ax + b (mod p) here, not only inside OpenSSL: an invalid-curve point would let
  /// the peer learn the private key a little at a time.
  func validatedPoint(_ key: P256PublicKey) throws(CryptoError) -> Point {
    let x = try BigNumber(key.x)
    let y = try BigNumber(key.y)
    if BN_cmp(x.pointer, prime.pointer) >= 0 || BN_cmp(y.pointer, prime.pointer) >= 0 {
      throw CryptoError.coordinateOutOfRange
    }
    let left = try BigNumber()
    let right = try BigNumber()
    let term = try BigNumber()
    try check(BN_mod_sqr(left.pointer, y.pointer, prime.pointer, context), "BN_mod_sqr")
    try check(BN_mod_sqr(right.pointer, x.pointer, prime.pointer, context), "BN_mod_sqr")
    try check(BN_mod_add(right.pointer, right.pointer, a.pointer, prime.pointer, context), "BN_mod_add")
    try check(BN_mod_mul(right.pointer, right.pointer, x.pointer, prime.pointer, context), "BN_mod_mul")
    try check(BN_mod_add(term.pointer, right.pointer, b.pointer, prime.pointer, context), "BN_mod_add")
    if BN_cmp(left.pointer, term.pointer) != 0 { throw CryptoError.publicKeyNotOnCurve }
    let point = try Point(self)
    try check(
      EC_POINT_set_affine_coordinates(group, point.pointer, x.pointer, y.pointer, context),
      "EC_POINT_set_affine_coordinates")
    if EC_POINT_is_on_curve(group, point.pointer, context) != 1 { throw CryptoError.publicKeyNotOnCurve }
    return point
  }

  /// The affine coordinates of a point other than the point at infinity.
  func coordinates(of point: Point) throws(CryptoError) -> P256PublicKey {
    if EC_POINT_is_at_infinity(group, point.pointer) == 1 { throw CryptoError.publicKeyNotOnCurve }
    let x = try BigNumber()
    let y = try BigNumber()
    try check(
      EC_POINT_get_affine_coordinates(group, point.pointer, x.pointer, y.pointer, context),
      "EC_POINT_get_affine_coordinates")
    return P256PublicKey(x: try x.value256(), y: try y.value256())
  }
}
