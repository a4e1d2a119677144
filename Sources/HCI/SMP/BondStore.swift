import ATT
import Links
import Runtime
import Wire

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A bond file that cannot be used; names the file and the problem.
public struct BondStoreError: Error, Hashable, Sendable, CustomStringConvertible {
  public var path: String
  public var problem: String

  public init(path: String, problem: String) {
    self.path = path
    self.problem = problem
  }

  public var description: String { "bond file \(path): \(problem)" }
}

/// Bonds kept in a JSON file (Protocol/HCI.md, "Pairing"), created with mode 0600 because it
/// holds link keys. A file that is not a bond file, or is damaged, is refused when the store
/// opens, and is never overwritten. Saving replaces the file atomically (a 0600 temporary file
/// renamed over it).
public final class BondStore: BondBook {
  /// The value of the file's "format" field.
  public static let format = "ancs-sim bonds"
  public let path: String
  private let bonds: Locked<[Bond]>
  private let observer = Locked<(@Sendable (BondEvent) -> Void)?>(nil)
  /// The random static address this device used when it bonded, so that peers find it again
  /// in later runs (a bond is with an address).
  private let local: Locked<BDAddress?>

  /// Opens the store at `path`; a missing file is an empty store (created on the first save).
  public init(path: String) throws(BondStoreError) {
    self.path = path
    let (bonds, local) = try Self.load(path)
    self.bonds = Locked(bonds)
    self.local = Locked(local)
  }

  /// Every bond, in file order.
  public var all: [Bond] { bonds.withLock { $0 } }

  /// The device's own random static address, kept in the file ("localAddress"); nil until
  /// `keep(localAddress:)`.
  public var localAddress: BDAddress? { local.withLock { $0 } }

  /// Keeps `address` as the device's own address and writes the file.
  public func keep(localAddress address: BDAddress) throws(BondStoreError) {
    local.withLock { $0 = address }
    try write(all)
  }

  /// The bond with a peer: by the address it connects with, by its identity address, or, for
  /// a resolvable private address (what an iPhone connects with, a new one every few
  /// minutes), by the IRK it gave when it bonded (Vol 6 Part B 1.3.2.3).
  public func bond(for peer: DeviceAddress) -> Bond? {
    bonds.withLock { bonds in
      if let bond = bonds.first(where: { $0.peer.address == peer.address || $0.identity?.address == peer.address }) {
        return bond
      }
      guard peer.type == .random, peer.address.isResolvablePrivate else { return nil }
      return bonds.first { bond in bond.irk.map { peer.address.isResolved(by: $0) } ?? false }
    }
  }

  /// Adds `bond`, replacing any bond with the same peer (the same address, or the same
  /// identity address: a peer that pairs again from a new private address), and writes the file.
  public func save(_ bond: Bond) throws(BondStoreError) {
    let snapshot = bonds.withLock { bonds -> [Bond] in
      bonds.removeAll {
        $0.peer.address == bond.peer.address || (bond.identity != nil && $0.identity?.address == bond.identity?.address)
      }
      bonds.append(bond)
      return bonds
    }
    try write(snapshot)
  }

  /// Forgets the bond with `peer` and writes the file.
  public func remove(_ peer: DeviceAddress) throws(BondStoreError) {
    let snapshot = bonds.withLock { bonds -> [Bond] in
      bonds.removeAll { $0.peer.address == peer.address || $0.identity?.address == peer.address }
      return bonds
    }
    try write(snapshot)
  }

  // MARK: BondBook

  /// Each bond's peer by its identity address when it gave one, else the address it
  /// connected with.
  public var bondedPeers: [String] { all.map(Self.name).sorted() }

  private static func name(_ bond: Bond) -> String { (bond.identity ?? bond.peer).address.description }

  private static func matches(_ bond: Bond, _ peer: String) -> Bool {
    bond.peer.address.description == peer || bond.identity?.address.description == peer
  }

  @discardableResult
  public func forget(_ peer: String?) throws(BondBookError) -> [String] {
    let goes: (Bond) -> Bool = { bond in peer.map { Self.matches(bond, $0) } ?? true }
    let (kept, forgotten) = bonds.withLock { bonds in (bonds.filter { !goes($0) }, bonds.filter(goes).map(Self.name)) }
    if forgotten.isEmpty { return [] }
    // The file first: a bond the file still holds is not forgotten.
    do { try write(kept) } catch { throw BondBookError(error.description) }
    bonds.withLock { $0.removeAll(where: goes) }
    for peer in forgotten { emit(.forgotten(peer: peer)) }
    return forgotten
  }

  public func observe(_ observer: @escaping @Sendable (BondEvent) -> Void) {
    self.observer.withLock { $0 = observer }
  }

  /// Someone hears the store's events (a user who can answer a pairing's prompt).
  public var hasObserver: Bool { observer.withLock { $0 != nil } }

