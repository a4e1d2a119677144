import ATT
import Links
import Runtime
import TestSupport
import Testing
import Wire

/// An engine on one end of a memory link, the raw other end for the test, a manual clock.
private struct Harness {
  let connection: ATTConnection
  let peer: MemoryBearer
  let clock = ManualClock()
  let task: Task<Void, Never>

  init(localMTU: UInt16 = 517) {
    let (a, b) = MemoryLink.pair()
    peer = b
    connection = ATTConnection(bearer: a, clock: clock, options: .init(localMTU: localMTU))
    let connection = self.connection
    task = Task { await connection.run() }
  }

  func next() async throws -> [UInt8] {
    try #require(try await peer.receive())
  }
}

private let readRequest = ATTPDU.readRequest(ReadRequest(handle: 3))

/// Whether two executor references name the same executor (the type is not Equatable).
private func same(_ a: UnownedSerialExecutor, _ b: UnownedSerialExecutor) -> Bool {
  unsafeBitCast(a, to: (UInt, UInt).self) == unsafeBitCast(b, to: (UInt, UInt).self)
}

@Suite(.timeLimit(scaledMinutes(2))) struct ATTConnectionTests {
  /// An engine that owns its connections keeps them on its own executor; a connection
  /// without an owner has one of its own, shared with no other.
  @Test func aConnectionRunsOnItsOwnersExecutorWhenItHasOne() async {
    actor Owner {
      /// The connection's machine, read without a hop: only sound on the same executor.
      func closedReason(of connection: ATTConnection) -> ATTError? {
        connection.assumeIsolated { $0.closedReason }
      }
    }
    let owner = Owner()
    let (a, b) = MemoryLink.pair()
    let owned = ATTConnection(bearer: a, executorOf: owner)
    let alone = ATTConnection(bearer: b)
    #expect(same(owned.unownedExecutor, owner.unownedExecutor))
    #expect(!same(alone.unownedExecutor, owner.unownedExecutor))
    #expect(!same(alone.unownedExecutor, ATTConnection(bearer: b).unownedExecutor))
    #expect(await owner.closedReason(of: owned) == nil)
    a.close()
    await owned.run()
    #expect(await owner.closedReason(of: owned) == .disconnected)
  }

  @Test func requestGetsItsResponse() async throws {
    let h = Harness()
    async let answer = h.connection.request(readRequest)
    #expect(try await h.next() == [0x0A, 0x03, 0x00])
    try h.peer.send([0x0B, 0x2A])
    #expect(try await answer == .readResponse(ReadResponse(value: [0x2A])))
    h.connection.close()
    await h.task.value
  }

  @Test func errorResponseThrowsWithItsCode() async throws {
    let h = Harness()
    let answer = Task { try await h.connection.request(readRequest) }
    _ = try await h.next()
    try h.peer.send([0x01, 0x0A, 0x03, 0x00, 0x0F])
    let expected = ErrorResponse(requestOpcode: .readRequest, handle: 3, errorCode: .insufficientEncryption)
    await #expect(throws: ATTError.errorResponse(expected)) { try await answer.value }
    h.connection.close()
  }

  @Test func wrongAnswerIsInvalidResponse() async throws {
    let h = Harness()
    async let answer = h.connection.request(readRequest)
    _ = try await h.next()
    try h.peer.send([0x13])  // a Write Response to a Read Request
    do {
      _ = try await answer
      Issue.record("expected invalidResponse")
    } catch let error as ATTError {
      guard case .invalidResponse = error else { throw error }
    }
    // A malformed answer too.
    async let second = h.connection.request(readRequest)
    _ = try await h.next()
    try h.peer.send([0x01, 0x0A])
    do {
      _ = try await second
      Issue.record("expected invalidResponse")
    } catch let error as ATTError {
      guard case .invalidResponse = error else { throw error }
    }
    h.connection.close()
  }

  /// "A transaction not completed within 30 seconds shall time out" (Vol 3 Part F 3.3.3):
  /// at 29 s it is still waiting; at 30 s it fails and the bearer is closed.
  @Test func transactionTimesOutAfterThirtySeconds() async throws {
    let h = Harness()
    let request = Task { try await h.connection.request(readRequest) }
    _ = try await h.next()
    await h.clock.waitForSleepers(1)
    h.clock.advance(by: .seconds(29))
    await h.clock.waitForSleepers(1)  // still armed: nothing expired
    #expect(await h.connection.closedReason == nil)
    h.clock.advance(by: .seconds(1))
    await #expect(throws: ATTError.timeout) { try await request.value }
    #expect(try await h.peer.receive() == nil, "the bearer is closed after a timeout")
    await h.task.value
    await #expect(throws: ATTError.timeout) { try await h.connection.request(readRequest) }
  }

  @Test func answeredInTimeDoesNotTimeOut() async throws {
    let h = Harness()
    let request = Task { try await h.connection.request(readRequest) }
    _ = try await h.next()
    await h.clock.waitForSleepers(1)
    h.clock.advance(by: .seconds(29))
    try h.peer.send([0x0B, 0x01])
    _ = try await request.value
    h.clock.advance(by: .seconds(5))
    // A second request after the first completed has its own 30 s.
    let second = Task { try await h.connection.request(readRequest) }
    _ = try await h.next()
    try h.peer.send([0x0B, 0x02])
    #expect(try await second.value == .readResponse(ReadResponse(value: [2])))
    #expect(await h.connection.closedReason == nil)
    h.connection.close()
  }

  /// "A client shall not send a request until it has received the response to the
  /// previous one": concurrent callers queue, in order.
  @Test func oneOutstandingRequestAtATime() async throws {
    let h = Harness()
    let tasks = (0..<8).map { index in
      Task { try await h.connection.request(.readRequest(ReadRequest(handle: UInt16(index + 1)))) }
    }
    var seen: [UInt16] = []
    for _ in 0..<8 {
      let request = try await h.next()
      for _ in 0..<50 { await Task.yield() }
      #expect(h.peer.queuedCount == 0, "a second request was sent before the first was answered")
      let handle = UInt16(request[1]) | UInt16(request[2]) << 8
      seen.append(handle)
      try h.peer.send([0x0B, UInt8(handle)])
    }
    for (index, task) in tasks.enumerated() {
      #expect(try await task.value == .readResponse(ReadResponse(value: [UInt8(index + 1)])))
    }
    #expect(Set(seen) == Set(1...8))
    h.connection.close()
  }

  @Test func mtuExchangeAndEnforcement() async throws {
    let h = Harness(localMTU: 100)
    async let mtu = h.connection.exchangeMTU()
    #expect(try await h.next() == [0x02, 100, 0])
    try h.peer.send([0x03, 0xF7, 0x00])  // the peer offers 247
    #expect(try await mtu == 100)
    // Notifications are cut to ATT_MTU - 3.
    try await h.connection.notify(handle: 9, value: Array(repeating: 7, count: 200))
    #expect(try await h.next().count == 100)
    // Any other PDU over ATT_MTU is refused before it reaches the wire.
    await #expect(throws: ATTError.pduTooLarge(size: 101, mtu: 100)) {
      try await h.connection.request(.writeRequest(WriteRequest(handle: 1, value: Array(repeating: 0, count: 98))))
    }
    h.connection.close()
  }

  /// A peer that ignores the MTU: what it sends is taken whole (ATT.md: "PDUs received larger
  /// than ATT_MTU are accepted"), answered, and never breaks the connection.
  @Test func pdusLargerThanTheMTUAreTakenWhole() async throws {
    let h = Harness()
    let events = AsyncStream<ATTValueEvent>.makeStream()
    await h.connection.setValueHandler { events.continuation.yield($1) }
    let big = (0..<200).map { UInt8(truncatingIfNeeded: $0) }
    try h.peer.send([0x1B, 0x05, 0x00] + big)  // a 203-byte notification at ATT_MTU 23
    var iterator = events.stream.makeAsyncIterator()
    #expect(await iterator.next() == ATTValueEvent(handle: 5, value: big, isIndication: false))
    try h.peer.send([0x12, 0x01, 0x00] + big)  // a 203-byte Write Request: answered
    #expect(try await h.next() == [0x01, 0x12, 0x00, 0x00, 0x06])
    let request = Task { try await h.connection.request(readRequest) }
    #expect(try await h.next() == [0x0A, 0x03, 0x00])
    try h.peer.send([0x0B] + big)  // a 201-byte Read Response
    #expect(try await request.value == .readResponse(ReadResponse(value: big)))
    h.connection.close()
  }

  @Test func serverSideExchangeMTUNeverBelow23() async throws {
    let h = Harness()
    try h.peer.send([0x02, 0x10, 0x00])  // the peer offers 16
    #expect(try await h.next() == [0x03, 0x05, 0x02])
    try await h.connection.notify(handle: 1, value: Array(repeating: 0, count: 40))
    #expect(try await h.next().count == 23)
    h.connection.close()
  }

  @Test func notificationsAndIndicationsAreDispatchedAndConfirmed() async throws {
    let h = Harness()
    let events = AsyncStream<ATTValueEvent>.makeStream()
    await h.connection.setValueHandler { events.continuation.yield($1) }
    try h.peer.send([0x1B, 0x05, 0x00, 0xAA])
    try h.peer.send([0x1D, 0x06, 0x00, 0xBB, 0xCC])
    var iterator = events.stream.makeAsyncIterator()
    #expect(await iterator.next() == ATTValueEvent(handle: 5, value: [0xAA], isIndication: false))
    #expect(await iterator.next() == ATTValueEvent(handle: 6, value: [0xBB, 0xCC], isIndication: true))
    #expect(try await h.next() == [0x1E], "an indication is confirmed")
    h.connection.close()
  }

  @Test func indicationAwaitsConfirmationAndTimesOut() async throws {
    let h = Harness()
    async let confirmed: Void = h.connection.indicate(handle: 3, value: [1, 2])
    #expect(try await h.next() == [0x1D, 0x03, 0x00, 0x01, 0x02])
    try h.peer.send([0x1E])
    try await confirmed
    let unconfirmed = Task { try await h.connection.indicate(handle: 3, value: [3]) }
    _ = try await h.next()
    await h.clock.waitForSleepers(1)
    h.clock.advance(by: .seconds(30))
    await #expect(throws: ATTError.timeout) { try await unconfirmed.value }
  }

  /// A server handler runs on the receive loop, which alone can carry a confirmation: it
  /// queues its indications and returns. The first goes before the Write Response, the
  /// second once the first is confirmed, and each confirmation reaches its callback.
  @Test func indicationsQueuedFromAServerHandler() async throws {
    let h = Harness()
    let confirmations = AsyncStream<Result<ATTPDU, ATTError>>.makeStream()
    await h.connection.setServer(
      IndicatingServer { connection in
        for value: UInt8 in [1, 2] {
          connection.indicate(handle: 7, value: [value]) { confirmations.continuation.yield($1) }
        }
      })
    try h.peer.send([0x12, 0x03, 0x00, 0xAA])
    #expect(try await h.next() == [0x1D, 0x07, 0x00, 0x01], "the first indication, sent from the handler")
    #expect(try await h.next() == [0x13], "then the Write Response: the handler did not wait")
    try h.peer.send([0x1E])
    #expect(try await h.next() == [0x1D, 0x07, 0x00, 0x02], "the second, once the first is confirmed")
    var iterator = confirmations.stream.makeAsyncIterator()
    #expect(try await iterator.next()?.get() == .handleValueConfirmation(HandleValueConfirmation()))
    h.connection.close()
    await #expect(throws: ATTError.disconnected) { try await iterator.next()?.get() }
  }

  @Test func disconnectFailsWhatIsPending() async throws {
    let h = Harness()
    let request = Task { try await h.connection.request(readRequest) }
    _ = try await h.next()
    h.peer.close()
    await #expect(throws: ATTError.disconnected) { try await request.value }
    await h.task.value
    await #expect(throws: ATTError.disconnected) { try await h.connection.request(readRequest) }
  }

  /// close() fails what is outstanding as the receive loop ends (an answer callback may
  /// send, so it runs there), and what is asked after it at once.
  @Test func closeFailsWhatIsPendingOnTheReceiveLoop() async throws {
    let h = Harness()
    let request = Task { try await h.connection.request(readRequest) }
    _ = try await h.next()
    let called = AsyncStream<Result<ATTPDU, ATTError>>.makeStream()
    await h.connection.request(readRequest) { called.continuation.yield($1) }
    h.connection.close()
    await #expect(throws: ATTError.disconnected) { try await h.connection.request(readRequest) }
    await #expect(throws: ATTError.disconnected) { try await request.value }
    var results = called.stream.makeAsyncIterator()
    await #expect(throws: ATTError.disconnected) { try await results.next()?.get() }
    await h.task.value
    #expect(await h.connection.closedReason == .disconnected)
  }

  /// A handler set once the connection is over (a client made for a link that was cut at
  /// once) is not kept: it would hold the connection, and its link, forever.
  @Test func handlersSetAfterTheEndAreNotKept() async {
    weak var released: ATTConnection?
    do {
      let (a, b) = MemoryLink.pair()
      let connection = ATTConnection(bearer: a)
      released = connection
      b.close()
      await connection.run()
      await connection.setValueHandler { _, _ in _ = connection }
      await connection.setServer(IndicatingServer { _ in _ = connection })
    }
    #expect(released == nil, "the connection was freed")
  }

  @Test func requestsWithoutServerAreRefused() async throws {
    let h = Harness()
    try h.peer.send([0x0A, 0x01, 0x00])
    #expect(try await h.next() == [0x01, 0x0A, 0x00, 0x00, 0x06])
    try h.peer.send([0x52, 0x01, 0x00, 0x01])  // a command: no answer
    try h.peer.send([0x0A, 0x01])  // malformed request: Invalid PDU
    #expect(try await h.next() == [0x01, 0x0A, 0x00, 0x00, 0x04])
    try h.peer.send([])  // empty PDU: ignored
    try h.peer.send([0x13])  // a response nobody asked for: ignored
    try h.peer.send([0x04, 0x01, 0x00, 0xFF, 0xFF])
    #expect(try await h.next() == [0x01, 0x04, 0x00, 0x00, 0x06])
    h.connection.close()
  }
}

