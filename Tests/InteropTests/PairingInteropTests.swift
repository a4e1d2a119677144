import ATT
import Foundation
import GATT
import HCI
import Runtime
import TestSupport
import Testing
import Wire

/// Just Works pairing (bonding, no MITM) between our SMP engine and Bumble's, both roles, LE
/// legacy and Secure Connections, and a second connection that encrypts with the bond.
@Suite(
  "Pairing with Bumble over hci-tcp", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .timeLimit(scaledMinutes(1)))
struct BumblePairingTests {
  /// Issue #16 (1, 6): MITM pairing against Bumble's SMP, our central KeyboardDisplay as an
  /// iPhone is: Bumble shows a passkey (DisplayOnly) that our side types, in SC and legacy
  /// pairing; Bumble compares a number (DisplayYesNo, SC) that our side confirms; a wrong
  /// passkey ends in Bumble's Confirm Value Failed.
  @Test(
    "our central pairs with MITM: Passkey Entry (SC, legacy), Numeric Comparison, and a wrong passkey",
    arguments: [
      ("passkey", true, 123_456), ("passkey", false, 123_456), ("numeric", true, 0), ("passkey", true, 654_321),
    ])
  func centralPairsWithMITM(method: String, secureConnections: Bool, passkey: UInt32) async throws {
    let wrong = method == "passkey" && passkey != 123_456
    // What our side showed its user.
    let said = Locked<[String]>([])
    let logger = Logger(level: .info) { _, line in said.withLock { $0.append(line) } }
    let iPhone: (inout SMPSecurityManager.Options) -> Void = { options in
      options.ioCapability = .keyboardDisplay
      options.mitm = true
      options.passkey = passkey
      options.confirmsNumbers = true
    }
    try await withPairing(
      "pair-peripheral", method, secureConnections: secureConnections, bonds: "mitm-\(method)-\(passkey)",
      options: iPhone, logger: logger
    ) { peer, rig in
      let (connection, _) = try await rig.host.connect(scanningFor: .solicits([ancs]), timeout: .seconds(20))
      let (client, handle, running) = try await testCharacteristic(on: connection)
      if wrong {
        let error = await #expect(throws: BearerError.self) { _ = try await connection.pair(.encrypted) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("the peer sent Pairing Failed confirmValueFailed"))
        #expect(rig.store.bond(for: connection.peer) == nil)
      } else {
        // The key was made with MITM protection: the link and the bond are authenticated.
        #expect(try await connection.pair(.encrypted) == .authenticated)
        #expect(try await client.read(handle) == Array("hello from bumble".utf8))
        #expect(rig.store.bond(for: connection.peer)?.authenticated == true)
      }
      let shown = await peer.line(startingWith: method == "numeric" ? "compare" : "passkey")
      #expect(shown?.split(separator: " ").last?.count == 6, "\(peer.transcript)")
      if method == "passkey" { #expect(shown == "passkey 123456") }
      if method == "numeric", let number = shown?.split(separator: " ").last {
        // Both sides showed the same number: our g2 is Bumble's.
        #expect(
          said.withLock { $0 }.contains { $0.hasSuffix("numeric comparison: \(number)") }, "\(said.withLock { $0 })")
      }
      if !wrong {
        #expect(await peer.line(startingWith: "paired") == (secureConnections ? "paired ltk" : "paired legacy"))
      }
      _ = try? await connection.disconnect()
      await running.value
    }
  }

  @Test(
    "our central pairs with a Bumble peripheral, reads a value that needs encryption, and reconnects with the bond",
    arguments: [true, false])
  func centralPairs(secureConnections: Bool) async throws {
    try await withPairing("pair-peripheral", secureConnections: secureConnections, bonds: "central") {
      peer, rig in
      let (host, store, path) = (rig.host, rig.store, rig.bondFile)

      // First connection: the read is refused until Just Works pairing encrypts the link.
      let (connection, _) = try await host.connect(scanningFor: .solicits([ancs]), timeout: .seconds(20))
      let (client, handle, running) = try await testCharacteristic(on: connection)
      await #expect(throws: ATTError.self) { try await client.read(handle) }
      #expect(try await connection.pair(.encrypted) == .encrypted)
      #expect(try await client.read(handle) == Array("hello from bumble".utf8))
      let paired = await peer.line(startingWith: "paired")
      #expect(paired == (secureConnections ? "paired ltk" : "paired legacy"))
      let bond = try #require(store.bond(for: connection.peer))
      #expect(bond.secureConnections == secureConnections)
      #expect(try BondStore(path: path).all == [bond])
      try await connection.disconnect()
      await running.value
      #expect(await peer.line(startingWith: "disconnected") != nil)

      host.close()

      // Second connection, from a new host with the same address and the bond file read again:
      // LE Enable Encryption with the stored key, no pairing.
      #expect(await peer.line(startingWith: "advertising 1") != nil)
      let (secondHost, _, _) = try await pairingHost(
        port: rig.port, bondFile: path, secureConnections: secureConnections, randomAddress: rig.setup.randomAddress)
      defer { secondHost.close() }
      let (again, _) = try await secondHost.connect(scanningFor: .solicits([ancs]), timeout: .seconds(20))
      let (secondClient, secondHandle, secondRunning) = try await testCharacteristic(on: again)
      #expect(try await again.pair(.encrypted) == .encrypted)
      #expect(try await secondClient.read(secondHandle) == Array("hello from bumble".utf8))
      #expect(await peer.line(startingWith: "encryption") == "encryption 1")
      try await again.disconnect()
      await secondRunning.value
      #expect(await peer.line(startingWith: "done") != nil)
      #expect(!peer.transcript.dropFirst().contains { $0.hasPrefix("paired") && $0 != paired })
    }
  }