  /// Reports what became of a bond to the observer (the security manager calls it).
  public func emit(_ event: BondEvent) {
    observer.withLock { $0 }?(event)
  }

  /// Where a user's answer to a pairing prompt goes: the security manager that asked.
  private let answerer = Locked<(@Sendable (PairingAnswer, String?) -> Bool)?>(nil)

  /// The security manager pairing with this store takes the user's answers.
  public func takeAnswers(_ body: @escaping @Sendable (PairingAnswer, String?) -> Bool) {
    answerer.withLock { $0 = body }
  }

  public func answer(_ answer: PairingAnswer, for peer: String?) -> Bool {
    answerer.withLock { $0 }?(answer, peer) ?? false
  }

  /// Where `limitPairing` goes: the security manager pairing with this store.
  private let limiter = Locked<(@Sendable (SecurityLevel?) -> Void)?>(nil)

  /// The security manager pairing with this store takes `limitPairing`.
  public func takeLimits(_ body: @escaping @Sendable (SecurityLevel?) -> Void) {
    limiter.withLock { $0 = body }
  }

  @discardableResult
  public func limitPairing(to level: SecurityLevel?) -> Bool {
    guard let limit = limiter.withLock({ $0 }) else { return false }
    limit(level)
    return true
  }

  /// Armed by `spoilNextPairing`; the security manager takes it when its next pairing
  /// starts, and says how that pairing failed.
  public let spoiled = SpoiledPairing()

  @discardableResult
  public func spoilNextPairing(_ armed: Bool) -> Bool {
    // Only a store a security manager pairs with (it took the limits) can.
    guard limiter.withLock({ $0 != nil }) else { return false }
    spoiled.arm(armed)
    return true
  }

  public var nextPairingSpoiled: Bool { spoiled.isArmed }
  public var spoiledPairingEnd: SpoiledPairingEnd? { spoiled.end }

  /// A new random key, EDIV and Rand for the bond with `peer`: the peer's LTK request finds
  /// no such bond, as when it has lost its own.
  @discardableResult
  public func spoil(_ peer: String) throws(BondBookError) -> Bool {
    let snapshot = bonds.withLock { bonds -> [Bond]? in
      guard let index = bonds.firstIndex(where: { Self.matches($0, peer) }) else { return nil }
      bonds[index].ltk = UInt128.random(in: 1...UInt128.max)
      bonds[index].ediv = UInt16.random(in: 1...UInt16.max)
      bonds[index].rand = UInt64.random(in: 1...UInt64.max)
      return bonds
    }
    guard let snapshot else { return false }
    do { try write(snapshot) } catch { throw BondBookError(error.description) }
    return true
  }

  /// The name `bondedPeers` gives the bond with `peer`, if there is one.
  public func name(of peer: DeviceAddress) -> String? { bond(for: peer).map(Self.name) }

  // MARK: File

