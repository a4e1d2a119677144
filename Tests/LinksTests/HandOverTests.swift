import ATT
import Dispatch
import Runtime
import TestSupport
import Testing

@testable import Links
@testable import Sockets

/// A socket link hands each PDU it reads to a connection that runs on its loop, in the read
/// itself (`ATTBearer.handOver(to:)`).
@Suite("Handing PDUs over in place", .timeLimit(scaledMinutes(1)))
struct HandOverTests {
  /// A Write Request to handle 3 with a one-byte value.
  static func write(_ value: UInt8) -> [UInt8] { [0x12, 0x03, 0x00, value] }

  @Test(
    "a connection on the loop that reads its link takes each PDU in the read, with no task, after what was queued",
    arguments: LinkKind.allCases)
  func inPlaceOnTheLoop(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    let served = ServedLog()
    let connection = ATTConnection(bearer: ends.b, executorOf: OnLoop(testLoop))
    await connection.setServer(RecordingServer(log: served))
    // Sent before the connection runs: the link may have queued them, and they come first.
    for value: UInt8 in 1...3 { try ends.a.send(Self.write(value)) }
    let running = Task { await connection.run() }
    for _ in 1...3 { #expect(try await ends.a.receive() == [0x13]) }
    for value: UInt8 in 4...8 {
      try ends.a.send(Self.write(value))
      #expect(try await ends.a.receive() == [0x13])
    }
    let log = served.entries
    #expect(log.map(\.value) == Array(1...8 as ClosedRange<UInt8>))
    #expect(log.allSatisfy { $0.onLoop })
    // Once the connection runs, each request reaches it in the loop's read: no task ran it,
    // and the link's queue stayed empty.
    #expect(log.dropFirst(3).allSatisfy { !$0.inTask }, "\(log)")
    #expect(ends.b.core.inbox.count == 0)
    ends.a.close()
    await running.value
  }

  @Test("a connection on another executor takes its PDUs from the link's queue, in its own task")
  func queuedElsewhere() async throws {
    let ends = try await LinkKind.unixPair.open()
    defer { ends.close() }
    let other = EventLoop()
    let served = ServedLog()
    // Runs on another loop than the one reading the link: the link declines to hand over.
    let connection = ATTConnection(bearer: ends.b, executorOf: OnLoop(other))
    await connection.setServer(RecordingServer(log: served))
    let running = Task { await connection.run() }
    for value: UInt8 in 1...3 {
      try ends.a.send(Self.write(value))
      #expect(try await ends.a.receive() == [0x13])
    }
    #expect(served.entries.map(\.value) == [1, 2, 3])
    #expect(served.entries.allSatisfy { $0.inTask && !$0.onLoop })
    ends.a.close()
    await running.value
    try await other.shutdown()
  }

  @Test("nothing more is handed over once the link is closed in the connection's hands", arguments: LinkKind.allCases)
  func nothingAfterTheClose(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    let served = ServedLog()
    let connection = ATTConnection(bearer: ends.b, executorOf: OnLoop(testLoop))
    // The server closes the link as it serves the value 2.
    await connection.setServer(RecordingServer(log: served, closesOn: 2))
    let running = Task { await connection.run() }
    try ends.a.send(Self.write(0))
    #expect(try await ends.a.receive() == [0x13])
    // All at once, so that a byte stream's reads carry several in one.
    for value: UInt8 in 1...6 { try? ends.a.send(Self.write(value)) }
    await running.value
    #expect(served.entries.map(\.value) == [0, 1, 2])
  }

  @Test("the link lets go of the connection when the connection's run ends", arguments: LinkKind.allCases)
  func letsGo(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    weak var gone: ATTConnection?
    do {
      let connection = ATTConnection(bearer: ends.b, executorOf: OnLoop(testLoop))
      gone = connection
      await connection.setServer(RecordingServer(log: ServedLog()))
      let running = Task { await connection.run() }
      // Answered in place: the link holds the connection now.
      try ends.a.send(Self.write(1))
      #expect(try await ends.a.receive() == [0x13])
      ends.a.close()
      await running.value
    }
    // The link's end `b` is still held here; the connection is not.
    #expect(gone == nil)
    #expect(!ends.b.isConnected)
  }
}

/// A bearer that wraps a socket link (a capture, a cut, a rewrite) passes the offer to hand
/// over on, with its own part in front: each PDU still reaches the connection in the read.
@Suite("Handing PDUs over through a wrapping bearer", .timeLimit(scaledMinutes(1)))
struct WrappedHandOverTests {
  static let write = HandOverTests.write