  @Test(
    "a Bumble central pairs with our peripheral on its Security Request, reads a value that needs encryption, and reconnects with the bond",
    arguments: [true, false])
  func peripheralPairs(secureConnections: Bool) async throws {
    try await withPairing("pair-central", secureConnections: secureConnections, bonds: "peripheral") { peer, rig in
      let (host, store) = (rig.host, rig.store)
      let keys = try await servePeripheral(host, to: peer, connections: 2) { attempt in
        if attempt == 0 {
          #expect(await peer.line(startingWith: "paired") == (secureConnections ? "paired ltk" : "paired legacy"))
          #expect(store.all.count == 1)
        }
      }
      #expect(keys.count == 2 && keys[0] == keys[1])
      #expect(await peer.line(startingWith: "done") != nil)
      // One pairing only: the second connection encrypted with the bond.
      #expect(peer.transcript.filter { $0.hasPrefix("paired") }.count == 1)
    }
  }

  // Bond trouble (issue #16, 5 and 6): each side forgets in turn.

  @Test(
    "a Bumble peripheral that lost the bond: our central, as an iPhone, keeps its bond and drops the link, then pairs afresh once it forgets",
    arguments: [true, false])
  func accessoryLostTheBond(secureConnections: Bool) async throws {
    try await withPairing(
      "pair-peripheral", "forget", secureConnections: secureConnections, bonds: "lost", disconnectOnKeyMissing: true
    ) { peer, rig in
      let (host, store) = (rig.host, rig.store)
      let events = recordEvents(of: store)

      let (first, _) = try await host.connect(scanningFor: .solicits([ancs]), timeout: .seconds(20))
      #expect(try await first.pair(.encrypted) == .encrypted)
      let bond = try #require(store.bond(for: first.peer))
      // Bumble's pairing ends when it has our keys, which may be after ours: wait for it.
      #expect(await peer.line(startingWith: "paired") != nil)
      try await first.disconnect()
      #expect(await peer.line(startingWith: "forgot") != nil)

      // Bumble has no key: Encryption Change 0x06; the phone keeps its bond and disconnects.
      let (second, _) = try await host.connect(scanningFor: .solicits([ancs]), timeout: .seconds(20))
      await #expect(throws: BearerError.self) { try await second.pair(.encrypted) }
      #expect(try await second.waitForDisconnection() != .success)
      #expect(store.bond(for: second.peer)?.ltk == bond.ltk, "an iPhone keeps its bond")
      let name = try #require(store.bondedPeers.first)
      #expect(events.withLock { $0.contains(.peerLostKey(peer: name)) })

      // The user forgets the accessory: the next connection pairs afresh.
      #expect(try store.forget(name) == [name])
      let (third, _) = try await host.connect(scanningFor: .solicits([ancs]), timeout: .seconds(20))
      #expect(try await third.pair(.encrypted) == .encrypted)
      #expect(store.bond(for: third.peer).map { $0.ltk != bond.ltk } == true)
      #expect(await peer.line(startingWith: "paired") != nil, "Bumble paired afresh")
      try await third.disconnect()
      #expect(await peer.line(startingWith: "done") != nil)
      #expect(peer.transcript.filter { $0.hasPrefix("paired") }.count == 2)
    }
  }

  @Test(
    "a Bumble central that forgot the bond pairs afresh; our peripheral, still bonded, pairs again",
    arguments: [true, false])
  func phoneForgotTheBond(secureConnections: Bool) async throws {
    try await withPairing("pair-central", "forget", secureConnections: secureConnections, bonds: "forgot") {
      peer, rig in
      let (host, store) = (rig.host, rig.store)
      let events = recordEvents(of: store)
      let keys = try await servePeripheral(host, to: peer, connections: 2)
      #expect(await peer.line(startingWith: "done") != nil)
      #expect(peer.transcript.filter { $0.hasPrefix("paired") }.count == 2, "Bumble paired twice")
      #expect(keys.count == 2 && keys[0] != keys[1] && store.all.count == 1, "the new bond replaced the old")
      #expect(events.withLock { $0.filter { if case .bonded(_, _, true) = $0 { true } else { false } }.count } == 1)
    }
  }
}