  private func write(_ bonds: [Bond]) throws(BondStoreError) {
    var fields: [(String, JSON)] = [("format", .string(Self.format)), ("version", .number(1))]
    if let address = localAddress { fields.append(("localAddress", .string(address.description))) }
    fields.append(("bonds", .array(bonds.map(Self.encode))))
    let document = JSON.object(fields)
    var text = ""
    document.write(to: &text)
    let bytes = Array((text + "\n").utf8)
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw failure("cannot create \(temporary): \(errnoText(errno))") }
    // The mode given to open() is reduced by the umask, and an old temporary keeps its own.
    var ok = fchmod(fd, 0o600) == 0
    var offset = 0
    while ok, offset < bytes.count {
      let written = bytes[offset...].withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
      if written > 0 { offset += written } else if written < 0 && errno != EINTR { ok = false }
    }
    ok = ok && fsync(fd) == 0
    close(fd)
    guard ok, rename(temporary, path) == 0 else {
      let why = errnoText(errno)
      unlink(temporary)
      throw failure("cannot write: \(why)")
    }
  }

  private static func load(_ path: String) throws(BondStoreError) -> ([Bond], BDAddress?) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 {
      if errno == ENOENT { return ([], nil) }
      throw BondStoreError(path: path, problem: "cannot open: \(errnoText(errno))")
    }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count == 0 { break }
      if count < 0 {
        if errno == EINTR { continue }
        throw BondStoreError(path: path, problem: "cannot read: \(errnoText(errno))")
      }
      bytes += buffer[..<count]
      if bytes.count > 1 << 20 { throw BondStoreError(path: path, problem: "larger than 1 MiB, not a bond file") }
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw BondStoreError(path: path, problem: "not UTF-8 text, not a bond file")
    }
    let document: JSON
    do {
      document = try JSON(parsing: text)
    } catch {
      throw BondStoreError(path: path, problem: "not JSON (\(error))")
    }
    guard document["format"]?.string == format else {
      throw BondStoreError(path: path, problem: "no \"format\": \"\(format)\" field, not a bond file")
    }
    guard document["version"]?.integer == 1 else {
      throw BondStoreError(path: path, problem: "version \(document["version"]?.description ?? "missing"), expected 1")
    }
    guard let entries = document["bonds"]?.array else {
      throw BondStoreError(path: path, problem: "\"bonds\" is not an array")
    }
    var local: BDAddress?
    if let field = document["localAddress"] {
      guard let text = field.string, let address = BDAddress(text), address.isRandomStatic else {
        throw BondStoreError(path: path, problem: "localAddress: not a random static address like C0:11:22:33:44:55")
      }
      local = address
    }
    var bonds: [Bond] = []
    for (index, entry) in entries.enumerated() {
      do throws(FieldProblem) {
        bonds.append(try decode(entry))
      } catch {
        throw BondStoreError(path: path, problem: "bonds[\(index)].\(error.field): \(error.reason)")
      }
    }
    return (bonds, local)
  }

  private struct FieldProblem: Error {
    var field: String
    var reason: String
  }

  /// 128-bit keys as 32 hex digits, most significant first (as the spec prints them); Rand as
  /// 16 hex digits; addresses as text with their type.
  private static func encode(_ bond: Bond) -> JSON {
    var fields: [(String, JSON)] = [
      ("peer", .string(bond.peer.address.description)), ("peerType", .number(Double(bond.peer.type.rawValue))),
    ]
    if let identity = bond.identity {
      fields += [
        ("identity", .string(identity.address.description)), ("identityType", .number(Double(identity.type.rawValue))),
      ]
    }
    if let irk = bond.irk { fields.append(("irk", .string(Hex.encode(irk.bigEndianBytes, separator: "")))) }
    fields += [
      ("ltk", .string(Hex.encode(bond.ltk.bigEndianBytes, separator: ""))), ("ediv", .number(Double(bond.ediv))),
      ("rand", .string(Hex.encode(littleEndianBytes(bond.rand, count: 8).reversed(), separator: ""))),
      ("secureConnections", .bool(bond.secureConnections)), ("keySize", .number(Double(bond.keySize))),
      ("authenticated", .bool(bond.authenticated)),
    ]
    return .object(fields)
  }

  private static func decode(_ entry: JSON) throws(FieldProblem) -> Bond {
    func address(_ field: String, _ typeField: String) throws(FieldProblem) -> DeviceAddress? {
      guard let text = entry[field] else { return nil }
      guard let string = text.string, let address = BDAddress(string) else {
        throw FieldProblem(field: field, reason: "not an address like C0:11:22:33:44:55")
      }
      guard let type = entry[typeField]?.integer, (0...3).contains(type) else {
        throw FieldProblem(field: typeField, reason: "not an address type 0 to 3")
      }
      return DeviceAddress(type: AddressType(rawValue: UInt8(type)), address: address)
    }
    func number(_ field: String, digits: Int) throws(FieldProblem) -> UInt128? {
      guard let text = entry[field] else { return nil }
      guard let string = text.string, let bytes = Hex.decode(digits: string, count: digits) else {
        throw FieldProblem(field: field, reason: "not \(digits) hex digits")
      }
      return UInt128(bigEndianBytes: bytes)
    }
    func integer(_ field: String, in range: ClosedRange<Int>) throws(FieldProblem) -> Int {
      guard let value = entry[field]?.integer, range.contains(value) else {
        throw FieldProblem(field: field, reason: "not an integer in \(range)")
      }
      return value
    }
    guard entry.object != nil else { throw FieldProblem(field: "", reason: "not an object") }
    guard let peer = try address("peer", "peerType") else { throw FieldProblem(field: "peer", reason: "missing") }
    guard let ltk = try number("ltk", digits: 32) else { throw FieldProblem(field: "ltk", reason: "missing") }
    guard let rand = try number("rand", digits: 16) else { throw FieldProblem(field: "rand", reason: "missing") }
    guard let secure = entry["secureConnections"]?.bool else {
      throw FieldProblem(field: "secureConnections", reason: "not true or false")
    }
    // Absent in files written before keys were told apart: those bonds came from Just Works.
    let authenticated = entry["authenticated"]
    guard authenticated == nil || authenticated?.bool != nil else {
      throw FieldProblem(field: "authenticated", reason: "not true or false")
    }
    return Bond(
      peer: peer, identity: try address("identity", "identityType"), irk: try number("irk", digits: 32), ltk: ltk,
      ediv: UInt16(try integer("ediv", in: 0...0xFFFF)), rand: UInt64(rand), secureConnections: secure,
      keySize: UInt8(try integer("keySize", in: 7...16)), authenticated: authenticated?.bool ?? false)
  }

  private func failure(_ problem: String) -> BondStoreError { BondStoreError(path: path, problem: problem) }
}

/// write(2), which the store's own `write` hides.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
  #if canImport(Glibc)
    Glibc.write(fd, buffer, count)
  #else
    Darwin.write(fd, buffer, count)
  #endif
}
