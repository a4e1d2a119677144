import ATT
import GATT
import Links
import Runtime
import Wire

/// UUIDs of the fixture's 128-bit service (ANCS's, so hex in scripts is recognisable).
enum FixtureUUID {
  static let service = BluetoothUUID("7905F431-B5CE-4E99-A40F-4B1E122D00D0")!
  static let source = BluetoothUUID("9FBF120D-6301-42D9-8C58-25E699A21DBD")!
  static let control = BluetoothUUID("69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9")!
  static let data = BluetoothUUID("22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB")!
}

/// What the fixture's writable characteristics received.
final class Recorder: Sendable {
  let writes = Locked([[UInt8]]())
  let subscriptions = Locked([UInt16]())
}

/// A server with a known layout:
///   1-4   Generic Attribute: Service Changed (indicate) value 3, CCCD 4
///   5-8   Battery 0x180F: Battery Level 0x2A19 (read, notify) value 7 = [42], CCCD 8
///   9-17  128-bit service: source (notify, encrypted) value 11, CCCD 12;
///         control (write, encrypted) value 14; data (notify, encrypted) value 16, CCCD 17
///   18-22 Current Time 0x1805: 0x2A2B (read) value 20 = 60 bytes 0,1,2...;
///         0x2A0F (read, authenticated) value 22 = [7]
func makeFixtureServer(_ recorder: Recorder = Recorder()) throws -> GATTServer {
  let long = (0..<60).map { UInt8($0) }
  return try GATTServer(services: [
    ServiceDefinition(
      uuid: 0x180F,
      characteristics: [
        CharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], read: { _ in [42] })
      ]),
    ServiceDefinition(
      uuid: FixtureUUID.service,
      characteristics: [
        CharacteristicDefinition(
          uuid: FixtureUUID.source, properties: .notify, security: .encrypted,
          subscribed: { session, value in recorder.subscriptions.withLock { $0.append(value.rawValue) } }),
        CharacteristicDefinition(
          uuid: FixtureUUID.control, properties: .write, security: .encrypted,
          write: { _, value in
            recorder.writes.withLock { $0.append(value) }
            return value.first == 0xEE ? .refused(ATTErrorCode(rawValue: 0xA1)) : .accepted
          }),
        CharacteristicDefinition(uuid: FixtureUUID.data, properties: .notify, security: .encrypted),
      ]),
    ServiceDefinition(
      uuid: 0x1805,
      characteristics: [
        .constant(0x2A2B, long),
        .constant(0x2A0F, [7], security: .authenticated),
      ]),
  ])
}

/// A running ATT connection serving `server` on one end of a memory link; the other end is
/// returned for the test to drive.
struct ServedLink {
  let server: GATTServer
  let connection: ATTConnection
  let session: GATTSession
  let peer: any ATTBearer
  let task: Task<Void, Never>

  init(
    server: GATTServer, level: SecurityLevel = .unencrypted, clock: any EngineClock = SystemClock()
  ) async {
    let (central, peripheral) = MemoryLink.pair(initialLevel: level)
    self.server = server
    connection = ATTConnection(bearer: peripheral, clock: clock)
    session = await server.attach(connection)
    peer = central
    let connection = self.connection
    task = Task { await connection.run() }
  }

  func stop() async {
    peer.close()
    await task.value
  }
}

/// A GATT client connected to `server` over a memory link, both engines running.
struct ClientServerPair {
  let served: ServedLink
  let client: GATTClient
  let clientTask: Task<Void, Never>

  init(server: GATTServer, level: SecurityLevel = .unencrypted, clientMTU: UInt16 = 517) async {
    let (central, peripheral) = MemoryLink.pair(initialLevel: level)
    await self.init(server: server, central: central, peripheral: peripheral, clientMTU: clientMTU)
  }

  /// Client on `central`, server on `peripheral`, over any link.
  init(server: GATTServer, central: any ATTBearer, peripheral: any ATTBearer, clientMTU: UInt16 = 517) async {
    let serverConnection = ATTConnection(bearer: peripheral)
    let session = await server.attach(serverConnection)
    let serverTask = Task { await serverConnection.run() }
    served = ServedLink(server: server, connection: serverConnection, session: session, peer: central, task: serverTask)
    let clientConnection = ATTConnection(bearer: central, options: .init(localMTU: clientMTU))
    client = await GATTClient(connection: clientConnection)
    clientTask = Task { await clientConnection.run() }
  }

  func stop() async {
    client.connection.close()
    await clientTask.value
    await served.task.value
  }
}

extension ServedLink {
  init(
    server: GATTServer, connection: ATTConnection, session: GATTSession, peer: any ATTBearer, task: Task<Void, Never>
  ) {
    self.server = server
    self.connection = connection
    self.session = session
    self.peer = peer
    self.task = task
  }
}
