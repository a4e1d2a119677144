import ATT
import GATT
import Runtime
import TestSupport
import Testing
import Wire

@testable import Links

/// The air-time model on links: `AirLink` delays delivery on an injected clock; a
/// `TracingLink` run replayed by `AirReplay` gives the same times without waiting.
@Suite("Air-time links", .timeLimit(scaledMinutes(1)))
struct AirLinkTests {
  static let air = try! AirParameters(parsing: "2m,30ms,185,251")
  /// A Control Point write of 8 bytes (11-byte Write Request) and its Write Response.
  static let writeRequest: [UInt8] = [0x12, 0x0F, 0x00, 0, 1, 0, 0, 0, 1, 0, 0x20]
  static let writeResponse: [UInt8] = [0x13]

  @Test("the air link hands a write over when its packet ends, and its answer one connection event later")
  func writeRoundTrip() async throws {
    let clock = DeadlineClock()
    let (phone, watch) = AirLink.pair(Self.air, clock: clock, initialLevel: .encrypted)
    try watch.send(Self.writeRequest)
    // The phone's empty packet (44 µs), T_IFS, then the 15 + 4 bytes of the request (120 µs).
    let request = try await clock.receive(phone)
    #expect(request.pdu == Self.writeRequest)
    #expect(request.at == .microseconds(314))
    try phone.send(Self.writeResponse)
    // Handed over during event 0, so out at the next anchor: 30 ms, plus 5 + 4 bytes (80 µs).
    let response = try await clock.receive(watch)
    #expect(response.pdu == Self.writeResponse)
    #expect(response.at == .microseconds(30_080))
    #expect(response.at >= Self.air.connectionInterval)
    // The replay of the same exchange gives the same times without a clock.
    let replay = AirReplay(
      [
        TracedPDU(direction: .peripheralToCentral, size: 11, encrypted: true, cause: .start),
        TracedPDU(direction: .centralToPeripheral, size: 1, encrypted: true, cause: .pdu(0)),
      ], over: Self.air)
    #expect(replay.arrivals == [request.at, response.at])
  }

  @Test("a cancelled receive loses nothing; closing ends a receive waiting for a PDU on the air")
  func cancelAndClose() async throws {
    let clock = DeadlineClock()
    let (phone, watch) = AirLink.pair(Self.air, clock: clock)
    try phone.send([0x1B, 0x10, 0x00, 1])
    let waiting = Task { try await watch.receive() }
    await clock.manual.waitForSleepers(1)
    waiting.cancel()
    #expect(try await waiting.value == nil)
    #expect(try await clock.receive(watch).pdu == [0x1B, 0x10, 0x00, 1])

    try phone.send([0x1B, 0x10, 0x00, 2])
    let lost = Task { try await watch.receive() }
    await clock.manual.waitForSleepers(1)
    phone.close()
    #expect(try await lost.value == nil)
    #expect(throws: BearerError.disconnected) { try watch.send(Self.writeResponse) }
  }

  @Test("a PDU larger than the link's ATT_MTU is refused")
  func overMTU() async {
    let (phone, _) = AirLink.pair(Self.air, clock: ManualClock())
    #expect(throws: BearerError.tooLarge(size: 186, limit: 185)) {
      try phone.send([0x1B] + [UInt8](repeating: 0, count: 185))
    }
  }

  @Test("a GATT exchange over a tracing link records what each PDU waited for; its replay costs an event a step")
  func tracedExchange() async throws {
    let (phone, watch, trace) = TracingLink.pair()
    let server = try GATTServer(services: [
      ServiceDefinition(
        uuid: 0x1234,
        characteristics: [
          CharacteristicDefinition(
            uuid: 0x5678, properties: [.read, .write], read: { _ in [7] },
            write: { session, _ in
              // Like the ANCS Control Point: the answer follows the Write Response.
              .accepted(then: { connection in try? connection.notify(handle: 0x99, value: [1, 2, 3]) })
            })
        ])
    ])
    let serverConnection = ATTConnection(bearer: phone, clock: ManualClock())
    await server.attach(serverConnection)
    let clientConnection = ATTConnection(bearer: watch, clock: ManualClock())
    let client = await GATTClient(connection: clientConnection)
    let (values, arrived) = AsyncStream<[UInt8]>.makeStream()
    await client.onValue(0x99) { arrived.yield($1.value) }
    var notified = values.makeAsyncIterator()
    let serving = Task { await serverConnection.run() }
    let running = Task { await clientConnection.run() }
    let handle = try #require(server.handles(of: 0x1234)?.first?.value)
    #expect(try await client.read(handle) == [7])
    try await client.write(handle, [1])
    #expect(await notified.next() == [1, 2, 3])
    try await PDUTrace.$origin.withValue(.idle) { try await serverConnection.notify(handle: 0x99, value: [4]) }
    #expect(await notified.next() == [4])
    clientConnection.close()
    await running.value
    await serving.value

    let records = trace.records
    #expect(records.map(\.cause) == [.start, .pdu(0), .pdu(1), .pdu(2), .pdu(2), .idle])
    #expect(records.map(\.size) == [3, 2, 4, 1, 6, 4])
    #expect(
      records.map(\.direction) == [.peripheralToCentral, .centralToPeripheral] + [
        .peripheralToCentral, .centralToPeripheral, .centralToPeripheral, .centralToPeripheral,
      ])
    // Unencrypted: each step waits for the one before, so goes out one event later.
    let replay = AirReplay(records, over: Self.air)
    let anchors = [0, 30, 60, 90, 90, 120].map { Duration.milliseconds($0) }
    #expect(replay.ready.enumerated().allSatisfy { $0.element <= anchors[$0.offset] })
    for (index, arrival) in replay.arrivals.enumerated() {
      #expect(arrival > anchors[index] && arrival < anchors[index] + .milliseconds(1), "PDU \(index)")
    }
    #expect(replay.ready[5] == .milliseconds(120))
    #expect(replay.statistics.events == 5)
  }
}

/// A `ManualClock` that remembers the deadline of the latest sleep, so a test can move time
/// to exactly the moment the link said.
final class DeadlineClock: EngineClock {
  let manual = ManualClock()
  private let latest = Locked<Duration>(.zero)

  var now: Duration { manual.now }

  func sleep(until deadline: Duration) async throws(CancellationError) {
    latest.withLock { $0 = deadline }
    try await manual.sleep(until: deadline)
  }

  /// Receives on `bearer`: waits until it sleeps on this clock, moves time to its deadline,
  /// and returns the PDU and the time it came.
  func receive(_ bearer: AirBearer) async throws -> (pdu: [UInt8]?, at: Duration) {
    let receiving = Task { try await bearer.receive() }
    await manual.waitForSleepers(1)
    manual.advance(by: latest.withLock { $0 } - now)
    return (try await receiving.value, now)
  }
}