  /// Runs a connection on `wrap(b)` of a Unix pair, sends writes 1...count on `a` one at a
  /// time (an answer is awaited for each up to `answered`), and returns what the
  /// server saw once the link ended.
  private func serve(count: UInt8, answered: UInt8? = nil, wrap: (SocketBearer) -> any ATTBearer) async throws
    -> [ServedLog.Entry]
  {
    let ends = try await LinkKind.unixPair.open()
    defer { ends.close() }
    let served = ServedLog()
    let connection = ATTConnection(bearer: wrap(ends.b), executorOf: OnLoop(testLoop))
    await connection.setServer(RecordingServer(log: served))
    let running = Task { await connection.run() }
    for value in 1...count {
      guard value <= answered ?? count else {
        // Past the cut: the link may be closed already.
        try? ends.a.send(Self.write(value))
        continue
      }
      try ends.a.send(Self.write(value))
      #expect(try await ends.a.receive() == [0x13])
    }
    ends.a.close()
    await running.value
    let log = served.entries
    // The first may have been queued before the connection ran; the rest came in the read.
    #expect(log.dropFirst().allSatisfy { !$0.inTask && $0.onLoop }, "\(log)")
    return log
  }

  @Test("a capture records each PDU handed over, in order with what it sent")
  func capture() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("capture.btsnoop")
    let writer = try BtsnoopWriter(path: path, clock: StepClock().clock)
    let log = try await serve(count: 4) { CapturingBearer($0, writer: writer) }
    #expect(log.map(\.value) == [1, 2, 3, 4])
    writer.close()
    let file = try #require(readSnoop(try readFile(path)))
    let records = file.records.dropFirst().dropLast()
    let pdus: [[UInt8]] = records.map { Array($0.packet[9...]) }
    #expect(pdus == (1...4 as ClosedRange<UInt8>).flatMap { [Self.write($0), [0x13]] })
    #expect(
      records.map(\.flags) == Array(repeating: [1, 0], count: 4).flatMap { $0 }, "received, then the answer sent")
  }

  @Test("a cut after the k-th PDU received hands nothing over after it")
  func cut() async throws {
    var cutting: CuttingBearer?
    let log = try await serve(count: 5, answered: 2) { bearer in
      let wrapped = CuttingBearer(bearer, cutAfter: 3, direction: .received)
      cutting = wrapped
      return wrapped
    }
    #expect(log.map(\.value) == [1, 2, 3])
    #expect(cutting?.received == 3)
  }

  @Test("a rewrite changes each PDU handed over before the connection sees it")
  func rewrite() async throws {
    let log = try await serve(count: 3) { bearer in
      RewritingBearer(bearer, incoming: { pdu in pdu.dropLast() + [pdu.last! &+ 10] })
    }
    #expect(log.map(\.value) == [11, 12, 13])
  }
}

/// An in-memory link whose two ends' connections run on one loop hands each PDU sent on the
/// loop to the other end's connection right after the sender's step
/// (`MemoryLink.pair(on:)`, `EventLoop.runAfterCurrent`).
@Suite("Handing PDUs over in memory", .timeLimit(scaledMinutes(1)))
struct MemoryHandOverTests {
  static let write = HandOverTests.write

