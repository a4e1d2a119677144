import ATT
import Foundation
import HCI
import Runtime
import TestSupport
import Testing
import Wire

private let peerAddress = DeviceAddress(type: .random, address: BDAddress("C0:00:00:00:00:42")!)

/// Room for every ACL packet without Number Of Completed Packets.
private var roomy: FakeController.Settings {
  var settings = FakeController.Settings()
  settings.leACLLength = 251
  settings.leACLCount = 100
  return settings
}

/// Plays the peer's host with our own engine in the other role: SMP PDUs through the fake
/// controller, LE Enable Encryption and the LTK request as a controller pair would.
///
/// The peer's user: types the passkeys `passkeys` gives (what our host shows), and answers
/// a numeric comparison with `confirms`.
private func runPeer(
  _ engine: inout SMPPairing, fake: FakeController, initial: [SMPAction], passkeys: Inbox<UInt32>? = nil,
  confirms: Bool = false
) async throws -> SMPAction? {
  var pending = initial
  while true {
    if pending.isEmpty {
      if engine.phase == .complete || engine.phase == .failed { return nil }
      if engine.role == .peripheral, engine.phase == .awaitingEncryption {
        // Our host, as central, starts encryption: the peer's controller asks its host.
        let command = try #require(await fake.nextCommand())
        let start = try LEStartEncryption(packet: command)
        let matches =
          engine.keyForRequest(ediv: start.encryptedDiversifier, rand: start.randomNumber) == start.longTermKey
        fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: matches ? 1 : 0)))
        pending += engine.encryptionChanged(status: .success, enabled: matches)
        continue
      }
      let frame = try #require(await fake.nextFrame())
      guard frame.channel == .smp else { continue }
      pending += engine.receive(try SMPPDU(decoding: frame.payload))
      continue
    }
    let action = pending.removeFirst()
    switch action {
    case .send(let pdu): fake.send(.smp, pdu.encoded)
    case .startEncryption(let ltk, let ediv, let rand):
      // The peer is central: our host, as peripheral, gets the LTK request.
      fake.send(
        .leLongTermKeyRequest(
          LELongTermKeyRequest(connectionHandle: 0x0040, randomNumber: rand, encryptedDiversifier: ediv)))
      let command = try #require(await fake.nextCommand())
      let matches = (try? LELongTermKeyRequestReply(packet: command))?.longTermKey == ltk
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: matches ? 1 : 0)))
      pending += engine.encryptionChanged(status: .success, enabled: matches)
    case .completed, .failed: return action
    case .requestPasskey where passkeys != nil:
      pending += engine.enterPasskey(await passkeys?.next())
    case .requestConfirmation:
      pending += engine.confirm(confirms)
    case .displayPasskey, .requestPasskey:
      Issue.record("the peer asked its user: \(action)")
      return action
    }
  }
}

/// A store at `path` holding `sampleBond` for the fake controller's peer.
private func storeWithBond(at path: String) throws -> (BondStore, Bond) {
  let store = try BondStore(path: path)
  var bond = sampleBond
  bond.peer = peerAddress
  try store.save(bond)
  return (store, bond)
}

/// A store at `path` holding `sampleBond`, and every bond event it reports from now on.
private func recordingStoreWithBond(at path: String) throws -> (BondStore, Bond, Locked<[BondEvent]>) {
  let (store, bond) = try storeWithBond(at: path)
  let events = Locked<[BondEvent]>([])
  store.observe { event in events.withLock { $0.append(event) } }
  return (store, bond, events)
}

/// The next frame the host sends is the Command Reject of an unknown LE signalling command
/// sent now: nothing on SMP came before it.
private func expectNoSMP(_ fake: FakeController, sourceLocation: SourceLocation = #_sourceLocation) async throws {
  fake.send(.leSignaling, [0x7F, 0x01, 0x00, 0x00])
  #expect(try #require(await fake.nextFrame()).channel == .leSignaling, sourceLocation: sourceLocation)
}