/// Answers every write, after running `then` on the receive loop.
private struct IndicatingServer: ATTServerHandler {
  let then: @Sendable (isolated ATTConnection) -> Void

  func handle(_ pdu: ATTPDU, on connection: isolated ATTConnection) -> ATTServerReply {
    then(connection)
    return ATTServerReply(.writeResponse(WriteResponse()))
  }
}

/// Answers every write, then runs `after` as the reply's `afterResponse`.
private struct AfterResponseServer: ATTServerHandler {
  let after: @Sendable (isolated ATTConnection) -> Void

  func handle(_ pdu: ATTPDU, on connection: isolated ATTConnection) -> ATTServerReply {
    ATTServerReply(.writeResponse(WriteResponse()), afterResponse: after)
  }
}

@Suite(.timeLimit(scaledMinutes(1))) struct AfterResponseTests {
  static func write(_ value: UInt8) -> [UInt8] { [0x12, 0x03, 0x00, value] }

  /// What a reply does after its answer goes out right after that answer and before the
  /// next request is served, even when both requests were on the link already.
  @Test func itsPDUsGoBetweenItsAnswerAndTheNextOne() async throws {
    let (a, peer) = MemoryLink.pair()
    let connection = ATTConnection(bearer: a)
    await connection.setServer(AfterResponseServer { connection in try? connection.notify(handle: 7, value: [1]) })
    try peer.send(Self.write(1))
    try peer.send(Self.write(2))
    let running = Task { await connection.run() }
    var seen: [[UInt8]] = []
    for _ in 0..<4 { seen.append(try #require(try await peer.receive())) }
    #expect(seen == [[0x13], [0x1B, 0x07, 0x00, 0x01], [0x13], [0x1B, 0x07, 0x00, 0x01]])
    connection.close()
    await running.value
  }

  /// An indication that cannot be sent from there fails its waiter at once, inside the step
  /// serving the request, and the connection serves the next request as before.
  @Test func aSendThatFailsThereFailsItsTransactionAndServingGoesOn() async throws {
    let (a, peer) = MemoryLink.pair()
    // The link refuses indications only.
    let refusing = RefusingBearer(a) { $0.first == 0x1D }
    let connection = ATTConnection(bearer: refusing)
    let outcomes = Locked<[String]>([])
    await connection.setServer(
      AfterResponseServer { connection in
        connection.indicate(handle: 9, value: [2]) { _, result in
          let outcome: String
          switch result {
          case .success: outcome = "confirmed"
          case .failure(let error): outcome = "failed: \(error)"
          }
          outcomes.withLock { $0.append(outcome) }
        }
        outcomes.withLock { $0.append("after") }
      })
    let running = Task { await connection.run() }
    try peer.send(Self.write(1))
    #expect(try await peer.receive() == [0x13])
    try peer.send(Self.write(2))
    #expect(try await peer.receive() == [0x13])
    let failed = "failed: \(ATTError.disconnected)"
    #expect(outcomes.withLock { $0 } == [failed, "after", failed, "after"])
    connection.close()
    await running.value
  }
}

/// A memory link's end that refuses the PDUs `refuses` picks (every one by default); it
/// receives as the link does.
private final class RefusingBearer: ATTBearer {
  let inner: MemoryBearer
  let refuses: @Sendable ([UInt8]) -> Bool
  init(_ inner: MemoryBearer, refuses: @escaping @Sendable ([UInt8]) -> Bool = { _ in true }) {
    self.inner = inner
    self.refuses = refuses
  }
  func send(_ pdu: [UInt8]) throws(BearerError) {
    if refuses(pdu) { throw .io("refused") }
    try inner.send(pdu)
  }
  nonisolated(nonsending) func receive() async throws(BearerError) -> [UInt8]? { try await inner.receive() }
  var securityLevel: SecurityLevel { inner.securityLevel }
  func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }
  func close() { inner.close() }
  var name: String { inner.name }
}

@Suite(.timeLimit(scaledMinutes(1))) struct ATTSendOrderTests {
  /// The connection keeps no queue: each PDU is on the link when the call that decided it
  /// returns, so the link's order is the order of the calls.
  @Test func eachPDUIsOnTheLinkWhenItsCallReturns() async throws {
    let (a, peer) = MemoryLink.pair()
    let connection = ATTConnection(bearer: a)
    let running = Task { await connection.run() }
    try await connection.notify(handle: 7, value: [1])
    #expect(peer.receiveIfReady() == [0x1B, 0x07, 0x00, 0x01])
    await connection.request(readRequest) { _, _ in }
    #expect(peer.receiveIfReady() == [0x0A, 0x03, 0x00])
    connection.close()
    await running.value
  }

  /// A PDU the link refuses fails at once: the request with `disconnected` (not after its
  /// 30 s), a notification's sender hears it, and the next request is not held up by the one
  /// before.
  @Test func aSendTheLinkRefusesFailsItsRequest() async throws {
    let (a, peer) = MemoryLink.pair()
    let connection = ATTConnection(bearer: RefusingBearer(a))
    let running = Task { await connection.run() }
    await #expect(throws: ATTError.disconnected) { try await connection.request(readRequest) }
    await #expect(throws: ATTError.disconnected) { try await connection.notify(handle: 7, value: [1]) }
    await #expect(throws: ATTError.disconnected) { try await connection.request(readRequest) }
    let reason = await connection.closedReason
    #expect(reason == nil, "\(String(describing: reason))")
    #expect(peer.queuedCount == 0)
    connection.close()
    await running.value
  }
}
