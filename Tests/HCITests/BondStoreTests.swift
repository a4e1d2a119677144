import Foundation
import HCI
import Testing

/// A fresh path in the temporary directory, removed (with its temporary sibling) at the end.
func withBondPath(_ body: (String) async throws -> Void) async rethrows {
  let path = NSTemporaryDirectory() + "ancs-bonds-\(getpid())-\(UUID().uuidString).json"
  defer {
    unlink(path)
    unlink(path + ".tmp")
  }
  try await body(path)
}

let sampleBond = Bond(
  peer: DeviceAddress(type: .random, address: BDAddress("F0:F1:F2:F3:F4:F5")!),
  identity: DeviceAddress(type: .public, address: BDAddress("00:1B:DC:01:02:03")!),
  irk: 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF, ltk: 0xFEDC_BA98_7654_3210_0123_4567_89AB_CDEF, ediv: 0xBEEF,
  rand: 0x0102_0304_0506_0708, secureConnections: false, keySize: 16)

@Suite("Bond store")
struct BondStoreTests {
  @Test("round trip through the file, found by address or identity address; the file is 0600")
  func roundTrip() async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      #expect(store.all.isEmpty)
      let sc = Bond(
        peer: DeviceAddress(type: .random, address: BDAddress("C0:00:00:00:00:01")!), ltk: 1, ediv: 0, rand: 0,
        secureConnections: true, keySize: 7)
      try store.save(sampleBond)
      try store.save(sc)
      let reopened = try BondStore(path: path)
      #expect(reopened.all == [sampleBond, sc])
      #expect(reopened.bond(for: DeviceAddress(type: .public, address: BDAddress("00:1B:DC:01:02:03")!)) == sampleBond)
      #expect(reopened.bond(for: sc.peer) == sc)
      var status = stat()
      #expect(stat(path, &status) == 0)
      #expect(status.st_mode & 0o777 == 0o600)
      let text = try String(contentsOfFile: path, encoding: .utf8)
      #expect(text.contains("\"ltk\":\"fedcba98765432100123456789abcdef\""))
      try reopened.remove(sc.peer)
      #expect(try BondStore(path: path).all == [sampleBond])
    }
  }

  @Test("a bond made with MITM protection stays authenticated in the file; a file from before says nothing: Just Works")
  func authenticatedKept() async throws {
    try await withBondPath { path in
      var bond = sampleBond
      bond.authenticated = true
      try BondStore(path: path).save(bond)
      let text = try String(contentsOfFile: path, encoding: .utf8)
      #expect(text.contains("\"authenticated\":true"))
      #expect(try BondStore(path: path).all.first?.level == .authenticated)
      // As written before the field existed.
      try text.replacingOccurrences(of: ",\"authenticated\":true", with: "")
        .write(toFile: path, atomically: true, encoding: .utf8)
      #expect(try BondStore(path: path).all.first?.level == .encrypted)
      try text.replacingOccurrences(of: "\"authenticated\":true", with: "\"authenticated\":1")
        .write(toFile: path, atomically: true, encoding: .utf8)
      #expect(throws: BondStoreError(path: path, problem: "bonds[0].authenticated: not true or false")) {
        try BondStore(path: path)
      }
    }
  }

  @Test("saving a bond with the same peer replaces it")
  func replaces() async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      try store.save(sampleBond)
      var newer = sampleBond
      newer.ltk = 7
      try store.save(newer)
      #expect(try BondStore(path: path).all == [newer])
    }
  }

  @Test(
    "a corrupt or foreign file is refused with the file and the problem, and left as it was",
    arguments: [
      ("{not json", "not JSON"),
      ("{\"hello\": 1}", "not a bond file"),
      ("{\"format\": \"ancs-sim bonds\", \"version\": 2, \"bonds\": []}", "version 2"),
      (
        "{\"format\": \"ancs-sim bonds\", \"version\": 1, \"bonds\": [{\"peer\": \"C0:00:00:00:00:01\", \"peerType\": 1, \"ltk\": \"12\"}]}",
        "bonds[0].ltk: not 32 hex digits"
      ),
      (
        // 32 characters, but spaces among them: once read as a 13-byte key.
        "{\"format\": \"ancs-sim bonds\", \"version\": 1, \"bonds\": [{\"peer\": \"C0:00:00:00:00:01\", \"peerType\": 1, \"ltk\": \"00 11 22 33 44 55 66 77 88 99 aa\"}]}",
        "bonds[0].ltk: not 32 hex digits"
      ),
      ("\u{FF}", "not JSON"),
      (
        // A public-looking address: a device's own address here is always random static.
        "{\"format\": \"ancs-sim bonds\", \"version\": 1, \"localAddress\": \"00:11:22:33:44:55\", \"bonds\": []}",
        "localAddress: not a random static address"
      ),
    ])
  func corrupt(content: String, problem: String) async throws {
    try await withBondPath { path in
      try content.write(toFile: path, atomically: false, encoding: .utf8)
      do throws(BondStoreError) {
        _ = try BondStore(path: path)
        Issue.record("a corrupt file was accepted")
      } catch {
        #expect(error.path == path)
        #expect(error.description.contains(problem), "\(error)")
        #expect(error.description.hasPrefix("bond file \(path): "))
      }
      #expect(try String(contentsOfFile: path, encoding: .utf8) == content)
    }
  }

  @Test("the device's own address is kept with the bonds, so a later run advertises and connects with it")
  func localAddress() async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      #expect(store.localAddress == nil)
      try store.save(sampleBond)
      let address = BDAddress("C5:44:33:22:11:00")!
      try store.keep(localAddress: address)
      let reopened = try BondStore(path: path)
      #expect(reopened.localAddress == address)
      #expect(reopened.all == [sampleBond])
      // Saving a bond keeps the address.
      try reopened.save(
        Bond(
          peer: DeviceAddress(type: .random, address: BDAddress("C0:00:00:00:00:02")!), ltk: 2, ediv: 0, rand: 0,
          secureConnections: true, keySize: 16))
      #expect(try BondStore(path: path).localAddress == address)
    }
  }

  @Test("a path that cannot be read (a directory) is an error naming it")
  func unreadable() {
    #expect(throws: BondStoreError.self) { try BondStore(path: "/tmp") }
  }
}