@Suite("SMP security manager on the host")
struct SecurityManagerTests {
  @Test(
    "our peripheral host sends a Security Request and pairs with our central engine; bonds equal",
    arguments: [true, false])
  func peripheralPairs(secureConnections: Bool) async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      let security = SMPSecurityManager(store: store, options: .init(secureConnections: secureConnections))
      let (fake, _, connection) = try await connectedHost(role: .peripheral, roomy, security: security)
      let pairing = Task { try await connection.pair(.encrypted) }
      let request = try #require(await fake.nextFrame())
      #expect(
        try SMPPDU(decoding: request.payload)
          == .securityRequest(secureConnections ? [.bonding, .secureConnections] : .bonding))
      var central = SMPPairing(
        role: .central, local: peerAddress, peer: connection.local,
        offer: SMPPairing.justWorks(secureConnections: true))
      let outcome = try await runPeer(&central, fake: fake, initial: central.start())
      #expect(try await pairing.value == .encrypted)
      #expect(connection.securityLevel == .encrypted)
      guard case .completed(let bond?)? = outcome else {
        Issue.record("the central did not complete: \(String(describing: outcome))")
        return
      }
      #expect(central.secureConnections == secureConnections)
      let stored = try #require(try BondStore(path: path).bond(for: peerAddress))
      #expect(stored.ltk == bond.ltk && stored.ediv == bond.ediv && stored.rand == bond.rand)
    }
  }

  @Test(
    "our central host pairs with our peripheral engine, starting encryption with the key", arguments: [true, false])
  func centralPairs(secureConnections: Bool) async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      let security = SMPSecurityManager(store: store, options: .init(secureConnections: secureConnections))
      let (fake, _, connection) = try await connectedHost(role: .central, roomy, security: security)
      let pairing = Task { try await connection.pair(.encrypted) }
      var peripheral = SMPPairing(
        role: .peripheral, local: peerAddress, peer: connection.local,
        offer: SMPPairing.justWorks(secureConnections: true))
      let outcome = try await runPeer(&peripheral, fake: fake, initial: [])
      #expect(try await pairing.value == .encrypted)
      guard case .completed(let bond?)? = outcome else {
        Issue.record("the peripheral did not complete: \(String(describing: outcome))")
        return
      }
      #expect(store.bond(for: peerAddress)?.ltk == bond.ltk)
      #expect(store.bond(for: peerAddress)?.secureConnections == secureConnections)
    }
  }

  @Test("a central with a bond encrypts with its EDIV, Rand and LTK instead of pairing")
  func centralReconnects() async throws {
    try await withBondPath { path in
      let (_, bond) = try storeWithBond(at: path)
      // The store read again from the file.
      let (fake, _, connection) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: try BondStore(path: path)))
      let pairing = Task { try await connection.pair(.encrypted) }
      let start = try LEStartEncryption(packet: try #require(await fake.nextCommand()))
      #expect(
        start.longTermKey == bond.ltk && start.encryptedDiversifier == bond.ediv && start.randomNumber == bond.rand)
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      #expect(try await pairing.value == .encrypted)
      try await expectNoSMP(fake)
    }
  }

  @Test("a central whose peer lost the bond (Encryption Change 0x06) pairs again and replaces the bond")
  func peerLostBond() async throws {
    try await withBondPath { path in
      let (store, bond) = try storeWithBond(at: path)
      let (fake, _, connection) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: store))
      let pairing = Task { try await connection.pair(.encrypted) }
      #expect(try #require(await fake.nextCommand()).opcode == LEStartEncryption.opcode)
      fake.send(
        .encryptionChange(
          EncryptionChange(status: HCIStatus(rawValue: 0x06), connectionHandle: 0x0040, encryptionEnabled: 0)))
      var peripheral = SMPPairing(
        role: .peripheral, local: peerAddress, peer: connection.local,
        offer: SMPPairing.justWorks(secureConnections: true))
      let outcome = try await runPeer(&peripheral, fake: fake, initial: [])
      #expect(try await pairing.value == .encrypted)
      guard case .completed(let fresh?)? = outcome else {
        Issue.record("the peripheral did not complete: \(String(describing: outcome))")
        return
      }
      #expect(store.bond(for: peerAddress)?.ltk == fresh.ltk && fresh.ltk != bond.ltk)
    }
  }

  @Test("as an iPhone, a central whose peer lost the bond keeps it, disconnects with 0x05 and says so")
  func iPhoneKeepsTheBondAndDisconnects() async throws {
    try await withBondPath { path in
      let (store, bond, events) = try recordingStoreWithBond(at: path)
      let security = SMPSecurityManager(store: store, options: .init(disconnectOnKeyMissing: true))
      let (fake, _, connection) = try await connectedHost(role: .central, roomy, security: security)
      let pairing = Task { try await connection.pair(.encrypted) }
      #expect(try #require(await fake.nextCommand()).opcode == LEStartEncryption.opcode)
      fake.send(
        .encryptionChange(
          EncryptionChange(status: HCIStatus(rawValue: 0x06), connectionHandle: 0x0040, encryptionEnabled: 0)))
      await #expect(throws: BearerError.self) { try await pairing.value }
      let disconnect = try Disconnect(packet: try #require(await fake.nextCommand()))
      #expect(disconnect.reason == .authenticationFailure)
      #expect(store.bond(for: peerAddress)?.ltk == bond.ltk, "the bond is kept")
      // Named by the identity address the bond holds, as `bondedPeers` names it.
      let name = try #require(store.bondedPeers.first)
      #expect(name == bond.identity?.address.description)
      #expect(events.withLock { $0 } == [.peerLostKey(peer: name)])
      #expect(try store.forget(nil) == [name])
      #expect(try BondStore(path: path).all.isEmpty, "forget rewrites the file")
    }
  }

  @Test("a peripheral that refuses to pair again with a bonded central answers Pairing Failed 0x08")
  func repairingRefused() async throws {
    try await withBondPath { path in
      let (store, bond, events) = try recordingStoreWithBond(at: path)
      let security = SMPSecurityManager(store: store, options: .init(acceptRepairing: false))
      let (fake, _, _) = try await connectedHost(role: .peripheral, roomy, security: security)
      var central = SMPPairing(
        role: .central, local: peerAddress,
        peer: DeviceAddress(type: .random, address: BDAddress("C1:00:00:00:00:01")!),
        offer: SMPPairing.justWorks(secureConnections: true))
      for case .send(let pdu) in central.start() { fake.send(.smp, pdu.encoded) }
      let answer = try #require(await fake.nextFrame())
      #expect(try SMPPDU(decoding: answer.payload) == .pairingFailed(.unspecifiedReason))
      #expect(store.bond(for: peerAddress)?.ltk == bond.ltk)
      #expect(events.withLock { $0 } == [.repairingRefused(peer: try #require(store.bondedPeers.first))])
    }
  }

  @Test("a peripheral answers the LTK request from the bond when EDIV and Rand match, negatively otherwise")
  func peripheralReconnects() async throws {
    try await withBondPath { path in
      let (store, bond) = try storeWithBond(at: path)
      let (fake, _, connection) = try await connectedHost(
        role: .peripheral, roomy, security: SMPSecurityManager(store: store))
      fake.send(
        .leLongTermKeyRequest(
          LELongTermKeyRequest(connectionHandle: 0x0040, randomNumber: 1, encryptedDiversifier: bond.ediv)))
      #expect(try #require(await fake.nextCommand()).opcode == LELongTermKeyRequestNegativeReply.opcode)
      fake.send(
        .leLongTermKeyRequest(
          LELongTermKeyRequest(connectionHandle: 0x0040, randomNumber: bond.rand, encryptedDiversifier: bond.ediv)))
      let reply = try LELongTermKeyRequestReply(packet: try #require(await fake.nextCommand()))
      #expect(reply.longTermKey == bond.ltk)
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      #expect(try await connection.pair(.encrypted) == .encrypted)
    }
  }

  /// The accessory asks for security (a Security Request) just as its central encrypts with
  /// the bond: the Encryption Change answers the request, which must not wait out SMP's 30 s.
  @Test(
    "a peripheral waiting for security is answered by the central's encryption with the bond",
    .timeLimit(scaledMinutes(1)))
  func peripheralAskedThenEncryptedByTheCentral() async throws {
    try await withBondPath { path in
      let (store, bond) = try storeWithBond(at: path)
      let clock = ManualClock()
      let (fake, _, connection) = try await connectedHost(
        role: .peripheral, roomy, clock: clock, security: SMPSecurityManager(store: store, clock: clock))
      let pairing = Task { try await connection.pair(.encrypted) }
      #expect(
        try SMPPDU(decoding: try #require(await fake.nextFrame()).payload)
          == .securityRequest([.bonding, .secureConnections]))
      fake.send(
        .leLongTermKeyRequest(
          LELongTermKeyRequest(connectionHandle: 0x0040, randomNumber: bond.rand, encryptedDiversifier: bond.ediv)))
      #expect(try LELongTermKeyRequestReply(packet: try #require(await fake.nextCommand())).longTermKey == bond.ltk)
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      #expect(try await pairing.value == .encrypted)
    }
  }

  @Test("an unanswered Security Request times out after 30 s on the injected clock; SMP then stays silent")
  func timeout() async throws {
    let clock = ManualClock()
    let security = SMPSecurityManager(store: nil, clock: clock)
    let (fake, _, connection) = try await connectedHost(role: .peripheral, roomy, clock: clock, security: security)
    let pairing = Task { try await connection.pair(.encrypted) }
    #expect(
      try SMPPDU(decoding: try #require(await fake.nextFrame()).payload)
        == .securityRequest([.bonding, .secureConnections]))
    await clock.waitForSleepers(2)
    clock.advance(by: .seconds(30))
    await #expect(throws: BearerError.pairingFailed(SMPPairingError.timeout.description)) { try await pairing.value }
    // After the timeout a Pairing Request gets no answer at all.
    fake.send(.smp, SMPPDU.pairingRequest(SMPPairing.justWorks(secureConnections: true)).encoded)
    try await expectNoSMP(fake)
  }

  @Test("pair on a link that ended since it was looked at fails at once, and leaves nothing behind")
  func pairAfterTheEnd() async throws {
    let clock = ManualClock()
    let security = SMPSecurityManager(store: nil, clock: clock)
    let (fake, _, connection) = try await connectedHost(role: .peripheral, roomy, clock: clock, security: security)
    fake.send(
      .disconnectionComplete(DisconnectionComplete(connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)))
    #expect(try await connection.waitForDisconnection() == .remoteUserTerminatedConnection)
    // As a caller that looked just before the end would: no Security Request, no state,
    // no SMP deadline kept for the handle (a new link may take it).
    await #expect(throws: BearerError.disconnected) { try await security.pair(.encrypted, on: connection) }
    #expect(await testLoop.submit { security.deadline } == nil)
  }

  @Test("malformed SMP gets 0x0A, an unknown code 0x07, a stray Pairing Confirm 0x08")
  func malformed() async throws {
    let (fake, _, _) = try await connectedHost(role: .peripheral, roomy, security: SMPSecurityManager(store: nil))
    fake.send(.smp, [0x01, 0x03])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .smp, payload: [0x05, 0x0A]))
    fake.send(.smp, [0x7F])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .smp, payload: [0x05, 0x07]))
    fake.send(.smp, SMPPDU.pairingConfirm(1).encoded)
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .smp, payload: [0x05, 0x08]))
  }

}