/// Our peripheral on `host`: advertises, and for each of `connections` connections of the
/// Bumble central serves the Device Name (readable only encrypted), pairs or encrypts, waits
/// for Bumble's read and for the disconnection; `each` runs after the link is encrypted.
/// Returns the LTK of the bond after each connection.
private func servePeripheral(
  _ host: HCIHost, to peer: BumblePeer, connections: Int, each: (Int) async throws -> Void = { _ in }
) async throws -> [UInt128] {
  let server = try GATTServer(
    services: [
      ServiceDefinition(
        uuid: ancs,
        characteristics: [.constant(BluetoothUUID("2A00")!, Array("ancs-sim watch".utf8), security: .encrypted)])
    ],
    serviceChanged: false)
  var keys: [UInt128] = []
  for attempt in 0..<connections {
    let connection = try await host.accept(
      Advertisement(name: "ancs-sim", solicitedServices: [ancs]), timeout: .seconds(20))
    let att = ATTConnection(bearer: connection)
    await server.attach(att)
    let serving = Task { await att.run() }
    #expect(try await connection.pair(.encrypted) == .encrypted)
    try await each(attempt)
    #expect(await peer.line(startingWith: "read ") == "read ancs-sim watch")
    if let bond = (host.security as? SMPSecurityManager)?.store?.bond(for: connection.peer) { keys.append(bond.ltk) }
    _ = try await connection.waitForDisconnection()
    await serving.value
  }
  return keys
}

/// Every bond event `store` reports from now on.
private func recordEvents(of store: BondStore) -> Locked<[BondEvent]> {
  let events = Locked<[BondEvent]>([])
  store.observe { event in events.withLock { $0.append(event) } }
  return events
}

/// Our host on a Bumble peer's controller, and where it keeps its bonds.
private struct PairingRig {
  var host: HCIHost
  var setup: ControllerSetup
  var store: BondStore
  /// The controller's hci-tcp port, for a second host.
  var port: UInt16
  var bondFile: String
}

/// Runs `body` with a Bumble peer in `role` (and `extra`, as bumble_peer.py takes them), SC
/// or legacy, and our host on its controller keeping bonds in a file of the test's own
/// (`bonds` names it), removed afterwards.
private func withPairing(
  _ role: String, _ extra: String = "", secureConnections: Bool, bonds: String, disconnectOnKeyMissing: Bool = false,
  options configure: (inout SMPSecurityManager.Options) -> Void = { _ in }, logger: Logger = .none,
  _ body: (BumblePeer, PairingRig) async throws -> Void
) async throws {
  let mode = secureConnections ? "sc" : "legacy"
  try await withBumblePeer(role: "\(role) \(mode)" + (extra.isEmpty ? "" : " \(extra)")) { peer in
    let port = try #require(await peer.readyPort())
    let path = "/tmp/ancs-interop-\(getpid())-bonds-\(bonds)-\(mode).json"
    defer { unlink(path) }
    let (host, setup, store) = try await pairingHost(
      port: port, bondFile: path, secureConnections: secureConnections, disconnectOnKeyMissing: disconnectOnKeyMissing,
      options: configure, logger: logger)
    defer { host.close() }
    try await body(peer, PairingRig(host: host, setup: setup, store: store, port: port, bondFile: path))
  }
}

private func pairingHost(
  port: UInt16, bondFile: String, secureConnections: Bool, randomAddress: BDAddress? = nil,
  disconnectOnKeyMissing: Bool = false, options configure: (inout SMPSecurityManager.Options) -> Void = { _ in },
  logger: Logger = .none
) async throws -> (HCIHost, ControllerSetup, BondStore) {
  let store = try BondStore(path: bondFile)
  var options = SMPSecurityManager.Options(
    secureConnections: secureConnections, disconnectOnKeyMissing: disconnectOnKeyMissing)
  configure(&options)
  let security = SMPSecurityManager(store: store, options: options, logger: logger)
  let (host, setup) = try await HCIHost.open(
    transport: .hciTCP(host: "127.0.0.1", port: port), on: testLoop, security: security,
    randomAddress: randomAddress)
  return (host, setup, store)
}

/// The client of `connection` (its ATT connection running) and the value handle of Bumble's
/// test characteristic.
private func testCharacteristic(on connection: HCIConnection) async throws -> (GATTClient, UInt16, Task<Void, Never>) {
  let att = ATTConnection(bearer: connection)
  let client = await GATTClient(connection: att)
  let running = Task { await att.run() }
  let services = try await client.discoverPrimaryServices(testService)
  let service = try #require(services.first)
  let characteristic = try #require(try await client.discoverCharacteristics(of: service).first)
  return (client, characteristic.valueHandle, running)
}