@Suite("Bond store: resolvable private addresses")
struct ResolvablePrivateAddressTests {
  /// The spec's ah sample (Vol 3 Part H D.7): IRK ec0234a357c8ad05341010a60a397d9b,
  /// prand 708194, hash 0dfbaa: the address 70:81:94:0D:FB:AA.
  static let irk: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B
  static let bonded = Bond(
    peer: DeviceAddress(type: .random, address: BDAddress("4A:00:00:00:00:01")!),
    identity: DeviceAddress(type: .public, address: BDAddress("00:1B:DC:0A:0B:0C")!), irk: irk, ltk: 9, ediv: 1,
    rand: 2, secureConnections: true, keySize: 16)

  @Test("a peer back with a new private address is found by its IRK; another address is not")
  func resolves() async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      try store.save(Self.bonded)
      let rotated = DeviceAddress(type: .random, address: BDAddress("70:81:94:0D:FB:AA")!)
      #expect(rotated.address.isResolvablePrivate)
      #expect(store.bond(for: rotated) == Self.bonded)
      // One bit of the hash changed: made with another key.
      #expect(store.bond(for: DeviceAddress(type: .random, address: BDAddress("70:81:94:0D:FB:AB")!)) == nil)
      // A public address with the same bits is not a private address.
      #expect(store.bond(for: DeviceAddress(type: .public, address: BDAddress("70:81:94:0D:FB:AA")!)) == nil)
    }
  }

  @Test("pairing again from a new private address replaces the bond with the same identity")
  func replacesByIdentity() async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      try store.save(Self.bonded)
      var again = Self.bonded
      again.peer = DeviceAddress(type: .random, address: BDAddress("70:81:94:0D:FB:AA")!)
      again.ltk = 10
      try store.save(again)
      #expect(try BondStore(path: path).all == [again])
    }
  }
}