/// The options of a host that pairs as an iPhone does: KeyboardDisplay, MITM asked.
private func iPhoneLike(confirms: Bool? = nil) -> SMPSecurityManager.Options {
  SMPSecurityManager.Options(ioCapability: .keyboardDisplay, mitm: true, confirmsNumbers: confirms)
}

/// Our peer's Pairing Response or Request with `io`, asking for MITM protection.
private func mitmOffer(_ io: IOCapability, secureConnections: Bool = true) -> PairingFeatures {
  SMPPairing.features(ioCapability: io, mitm: true, secureConnections: secureConnections)
}

@Suite("SMP security manager: authenticated links (MITM protection)")
struct AuthenticatedLinkTests {
  @Test("numeric comparison gives an authenticated link and bond; the next connection encrypts with it, authenticated")
  func numericComparison() async throws {
    try await withBondPath { path in
      let security = SMPSecurityManager(store: try BondStore(path: path), options: iPhoneLike(confirms: true))
      let (fake, _, connection) = try await connectedHost(role: .central, roomy, security: security)
      let pairing = Task { try await connection.pair(.authenticated) }
      var peripheral = SMPPairing(
        role: .peripheral, local: peerAddress, peer: connection.local, offer: mitmOffer(.displayYesNo),
        requiresMITM: true)
      let outcome = try await runPeer(&peripheral, fake: fake, initial: [], confirms: true)
      #expect(peripheral.method == .numericComparison)
      #expect(try await pairing.value == .authenticated)
      #expect(connection.securityLevel == .authenticated)
      guard case .completed(let bond?)? = outcome else {
        Issue.record("the peripheral did not complete: \(String(describing: outcome))")
        return
      }
      #expect(bond.authenticated)
      let stored = try #require(try BondStore(path: path).bond(for: peerAddress))
      #expect(stored.ltk == bond.ltk && stored.level == .authenticated)

      // A new host reads the file: its bond's key is authenticated, so it encrypts.
      let (again, _, second) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: try BondStore(path: path), options: iPhoneLike()))
      let reconnect = Task { try await second.pair(.authenticated) }
      #expect(try #require(await again.nextCommand()).opcode == LEStartEncryption.opcode)
      again.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      #expect(try await reconnect.value == .authenticated)
    }
  }

  @Test("the user's answer from another thread reaches the pairing on the host's loop (numeric comparison)")
  func answeredFromAnotherThread() async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      let asked = Inbox<UInt32>()
      store.observe { event in
        if case .pairing(_, .compare(let value)) = event { asked.push(value) }
      }
      // No answer given ahead: the manager asks the store's observer, and waits.
      let security = SMPSecurityManager(store: store, options: iPhoneLike())
      let (fake, _, connection) = try await connectedHost(role: .central, roomy, security: security)
      let pairing = Task { try await connection.pair(.authenticated) }
      let peer = Task { () throws -> SMPAction? in
        var peripheral = SMPPairing(
          role: .peripheral, local: peerAddress, peer: connection.local, offer: mitmOffer(.displayYesNo),
          requiresMITM: true)
        return try await runPeer(&peripheral, fake: fake, initial: [], confirms: true)
      }
      _ = try #require(await asked.next())
      // This task is not on the host's loop: the answer waits for the loop, which takes it.
      #expect(!testLoop.inEventLoop)
      #expect(store.answer(.confirm(true), for: nil))
      #expect(!store.answer(.confirm(true), for: nil), "nothing waits for an answer any more")
      #expect(try await pairing.value == .authenticated)
      guard case .completed? = try await peer.value else {
        Issue.record("the peripheral did not complete")
        return
      }
      #expect(store.bond(for: peerAddress)?.level == .authenticated)
    }
  }

  @Test(
    "passkey entry with our central showing: the store's observer gets the passkey the peer types",
    arguments: [true, false])
  func passkeyShown(secureConnections: Bool) async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      let shown = Inbox<UInt32>()
      let refusals = Locked<[String]>([])
      store.observe { event in
        if case .pairing(_, .showPasskey(let value)) = event { shown.push(value) }
        if case .pairingRefused(_, let reason) = event { refusals.withLock { $0.append(reason) } }
      }
      // A clock that never reaches SMP's 30 s: under AddressSanitizer, with the whole suite
      // beside it, Secure Connections' twenty passkey rounds took longer than that on the
      // system clock. The timeouts have tests of their own.
      let still = ManualClock()
      let security = SMPSecurityManager(
        store: store,
        options: SMPSecurityManager.Options(secureConnections: secureConnections, ioCapability: .displayOnly),
        clock: still)
      let (fake, _, connection) = try await connectedHost(role: .central, roomy, clock: still, security: security)
      let pairing = Task { try await connection.pair(.authenticated) }
      var peripheral = SMPPairing(
        role: .peripheral, local: peerAddress, peer: connection.local,
        offer: mitmOffer(.keyboardOnly, secureConnections: secureConnections), requiresMITM: true)
      let outcome = try await runPeer(&peripheral, fake: fake, initial: [], passkeys: shown)
      #expect(try await pairing.value == .authenticated)
      guard case .completed? = outcome else {
        Issue.record("the peripheral did not complete: \(String(describing: outcome))")
        return
      }
      #expect(store.bond(for: peerAddress)?.level == .authenticated)
    }
  }

  @Test(
    "asked for an authenticated link, a central whose peer can only do Just Works refuses: Authentication Requirements")
  func justWorksIsNotEnough() async throws {
    let (fake, _, connection) = try await connectedHost(
      role: .central, roomy, security: SMPSecurityManager(store: nil, options: iPhoneLike()))
    let pairing = Task { try await connection.pair(.authenticated) }
    let request = try SMPPDU(decoding: try #require(await fake.nextFrame()).payload)
    guard case .pairingRequest(let features) = request else {
      Issue.record("not a Pairing Request: \(request)")
      return
    }
    #expect(features.authReq.contains(.mitm))
    fake.send(.smp, SMPPDU.pairingResponse(SMPPairing.justWorks(secureConnections: true)).encoded)
    #expect(
      try SMPPDU(decoding: try #require(await fake.nextFrame()).payload)
        == .pairingFailed(.authenticationRequirements))
    await #expect(throws: BearerError.self) { try await pairing.value }
    #expect(connection.securityLevel == .unencrypted)
  }

  @Test("a central with a Just Works bond: encrypts with it when encryption is enough, pairs for MITM otherwise")
  func justWorksBondIsNotAuthenticated() async throws {
    try await withBondPath { path in
      let (store, bond) = try storeWithBond(at: path)
      #expect(!bond.authenticated)
      // A peripheral's Security Request without MITM: the bond will do.
      let (fake, _, connection) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: store, options: iPhoneLike()))
      fake.send(.smp, SMPPDU.securityRequest([.bonding, .secureConnections]).encoded)
      #expect(try LEStartEncryption(packet: try #require(await fake.nextCommand())).longTermKey == bond.ltk)
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      #expect(try await connection.pair(.encrypted) == .encrypted)
      // With MITM (Vol 3 Part H 2.4.6), the bond does not meet it: the central pairs.
      fake.send(.smp, SMPPDU.securityRequest([.bonding, .secureConnections, .mitm]).encoded)
      let request = try SMPPDU(decoding: try #require(await fake.nextFrame()).payload)
      guard case .pairingRequest(let features) = request else {
        Issue.record("not a Pairing Request: \(request)")
        return
      }
      #expect(features.authReq.contains(.mitm))

      // A new connection whose own user asks for an authenticated link pairs too.
      let (other, _, second) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: try BondStore(path: path), options: iPhoneLike()))
      let pairing = Task { try await second.pair(.authenticated) }
      let frame = try #require(await other.nextFrame())
      guard case .pairingRequest(let asked) = try SMPPDU(decoding: frame.payload) else {
        Issue.record("not a Pairing Request: \(frame)")
        return
      }
      #expect(asked.authReq.contains(.mitm))
      other.send(.smp, SMPPDU.pairingFailed(.pairingNotSupported).encoded)
      await #expect(throws: BearerError.self) { try await pairing.value }
    }
  }

  /// The race the review found: the central starts encrypting with its Just Works bond, and
  /// the peripheral's Security Request with MITM comes before the Encryption Change. The
  /// request is not lost: once encrypted, the central pairs with MITM, and its own caller
  /// learns the outcome of that pairing.
  @Test("a Security Request with MITM during encryption with a Just Works bond: the central pairs once encrypted")
  func mitmAskedDuringEncryption() async throws {
    try await withBondPath { path in
      let (store, bond) = try storeWithBond(at: path)
      let (fake, _, connection) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: store, options: iPhoneLike()))
      let encrypting = Task { try await connection.pair(.encrypted) }
      #expect(try LEStartEncryption(packet: try #require(await fake.nextCommand())).longTermKey == bond.ltk)
      fake.send(.smp, SMPPDU.securityRequest([.bonding, .secureConnections, .mitm]).encoded)
      // The request reaches the manager before the Encryption Change does (one receive path).
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      let request = try SMPPDU(decoding: try #require(await fake.nextFrame()).payload)
      guard case .pairingRequest(let features) = request else {
        Issue.record("not a Pairing Request: \(request)")
        return
      }
      #expect(features.authReq.contains(.mitm))
      #expect(connection.securityLevel == .encrypted)
      fake.send(.smp, SMPPDU.pairingFailed(.pairingNotSupported).encoded)
      await #expect(throws: BearerError.self) { try await encrypting.value }
    }
  }

  @Test(
    "a peripheral that needs an authenticated link asks with MITM; a Just Works bond's key is refused, an authenticated one taken",
    arguments: [false, true])
  func peripheralNeedsMITM(authenticatedBond: Bool) async throws {
    try await withBondPath { path in
      let store = try BondStore(path: path)
      var bond = sampleBond
      bond.peer = peerAddress
      bond.authenticated = authenticatedBond
      try store.save(bond)
      let (fake, _, connection) = try await connectedHost(
        role: .peripheral, roomy,
        security: SMPSecurityManager(
          store: store, options: SMPSecurityManager.Options(ioCapability: .displayOnly, mitm: true, requireMITM: true)))
      let pairing = Task { try await connection.pair(.authenticated) }
      #expect(
        try SMPPDU(decoding: try #require(await fake.nextFrame()).payload)
          == .securityRequest([.bonding, .secureConnections, .mitm]))
      // A central that encrypts with the bond anyway.
      fake.send(
        .leLongTermKeyRequest(
          LELongTermKeyRequest(connectionHandle: 0x0040, randomNumber: bond.rand, encryptedDiversifier: bond.ediv)))
      #expect(try LELongTermKeyRequestReply(packet: try #require(await fake.nextCommand())).longTermKey == bond.ltk)
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      if authenticatedBond {
        #expect(try await pairing.value == .authenticated)
      } else {
        await #expect(throws: BearerError.self) { try await pairing.value }
        #expect(connection.securityLevel == .encrypted)
      }
    }
  }

  @Test("a spoiled pairing (a harness's mistake on purpose): numbers said to differ, or a passkey shown one off")
  func spoiledPairing() async throws {
    try await withBondPath { path in
      // Numeric Comparison, the answer given ahead: yes becomes no.
      let store = try BondStore(path: path)
      // Only a store a security manager pairs with can spoil a pairing.
      #expect(!store.spoilNextPairing(true))
      let (fake, _, connection) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: store, options: iPhoneLike(confirms: true)))
      #expect(store.spoilNextPairing(true) && store.nextPairingSpoiled)
      let pairing = Task { try await connection.pair(.authenticated) }
      var peripheral = SMPPairing(
        role: .peripheral, local: peerAddress, peer: connection.local, offer: mitmOffer(.displayYesNo),
        requiresMITM: true)
      let outcome = try await runPeer(&peripheral, fake: fake, initial: [], confirms: true)
      #expect(outcome == .failed(.peerFailed(.numericComparisonFailed)))
      await #expect(throws: BearerError.self) { try await pairing.value }
      #expect(!store.nextPairingSpoiled && store.all.isEmpty)
      // The harness learns that it refused itself.
      guard case .refused(reason: 0x0C, _)? = store.spoiledPairingEnd else {
        Issue.record("\(String(describing: store.spoiledPairingEnd))")
        return
      }
    }
    try await withBondPath { path in
      // Passkey Entry with our central showing: the peer's user types what it shows.
      let store = try BondStore(path: path)
      let shown = Inbox<UInt32>()
      let refusals = Locked<[String]>([])
      store.observe { event in
        if case .pairing(_, .showPasskey(let value)) = event { shown.push(value) }
        if case .pairingRefused(_, let reason) = event { refusals.withLock { $0.append(reason) } }
      }
      let security = SMPSecurityManager(store: store, options: SMPSecurityManager.Options(ioCapability: .displayOnly))
      #expect(store.spoilNextPairing(true))
      let (fake, _, connection) = try await connectedHost(role: .central, roomy, security: security)
      let pairing = Task { try await connection.pair(.authenticated) }
      var peripheral = SMPPairing(
        role: .peripheral, local: peerAddress, peer: connection.local, offer: mitmOffer(.keyboardOnly),
        requiresMITM: true)
      let outcome = try await runPeer(&peripheral, fake: fake, initial: [], passkeys: shown)
      guard case .failed(.refused(.confirmValueFailed, _))? = outcome else {
        Issue.record("the peer did not refuse the confirm value: \(String(describing: outcome))")
        return
      }
      await #expect(throws: BearerError.self) { try await pairing.value }
      // The harness learns that the peer refused, and why; the console hears it too.
      #expect(store.spoiledPairingEnd == .peerFailed(reason: 0x04, text: "confirmValueFailed(4)"))
      #expect(refusals.withLock { $0 } == ["Pairing Failed confirmValueFailed(4)"])
    }
  }

  @Test("a new key on an encrypted link (Encryption Key Refresh Complete) gives the level of that key")
  func keyRefresh() async throws {
    try await withBondPath { path in
      let (store, bond) = try storeWithBond(at: path)
      let (fake, _, connection) = try await connectedHost(
        role: .central, roomy, security: SMPSecurityManager(store: store, options: iPhoneLike(confirms: true)))
      let first = Task { try await connection.pair(.encrypted) }
      #expect(try LEStartEncryption(packet: try #require(await fake.nextCommand())).longTermKey == bond.ltk)
      fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
      #expect(try await first.value == .encrypted)
      // Paired again, with MITM, on the encrypted link: the controller refreshes the key.
      let pairing = Task { try await connection.pair(.authenticated) }
      var peripheral = SMPPairing(
        role: .peripheral, local: peerAddress, peer: connection.local, offer: mitmOffer(.displayYesNo),
        requiresMITM: true)
      var pending: [SMPAction] = []
      while true {
        if pending.isEmpty {
          if peripheral.phase == .awaitingEncryption {
            let start = try LEStartEncryption(packet: try #require(await fake.nextCommand()))
            #expect(
              peripheral.keyForRequest(ediv: start.encryptedDiversifier, rand: start.randomNumber) == start.longTermKey)
            // The old key's level holds until the controller reports the new one in use.
            #expect(connection.securityLevel == .encrypted)
            fake.send(.encryptionKeyRefreshComplete(EncryptionKeyRefreshComplete(connectionHandle: 0x0040)))
            pending += peripheral.encryptionChanged(status: .success, enabled: true)
            continue
          }
          if peripheral.phase == .complete || peripheral.phase == .failed { break }
          let frame = try #require(await fake.nextFrame())
          pending += peripheral.receive(try SMPPDU(decoding: frame.payload))
          continue
        }
        switch pending.removeFirst() {
        case .send(let pdu): fake.send(.smp, pdu.encoded)
        case .requestConfirmation: pending += peripheral.confirm(true)
        default: break
        }
      }
      #expect(try await pairing.value == .authenticated)
      #expect(store.bond(for: peerAddress)?.authenticated == true)
    }
  }
}

@Suite("SMP security manager: nothing a peer sends traps")
struct SecurityManagerRobustnessTests {
  @Test("random SMP frames in both roles are answered or ignored; the host and ATT go on")
  func randomFrames() async throws {
    var random = SplitMix64(seed: 0x5EC0_0002)
    for role in [LinkRole.central, .peripheral] {
      let (fake, host, connection) = try await connectedHost(
        role: role, roomy, security: SMPSecurityManager(store: nil))
      for _ in 0..<300 {
        let code = UInt8.random(in: 0...16, using: &random)
        fake.send(.smp, [code] + random.bytes(Int.random(in: 0...70, using: &random)))
      }
      fake.send(.att, [0x0A, 0x01, 0x00])
      #expect(try await connection.receive() == [0x0A, 0x01, 0x00])
      #expect(host.closedReason == nil && connection.isConnected)
    }
  }
}
