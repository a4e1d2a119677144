import ATT
import GATT
import Links
import Sockets
import Synchronization
import TestSupport
import Testing
import Wire

@Suite(.timeLimit(scaledMinutes(2))) struct ClientServerTests {
  @Test func discoveryFindsTheFixtureLayout() async throws {
    let pair = await ClientServerPair(server: try makeFixtureServer())
    let client = pair.client
    let all = try await client.discoverAllPrimaryServices()
    #expect(all.map(\.uuid) == [0x1801, 0x180F, FixtureUUID.service, 0x1805])
    #expect(all.map(\.range) == [HandleRange(1, 4), HandleRange(5, 8), HandleRange(9, 17), HandleRange(18, 22)])

    let found = try await client.discoverPrimaryServices(FixtureUUID.service)
    #expect(found == [DiscoveredService(uuid: FixtureUUID.service, range: HandleRange(9, 17))])
    let characteristics = try await client.discoverCharacteristics(of: found[0])
    #expect(characteristics.map(\.uuid) == [FixtureUUID.source, FixtureUUID.control, FixtureUUID.data])
    #expect(characteristics.map(\.valueHandle) == [11, 14, 16])
    #expect(characteristics.map(\.endHandle) == [12, 14, 17])
    #expect(characteristics[1].properties == .write)
    let descriptors = try await client.discoverDescriptors(of: characteristics[2])
    #expect(descriptors == [DiscoveredDescriptor(handle: 17, uuid: .clientCharacteristicConfiguration)])
    #expect(try await client.discoverPrimaryServices(0x1234) == [])
    await pair.stop()
  }

  /// A server its owner dropped while a connection still runs keeps answering on it (the
  /// conformance harness once crashed on a late request after a case had ended).
  @Test func aDroppedServerAnswersUntilItsConnectionEnds() async throws {
    let (central, peripheral) = MemoryLink.pair()
    let connection = ATTConnection(bearer: peripheral)
    weak var released: GATTServer?
    do {
      let server = try makeFixtureServer()
      released = server
      await server.attach(connection)
    }
    let serving = Task { await connection.run() }
    let clientConnection = ATTConnection(bearer: central)
    let client = await GATTClient(connection: clientConnection)
    let clientTask = Task { await clientConnection.run() }
    #expect(try await client.read(7) == [42])
    #expect(released != nil, "the session keeps its server while attached")
    clientConnection.close()
    await clientTask.value
    await serving.value
    released.map { $0.detach(connection) }
    #expect(released == nil, "detached, the server is freed")
  }

  @Test(arguments: [23, 185, 517] as [UInt16])
  func readsLongValuesAtEveryMTU(mtu: UInt16) async throws {
    // The client's offer decides: the server offers 517.
    let pair = await ClientServerPair(server: try makeFixtureServer(), clientMTU: mtu)
    if mtu > 23 { #expect(try await pair.client.connection.exchangeMTU() == Int(mtu)) }
    #expect(try await pair.client.read(20) == (0..<60).map { UInt8($0) })
    #expect(try await pair.client.read(7) == [42])
    await pair.stop()
  }

  @Test func securityIsEnforcedUntilPaired() async throws {
    let recorder = Recorder()
    let pair = await ClientServerPair(server: try makeFixtureServer(recorder))
    let client = pair.client
    await #expect(
      throws: ATTError.errorResponse(
        .init(requestOpcode: .writeRequest, handle: 14, errorCode: .insufficientEncryption))
    ) {
      try await client.write(14, [1])
    }
    #expect(try await client.connection.bearer.pair(.encrypted) == .encrypted)
    #expect(pair.served.connection.securityLevel == .encrypted, "both ends see the new level")
    try await client.write(14, [1])
    await #expect(
      throws: ATTError.errorResponse(
        .init(requestOpcode: .readRequest, handle: 22, errorCode: .insufficientAuthentication))
    ) {
      try await client.read(22)
    }
    _ = try await client.connection.bearer.pair(.authenticated)
    #expect(try await client.read(22) == [7])
    #expect(recorder.writes.withLock { $0 } == [[1]])
    await pair.stop()
  }

  @Test func subscriptionsDeliverNotificationsInOrder() async throws {
    let pair = await ClientServerPair(server: try makeFixtureServer(), level: .encrypted)
    let client = pair.client
    let service = try #require(try await client.discoverPrimaryServices(FixtureUUID.service).first)
    let characteristics = try await client.discoverCharacteristics(of: service)
    let values = AsyncStream<[UInt8]>.makeStream()
    let cccd = try await client.subscribe(characteristics[2]) { values.continuation.yield($1.value) }
    #expect(cccd == 17)
    #expect(await pair.served.session.cccd(for: 16) == .notifications)
    for index in 0..<100 { try await pair.served.session.notify(16, [UInt8(index)]) }
    var iterator = values.stream.makeAsyncIterator()
    for index in 0..<100 { #expect(await iterator.next() == [UInt8(index)]) }
    try await client.unsubscribe(characteristics[2], cccd: cccd)
    #expect(try await pair.served.session.notify(16, [1]) == false, "nothing is sent after unsubscribing")
    await pair.stop()
  }

  @Test func serviceChangedIsIndicatedToSubscribers() async throws {
    let server = try makeFixtureServer()
    let pair = await ClientServerPair(server: server)
    let client = pair.client
    let gatt = try #require(try await client.discoverPrimaryServices(.genericAttributeService).first)
    let changed = try #require(try await client.discoverCharacteristics(of: gatt).first)
    #expect(changed.uuid == .serviceChanged)
    let ranges = AsyncStream<[UInt8]>.makeStream()
    try await client.subscribe(changed, indications: true) { ranges.continuation.yield($1.value) }
    await server.unpublish(FixtureUUID.service)
    var iterator = ranges.stream.makeAsyncIterator()
    #expect(await iterator.next() == [0x09, 0x00, 0x11, 0x00], "the removed range 9-17")
    #expect(try await client.discoverPrimaryServices(FixtureUUID.service) == [])
    try await server.publish(
      ServiceDefinition(
        uuid: FixtureUUID.service,
        characteristics: [CharacteristicDefinition(uuid: FixtureUUID.source, properties: .notify)]), startingAt: 0x30)
    #expect(await iterator.next() == [0x30, 0x00, 0x33, 0x00], "the new range: declaration, value, CCCD")
    #expect(try await client.discoverPrimaryServices(FixtureUUID.service).map(\.range) == [HandleRange(0x30, 0x33)])
    await pair.stop()
  }

  /// A characteristic's read handler may ask the server about its database: requests are
  /// served from the session's copy of it, under no lock of the server's (a handler that
  /// asked while the server's lock was held would deadlock).
  @Test func aReadHandlerMayAskTheServer() async throws {
    let server = try GATTServer(services: [
      ServiceDefinition(
        uuid: 0x180F,
        characteristics: [
          CharacteristicDefinition(
            uuid: 0x2A19, properties: .read,
            read: { session in [UInt8(session.server.handles(of: 0x180F)?.first?.value ?? 0)] })
        ])
    ])
    let pair = await ClientServerPair(server: server)
    let value = try #require(server.handles(of: 0x180F)?.first?.value)
    #expect(try await pair.client.read(value) == [UInt8(value)])
    await pair.stop()
  }

  /// A removed service's subscriptions go when the session next looks at the database, in
  /// order with its requests: a subscription made afterwards to a service published in the
  /// same handles stays, and the server keeps a removal only until every session took it in.
  @Test func aRemovedServicesSubscriptionsGoAndLaterOnesStay() async throws {
    let server = try makeFixtureServer()
    let pair = await ClientServerPair(server: server, level: .encrypted)
    // A session whose client never asks anything: it takes nothing in until it is asked.
    let idle = await server.attach(ATTConnection(bearer: MemoryLink.pair().1))
    try await pair.client.write(12, [1, 0])
    #expect(await pair.served.session.cccd(for: 11) == .notifications)
    await server.unpublish(FixtureUUID.service)
    #expect(await pair.served.session.cccd(for: 11) == [], "the removed service's subscription went")
    try await server.publish(
      ServiceDefinition(
        uuid: FixtureUUID.service,
        characteristics: [CharacteristicDefinition(uuid: FixtureUUID.source, properties: .notify)]), startingAt: 9)
    try await pair.client.write(12, [1, 0])
    #expect(await pair.served.session.cccd(for: 11) == .notifications, "the new service's, in the same handles")
    await server.unpublish(0x1805)
    #expect(server.keptRemovals == 2, "both kept for the idle session")
    _ = await idle.cccd(for: 1)
    #expect(await pair.served.session.cccd(for: 11) == .notifications)
    await server.unpublish(0x180F)
    #expect(server.keptRemovals == 1, "the two every session took in are let go")
    // Sessions that go let go of what was kept for them.
    server.detach(idle.connection)
    server.detach(pair.served.connection)
    #expect(server.keptRemovals == 0)
    await pair.stop()
  }

  /// A service shown only from the encrypted level (an iPhone's ANCS): left out of every
  /// discovery below it, its handles answered Insufficient Encryption; once the link is
  /// encrypted the next request shows it, and the client is told with Service Changed.
  @Test func aServiceShownOnlyOnceEncrypted() async throws {
    let server = try GATTServer(services: [
      ServiceDefinition(uuid: 0x180F, characteristics: [.constant(0x2A19, [42])]),
      ServiceDefinition(
        uuid: FixtureUUID.service,
        characteristics: [CharacteristicDefinition(uuid: FixtureUUID.source, properties: .notify)],
        shownFrom: .encrypted),
    ])
    let pair = await ClientServerPair(server: server)
    let client = pair.client
    let gatt = try #require(try await client.discoverPrimaryServices(.genericAttributeService).first)
    let changed = try #require(try await client.discoverCharacteristics(of: gatt).first)
    let ranges = AsyncStream<[UInt8]>.makeStream()
    try await client.subscribe(changed, indications: true) { ranges.continuation.yield($1.value) }
    // Handles 1-4 GATT, 5-7 Battery, 8-11 the hidden service.
    let everything = HandleRange(1, 0xFFFF)
    let groups = try await client.connection.request(
      .readByGroupTypeRequest(ReadByGroupTypeRequest(range: everything, type: .primaryService)))
    guard case .readByGroupTypeResponse(let listed) = groups else { throw CancellationError() }
    #expect(listed.entries.map(\.handle) == [1, 5])
    #expect(try await client.discoverPrimaryServices(FixtureUUID.service) == [])
    await #expect(
      throws: ATTError.errorResponse(
        .init(requestOpcode: .findInformationRequest, handle: 8, errorCode: .attributeNotFound))
    ) {
      _ = try await client.connection.request(
        .findInformationRequest(FindInformationRequest(range: HandleRange(8, 20))))
    }
    await #expect(
      throws: ATTError.errorResponse(
        .init(requestOpcode: .writeRequest, handle: 11, errorCode: .insufficientEncryption))
    ) { try await client.write(11, [1, 0]) }
    #expect(try await client.connection.bearer.pair(.encrypted) == .encrypted)
    let shown = try await client.discoverPrimaryServices(FixtureUUID.service)
    #expect(shown.map(\.range) == [HandleRange(8, 11)])
    var iterator = ranges.stream.makeAsyncIterator()
    #expect(await iterator.next() == [0x08, 0x00, 0x0B, 0x00], "Service Changed over the service's range")
    try await client.write(11, [1, 0])
    #expect(await pair.served.session.cccd(for: 10) == .notifications)
    await pair.stop()
  }

  /// The first request on the encrypted link is the one that subscribes to Service Changed
  /// (a client that pairs before it subscribes): the service that level shows is still told.
  @Test func aServiceShownOnceEncryptedIsToldToAClientThatSubscribesAfterPairing() async throws {
    let server = try GATTServer(services: [
      ServiceDefinition(
        uuid: FixtureUUID.service,
        characteristics: [CharacteristicDefinition(uuid: FixtureUUID.source, properties: .notify)],
        shownFrom: .encrypted)
    ])
    let pair = await ClientServerPair(server: server)
    let client = pair.client
    // Handles 1-4 GATT (Service Changed's value 3, its CCCD 4), 5-8 the hidden service.
    #expect(try await client.connection.bearer.pair(.encrypted) == .encrypted)
    let ranges = AsyncStream<[UInt8]>.makeStream()
    await client.onValue(3) { ranges.continuation.yield($1.value) }
    try await client.configure(cccd: 4, .indications)
    var iterator = ranges.stream.makeAsyncIterator()
    #expect(await iterator.next() == [0x05, 0x00, 0x08, 0x00], "Service Changed over the service's range")
    await pair.stop()
  }

  @Test func mtuExchangeWidensReadsAndNotifications() async throws {
    let pair = await ClientServerPair(server: try makeFixtureServer())
    #expect(try await pair.client.connection.exchangeMTU() == 517)
    #expect(pair.served.connection.mtu == 517)
    try await pair.client.configure(cccd: 8, .notifications)
    let values = AsyncStream<[UInt8]>.makeStream()
    await pair.client.onValue(7) { values.continuation.yield($1.value) }
    try await pair.served.session.notify(7, Array(repeating: 9, count: 514))
    var iterator = values.stream.makeAsyncIterator()
    #expect(await iterator.next()?.count == 514)
    await pair.stop()
  }
}

