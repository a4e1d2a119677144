import ATT
import Runtime
import TestSupport
import Testing
import Wire

@testable import Links
@testable import Sockets

/// Bond trouble on the simulated links (Keyring.swift): each case connects a phone and a
/// watch that keep bonds, as often as it needs, over every kind of simulated link.
@Suite("Bonds on the simulated links", .timeLimit(scaledMinutes(2)))
struct BondTests {
  enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, unixPair, tcp
    var testDescription: String { rawValue }

    /// A new connection between the two devices: (phone, watch).
    func connect(phone: Keyring, watch: Keyring) async throws -> (any ATTBearer, any ATTBearer) {
      switch self {
      case .memory:
        let (central, peripheral) = MemoryLink.pair(keyrings: (phone, watch))
        return (central, peripheral)
      case .unixPair:
        let (central, peripheral) = try UnixSeqpacketLink.pair(on: testLoop, keyrings: (phone, watch))
        return (central, peripheral)
      case .tcp:
        let listener = try TCPListener(on: testLoop, keyring: phone)
        defer { listener.close() }
        async let accepted = listener.accept()
        let watchEnd = try await TCPLink.connect(port: listener.port, on: testLoop, keyring: watch)
        return (try await accepted, watchEnd)
      }
    }
  }

  /// Every event of a keyring, in order, awaited one by one.
  final class Recorder: Sendable {
    let stream: AsyncStream<BondEvent>
    let iterator: Locked<AsyncStream<BondEvent>.Iterator>
    init(_ keyring: Keyring) {
      let (stream, continuation) = AsyncStream<BondEvent>.makeStream()
      self.stream = stream
      self.iterator = Locked(stream.makeAsyncIterator())
      keyring.observe { continuation.yield($0) }
    }
    /// The next `count` events.
    func next(_ count: Int = 1) async -> [BondEvent] {
      var iterator = iterator.withLock { $0 }
      var events: [BondEvent] = []
      for _ in 0..<count { if let event = await iterator.next() { events.append(event) } }
      self.iterator.withLock { $0 = iterator }
      return events
    }
  }

  @Test(
    "the first pairing bonds both ends with one key; the next connection encrypts with it", arguments: Kind.allCases)
  func bondThenEncrypt(kind: Kind) async throws {
    let phone = Keyring()
    let watch = Keyring()
    let (phoneLog, watchLog) = (Recorder(phone), Recorder(watch))
    var (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    #expect(try await watchEnd.pair(.encrypted) == .encrypted)
    #expect(await watchLog.next() == [.bonded(peer: phone.address, level: .encrypted, again: false)])
    #expect(await phoneLog.next() == [.bonded(peer: watch.address, level: .encrypted, again: false)])
    #expect(phoneEnd.securityLevel == .encrypted)
    let key = try #require(phone.bond(with: watch.address)).key
    #expect(watch.bond(with: phone.address) == Keyring.Bond(key: key, level: .encrypted))
    phoneEnd.close()
    watchEnd.close()

    (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    defer { phoneEnd.close() }
    #expect(try await watchEnd.pair(.encrypted) == .encrypted)
    #expect(await watchLog.next() == [.encrypted(peer: phone.address)])
    #expect(await phoneLog.next() == [.encrypted(peer: watch.address)])
    #expect(phone.bond(with: watch.address)?.key == key, "encrypting with a bond makes no new one")
    watchEnd.close()
  }

  @Test("the phone forgot: it pairs afresh and the watch, still bonded, pairs again", arguments: Kind.allCases)
  func phoneForgot(kind: Kind) async throws {
    let phone = Keyring()
    let watch = Keyring()
    try await bond(phone, watch, kind)
    let old = try #require(watch.bond(with: phone.address)).key
    #expect(phone.forget(nil) == [watch.address])
    #expect(phone.bondedPeers.isEmpty)
    let (phoneLog, watchLog) = (Recorder(phone), Recorder(watch))
    let (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    defer { phoneEnd.close() }
    #expect(try await watchEnd.pair(.encrypted) == .encrypted)
    #expect(await watchLog.next() == [.bonded(peer: phone.address, level: .encrypted, again: true)])
    #expect(await phoneLog.next() == [.bonded(peer: watch.address, level: .encrypted, again: false)])
    let new = try #require(watch.bond(with: phone.address)).key
    #expect(new != old)
    #expect(phone.bond(with: watch.address)?.key == new)
    watchEnd.close()
  }

  @Test(
    "the phone forgot and the watch refuses to pair again: no protection, and it says why", arguments: Kind.allCases)
  func watchRefusesRepairing(kind: Kind) async throws {
    let phone = Keyring()
    let watch = Keyring(behaviour: .init(acceptRepairing: false))
    try await bond(phone, watch, kind)
    phone.forget(watch.address)
    let watchLog = Recorder(watch)
    let (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    defer { phoneEnd.close() }
    await #expect(
      throws: BearerError.pairingFailed("refused to pair again with \(phone.address), with which it has a bond")
    ) {
      try await watchEnd.pair(.encrypted)
    }
    #expect(await watchLog.next() == [.repairingRefused(peer: phone.address)])
    #expect(watchEnd.securityLevel == .unencrypted)
    #expect(phone.bondedPeers.isEmpty, "the phone keeps no bond from a refused pairing")
    watchEnd.close()
  }

  @Test(
    "the watch forgot: the phone's key is missing, and an iPhone disconnects and keeps its bond",
    arguments: Kind.allCases)
  func watchForgot(kind: Kind) async throws {
    let phone = Keyring()
    let watch = Keyring()
    try await bond(phone, watch, kind)
    #expect(watch.forget(nil) == [phone.address])
    let (phoneLog, watchLog) = (Recorder(phone), Recorder(watch))
    for _ in 0..<2 {
      // It happens again at every connection, until the phone's user forgets the watch.
      let (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
      defer { phoneEnd.close() }
      await #expect(throws: BearerError.pairingFailed(BondExchange.keyMissingText)) {
        try await watchEnd.pair(.encrypted)
      }
      #expect(await watchLog.next() == [.keyMissing(peer: phone.address)])
      #expect(await phoneLog.next() == [.peerLostKey(peer: watch.address)])
      // The phone closes the link.
      #expect(try await watchEnd.receive() == nil)
      #expect(phone.bondedPeers == [watch.address])
      #expect(watch.bondedPeers.isEmpty)
      watchEnd.close()
    }
    phone.forget(watch.address)
    let (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    defer { phoneEnd.close() }
    #expect(try await watchEnd.pair(.encrypted) == .encrypted)
    #expect(watch.bond(with: phone.address) != nil)
    watchEnd.close()
  }

  @Test("a phone that pairs again on Key Missing replaces its bond at once", arguments: Kind.allCases)
  func pairAgainOnKeyMissing(kind: Kind) async throws {
    let phone = Keyring(behaviour: .init(disconnectOnKeyMissing: false))
    let watch = Keyring()
    try await bond(phone, watch, kind)
    // Spoiling the phone's key is the watch having lost it, seen from the watch.
    #expect(phone.spoil(watch.address))
    let (phoneLog, watchLog) = (Recorder(phone), Recorder(watch))
    let (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    defer { phoneEnd.close() }
    #expect(try await watchEnd.pair(.encrypted) == .encrypted)
    #expect(
      await watchLog.next(2) == [
        .keyMissing(peer: phone.address), .bonded(peer: phone.address, level: .encrypted, again: true),
      ])
    #expect(
      await phoneLog.next(2) == [
        .peerLostKey(peer: watch.address), .bonded(peer: watch.address, level: .encrypted, again: false),
      ])
    // The link stays up.
    try phoneEnd.send([0x1B, 0x03, 0x00])
    #expect(try await watchEnd.receive() == [0x1B, 0x03, 0x00])
    #expect(phone.bond(with: watch.address)?.key == watch.bond(with: phone.address)?.key)
    watchEnd.close()
  }

  /// A harness's spoiled pairing (BondBook.spoilNextPairing): the phone's Bond Request
  /// stands for a wrong passkey (key 0), the watch finds the confirm values differ and
  /// answers Confirm Value Failed, or the reason its behaviour says; no bond on either side,
  /// and the phone learns who refused and why.
  @Test(
    "a wrong passkey: the watch refuses with Confirm Value Failed (or its own reason), and nobody bonds",
    arguments: Kind.allCases, [0x04, 0x08] as [UInt8])
  func wrongPasskey(kind: Kind, reason: UInt8) async throws {
    let phone = Keyring()
    let watch = Keyring(behaviour: .init(wrongPasskeyReason: reason))
    #expect(phone.spoilNextPairing(true) && phone.nextPairingSpoiled && phone.spoiledPairingEnd == nil)
    let phoneLog = Recorder(phone)
    var (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    await #expect(throws: BearerError.pairingFailed(BondExchange.wrongPasskeyText)) {
      try await watchEnd.pair(.authenticated)
    }
    #expect(await phoneLog.next() == [.pairingRefused(peer: watch.address, reason: BondExchange.wrongPasskeyText)])
    #expect(!phone.nextPairingSpoiled)
    #expect(phone.spoiledPairingEnd == .peerFailed(reason: reason, text: BondExchange.wrongPasskeyText))
    #expect(phone.bondedPeers.isEmpty && watch.bondedPeers.isEmpty)
    #expect(watchEnd.securityLevel == .unencrypted)
    phoneEnd.close()
    watchEnd.close()

    // The next pairing is the user's right one.
    (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    defer { phoneEnd.close() }
    #expect(try await watchEnd.pair(.authenticated) == .authenticated)
    #expect(await phoneLog.next() == [.bonded(peer: watch.address, level: .authenticated, again: false)])
    #expect(watch.bond(with: phone.address)?.key == phone.bond(with: watch.address)?.key)
    watchEnd.close()
  }

  @Test("a keyring at one end only pairs as before, without bonds")
  func oneSidedKeyring() async throws {
    let watch = Keyring()
    let (phoneEnd, watchEnd) = try UnixSeqpacketLink.pair(on: testLoop, keyrings: (nil, watch))
    defer { phoneEnd.close() }
    #expect(try await watchEnd.pair(.encrypted) == .encrypted)
    #expect(watch.bondedPeers.isEmpty)
    watchEnd.close()
  }

  @Test("the new control messages round-trip; broken ones are named")
  func controlMessages() throws {
    let messages: [ControlMessage] = [
      .securityRequest(wanted: 2, address: "C0:01:02:03:04:05"), .encrypt(key: 0x0102_0304_0506_0708, address: "x"),
      .encryptAccept(granted: .authenticated), .keyMissing, .bondRequest(wanted: 3, key: .max, address: "phone"),
    ]
    for message in messages { #expect(try ControlMessage.decode(message.encoded[...]) == message) }
    #expect(
      ControlMessage.encrypt(key: 0x0102_0304_0506_0708, address: "x").encoded == [5, 8, 7, 6, 5, 4, 3, 2, 1, 0x78])
    #expect(throws: LinkFault.malformedControl("Security Request whose address is not 1...64 bytes of UTF-8")) {
      try ControlMessage.decode([4, 2][...])
    }
    #expect(throws: LinkFault.malformedControl("Encrypt of 5 bytes, without its key")) {
      try ControlMessage.decode([5, 1, 2, 3, 4][...])
    }
    #expect(throws: LinkFault.malformedControl("Key Missing of 2 bytes, expected 1")) {
      try ControlMessage.decode([7, 0][...])
    }
    #expect(throws: LinkFault.malformedControl("Encrypt Accept with level 9, expected 1...3")) {
      try ControlMessage.decode([6, 9][...])
    }
  }

  private func bond(_ phone: Keyring, _ watch: Keyring, _ kind: Kind) async throws {
    let (phoneEnd, watchEnd) = try await kind.connect(phone: phone, watch: watch)
    let phoneLog = Recorder(phone)
    #expect(try await watchEnd.pair(.encrypted) == .encrypted)
    _ = await phoneLog.next()
    #expect(phone.bond(with: watch.address) != nil)
    phoneEnd.close()
    watchEnd.close()
  }
}