  @Test("a PDU sent on the loop reaches the connection after the sender's step, with no task, after what was queued")
  func afterTheSendersStep() async throws {
    let (a, b) = MemoryLink.pair(on: testLoop)
    defer { a.close() }
    let sender = LoopSender(testLoop, a)
    let served = ServedLog()
    let connection = ATTConnection(bearer: b, executorOf: OnLoop(testLoop))
    await connection.setServer(RecordingServer(log: served, step: sender.step))
    // Sent before the connection runs: queued, and taken first.
    try await sender.send(1...3)
    #expect(b.queuedCount == 3)
    let running = Task { await connection.run() }
    for _ in 1...3 { #expect(try await a.receive() == [0x13]) }
    // All in one step of the sender's: each reaches the connection once that step is over.
    try await sender.send(4...8)
    for _ in 4...8 { #expect(try await a.receive() == [0x13]) }
    var log = served.entries
    #expect(log.map(\.value) == Array(1...8 as ClosedRange<UInt8>))
    #expect(log.allSatisfy { $0.onLoop && !$0.inSendersStep }, "\(log)")
    #expect(log.dropFirst(3).allSatisfy { !$0.inTask }, "\(log)")
    #expect(b.queuedCount == 0)
    // Sent from off the loop: queued, and the connection still takes it, in its task.
    try a.send(Self.write(9))
    #expect(try await a.receive() == [0x13])
    log = served.entries
    #expect(log.map(\.value).last == 9)
    #expect(log.last?.inTask == true)
    a.close()
    await running.value
  }

  @Test("a connection on another executor takes what is sent on the loop from the link's queue")
  func queuedElsewhere() async throws {
    let (a, b) = MemoryLink.pair(on: testLoop)
    defer { a.close() }
    let other = EventLoop()
    let sender = LoopSender(testLoop, a)
    let served = ServedLog()
    let connection = ATTConnection(bearer: b, executorOf: OnLoop(other))
    await connection.setServer(RecordingServer(log: served))
    let running = Task { await connection.run() }
    try await sender.send(1...3)
    for _ in 1...3 { #expect(try await a.receive() == [0x13]) }
    #expect(served.entries.map(\.value) == [1, 2, 3])
    #expect(served.entries.allSatisfy { $0.inTask && !$0.onLoop })
    a.close()
    await running.value
    try await other.shutdown()
  }

  /// A memory link on the test loop whose `b` end a connection on the loop serves (closing
  /// the link as it serves `closesOn`), once a first write (0) was answered: from then on
  /// the connection takes what is sent on the loop in place.
  private struct Serving {
    let a: MemoryBearer
    let sender: LoopSender
    let served: ServedLog
    let running: Task<Void, Never>

    init(closesOn: UInt8? = nil) async throws {
      let (a, b) = MemoryLink.pair(on: testLoop)
      self.a = a
      sender = LoopSender(testLoop, a)
      served = ServedLog()
      let connection = ATTConnection(bearer: b, executorOf: OnLoop(testLoop))
      await connection.setServer(RecordingServer(log: served, closesOn: closesOn))
      running = Task { await connection.run() }
      try await sender.send(0...0)
      #expect(try await a.receive() == [0x13])
    }
  }

  @Test("nothing more reaches a connection once its end closed the link")
  func nothingAfterItsClose() async throws {
    // The server closes the link as it serves the value 2.
    let link = try await Serving(closesOn: 2)
    defer { link.a.close() }
    try await link.sender.send(1...6)
    await link.running.value
    #expect(link.served.entries.map(\.value) == [0, 1, 2])
  }

  @Test("nothing more reaches a connection that closed its end, though the sender closed first")
  func nothingAfterItsCloseWhenBothClose() async throws {
    let link = try await Serving(closesOn: 1)
    // Sent, then closed, in one step; the connection closes its end as it serves 1.
    try await link.sender.send(1...3, thenClose: true)
    await link.running.value
    #expect(link.served.entries.map(\.value) == [0, 1])
  }

  @Test("a PDU sent on the loop waits behind one sent from off the loop and still queued")
  func behindWhatIsQueued() async throws {
    let link = try await Serving()
    let a = link.a
    defer { a.close() }
    // In one step on the loop: 1 is sent from another thread (queued, the connection's turn
    // to take it comes after this step), then 2 from the loop.
    try await link.sender.send(2...2, after: { try a.send(HandOverTests.write(1)) })
    for _ in 1...2 { #expect(try await a.receive() == [0x13]) }
    #expect(link.served.entries.map(\.value) == [0, 1, 2])
    a.close()
    await link.running.value
  }

  @Test("what the sender sent before it closed the link still arrives")
  func sentBeforeTheSendersClose() async throws {
    let link = try await Serving()
    // Sent, then closed, in one step.
    try await link.sender.send(1...4, thenClose: true)
    await link.running.value
    #expect(link.served.entries.map(\.value) == [0, 1, 2, 3, 4])
    #expect(link.served.entries.dropFirst().allSatisfy { !$0.inTask })
  }

  @Test("the link lets go of the connection when the connection's run ends")
  func letsGo() async throws {
    let (a, b) = MemoryLink.pair(on: testLoop)
    let sender = LoopSender(testLoop, a)
    weak var gone: ATTConnection?
    do {
      let connection = ATTConnection(bearer: b, executorOf: OnLoop(testLoop))
      gone = connection
      let served = ServedLog()
      await connection.setServer(RecordingServer(log: served))
      let running = Task { await connection.run() }
      // The first may be queued before the connection runs; the second is handed over.
      for value: UInt8 in 1...2 {
        try await sender.send(value...value)
        #expect(try await a.receive() == [0x13])
      }
      #expect(served.entries.last?.inTask == false)
      a.close()
      await running.value
    }
    // Both ends are still held here; the connection is not.
    #expect(gone == nil)
    withExtendedLifetime(b) {}
  }
}

/// An actor on a loop that sends writes on one end of an in-memory link, each batch in one
/// step of its own, noting while that step runs.
private actor LoopSender {
  let loop: EventLoop
  let bearer: MemoryBearer
  let step = StepFlag()
  init(_ loop: EventLoop, _ bearer: MemoryBearer) {
    self.loop = loop
    self.bearer = bearer
  }
  nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

  /// Sends `values` in one step; first, with `after`, waits in that step for `after` to
  /// have run on another thread.
  func send(
    _ values: ClosedRange<UInt8>, thenClose: Bool = false, after: (@Sendable () throws -> Void)? = nil
  ) throws {
    step.set(true)
    defer { step.set(false) }
    if let after { try onAnotherThread(after) }
    for value in values { try bearer.send(HandOverTests.write(value)) }
    if thenClose { bearer.close() }
  }
}

/// Runs `body` on a thread of its own and waits for it, blocking the caller's thread (a test
/// on the loop that needs a send from elsewhere to happen within one of its steps).
private func onAnotherThread(_ body: @escaping @Sendable () throws -> Void) throws {
  let outcome = Locked<Result<Void, any Error>?>(nil)
  let done = DispatchSemaphore(value: 0)
  #expect(
    spawnThread {
      outcome.withLock { $0 = Result { try body() } }
      done.signal()
    })
  done.wait()
  try outcome.withLock { $0 }?.get()
}