/// The link kinds a GATT client and server are tested over.
enum LinkKind: String, CaseIterable, Sendable {
  case memory, unixSocketpair, unixPath, tcp

  /// A connected pair: (client side, server side), and a clean-up.
  func open() async throws -> (any ATTBearer, any ATTBearer, @Sendable () -> Void) {
    switch self {
    case .memory:
      let (a, b) = MemoryLink.pair()
      return (a, b, {})
    case .unixSocketpair:
      let (a, b) = try UnixSeqpacketLink.pair(on: testLoop)
      return (a, b, {})
    case .unixPath:
      let path = "/tmp/ancs-gatt-test-\(UInt32.random(in: 0...UInt32.max)).sock"
      let listener = try UnixSeqpacketListener(path: path, on: testLoop)
      async let accepted = listener.accept()
      let client = try await UnixSeqpacketLink.connect(path: path, on: testLoop)
      let server = try await accepted
      return (client, server, { listener.close() })
    case .tcp:
      let listener = try TCPListener(port: 0, on: testLoop)
      async let accepted = listener.accept()
      let client = try await TCPLink.connect(port: listener.port, on: testLoop)
      let server = try await accepted
      return (client, server, { listener.close() })
    }
  }
}

@Suite(.timeLimit(scaledMinutes(2))) struct ClientServerOverLinksTests {
  /// Discovery, pairing, a long read, a write and 200 notifications in order over each link.
  @Test(arguments: LinkKind.allCases)
  func fullExchange(_ kind: LinkKind) async throws {
    let (clientBearer, serverBearer, cleanUp) = try await kind.open()
    defer { cleanUp() }
    let recorder = Recorder()
    let pair = await ClientServerPair(
      server: try makeFixtureServer(recorder), central: clientBearer, peripheral: serverBearer, clientMTU: 185)
    let client = pair.client
    #expect(try await client.connection.exchangeMTU() == 185)
    #expect(try await client.discoverAllPrimaryServices().count == 4)
    await #expect(throws: ATTError.self) { try await client.write(14, [1]) }
    #expect(try await clientBearer.pair(.encrypted) == .encrypted)
    try await client.write(14, [9, 9])
    #expect(recorder.writes.withLock { $0 } == [[9, 9]])
    #expect(try await client.read(20) == (0..<60).map { UInt8($0) })
    let service = try #require(try await client.discoverPrimaryServices(FixtureUUID.service).first)
    let data = try #require(try await client.discoverCharacteristics(of: service).last)
    let values = AsyncStream<[UInt8]>.makeStream()
    try await client.subscribe(data) { values.continuation.yield($1.value) }
    for index in 0..<200 { try await pair.served.session.notify(16, [UInt8(index % 256), UInt8(index / 256)]) }
    var iterator = values.stream.makeAsyncIterator()
    for index in 0..<200 { #expect(await iterator.next() == [UInt8(index % 256), UInt8(index / 256)]) }
    await pair.stop()
  }
}
