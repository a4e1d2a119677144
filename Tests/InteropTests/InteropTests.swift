import ATT
import Foundation
import GATT
import HCI
import TestSupport
import Testing
import Wire

let ancs = BluetoothUUID("7905F431-B5CE-4E99-A40F-4B1E122D00D0")!
let testService = BluetoothUUID("A0B40001-926D-4D61-98DF-8C5C62EE53B3")!

/// The HCI host against Bumble (PyPI bumble==0.0.236): a virtual controller exposed over
/// hci-tcp, and a Bumble device on the same virtual link as the peer.
@Suite(
  "Interop with Bumble over hci-tcp", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .timeLimit(scaledMinutes(1)))
struct BumbleInteropTests {
  @Test("our host advertises the ANCS solicitation; Bumble finds it, connects, exchanges MTU, reads our GATT server")
  func bumbleCentral() async throws {
    try await withBumblePeer(role: "central") { peer in
      let port = try #require(await peer.readyPort())
      let capture = "/tmp/ancs-interop-\(getpid())-peripheral.btsnoop"
      defer { unlink(capture) }
      let (host, setup) = try await HCIHost.open(
        transport: .hciTCP(host: "127.0.0.1", port: port), on: testLoop, capturePath: capture)
      defer { host.close() }
      #expect(setup.randomAddress.isRandomStatic)
      let server = try GATTServer(
        services: [
          ServiceDefinition(
            uuid: ancs, characteristics: [.constant(BluetoothUUID("2A00")!, Array("ancs-sim watch".utf8))])
        ],
        serviceChanged: false)
      let connection = try await host.accept(
        Advertisement(name: "ancs-sim", solicitedServices: [ancs]), timeout: .seconds(20))
      #expect(connection.role == .peripheral)
      let att = ATTConnection(bearer: connection)
      await server.attach(att)
      let serving = Task { await att.run() }

      let found = await peer.line(startingWith: "found ")
      #expect(found?.contains(setup.randomAddress.description) == true)
      #expect(found?.hasSuffix(" ancs-sim") == true)
      #expect(await peer.line(startingWith: "mtu ") == "mtu 185")
      #expect(await peer.line(startingWith: "characteristics ") == "characteristics 1")
      #expect(await peer.line(startingWith: "read ") == "read ancs-sim watch")
      #expect(try await connection.waitForDisconnection() == .remoteUserTerminatedConnection)
      await serving.value
      #expect(att.mtu == 185)
      #expect(await peer.line(startingWith: "done") != nil)
      // The capture holds the whole exchange, written as it happened (before the host closes):
      // the file header and far more than set-up.
      let size = (try? FileManager.default.attributesOfItem(atPath: capture)[.size] as? Int) ?? 0
      #expect(size > 1000)
      host.close()
    }
  }

  @Test("our host scans for a Bumble device soliciting ANCS, connects, and our GATT client reads its service")
  func bumblePeripheral() async throws {
    try await withBumblePeer(role: "peripheral") { peer in
      let port = try #require(await peer.readyPort())
      #expect(await peer.line(startingWith: "advertising") != nil)
      let (host, _) = try await HCIHost.open(transport: .hciTCP(host: "127.0.0.1", port: port), on: testLoop)
      defer { host.close() }
      let (connection, report) = try await host.connect(scanningFor: .solicits([ancs]), timeout: .seconds(20))
      #expect(connection.role == .central)
      #expect((try? AdvertisingData(decoding: report.data))?.localName?.name == "Bumble watch")
      let att = ATTConnection(bearer: connection)
      let client = await GATTClient(connection: att)
      let running = Task { await att.run() }
      #expect(try await att.exchangeMTU() > 23)
      let services = try await client.discoverPrimaryServices(testService)
      let service = try #require(services.first)
      let characteristics = try await client.discoverCharacteristics(of: service)
      let characteristic = try #require(characteristics.first)
      #expect(try await client.read(characteristic.valueHandle) == Array("hello from bumble".utf8))
      #expect(await peer.line(startingWith: "connected ") != nil)
      // A controller reports 0x16 (terminated by local host) to the host that disconnected;
      // Bumble's virtual one echoes the reason the host sent.
      let reason = try await connection.disconnect()
      #expect([.connectionTerminatedByLocalHost, .remoteUserTerminatedConnection].contains(reason))
      await running.value
      #expect(await peer.line(startingWith: "disconnected ") != nil)
      #expect(await peer.line(startingWith: "done") != nil)
    }
  }
}
