import ATT
import HCI
import Links
import Runtime
import Sockets
import TestSupport
import Testing

/// An HCI connection hands each ATT PDU to a connection that runs on the loop reading the
/// controller, in that read (`ATTBearer.handOver(to:)`), as a socket link does.
@Suite("HCI host: ATT PDUs handed over in place", .timeLimit(scaledMinutes(1)))
struct HCIHandOverTests {
  /// Runs an ATT server on a peripheral link over the fake controller, on `executor`'s
  /// executor; the controller sends writes 1...6 one at a time (their answers awaited) and
  /// then the link ends. Returns what the server saw.
  private func serve(on executor: OnLoop) async throws -> [ServedLog.Entry] {
    let (fake, host, link) = try await connectedHost(role: .peripheral)
    defer { host.close() }
    let served = ServedLog()
    let connection = ATTConnection(bearer: link, executorOf: executor)
    await connection.setServer(RecordingServer(log: served))
    let running = Task { await connection.run() }
    for value: UInt8 in 1...6 {
      fake.send(.att, [0x12, 0x03, 0x00, value])
      let answer = await fake.nextFrame()
      #expect(answer?.channel == .att && answer?.payload == [0x13])
      // Its buffer is free again (ACL flow control).
      fake.completed(1)
    }
    host.close()
    await running.value
    return served.entries
  }

  @Test("a connection on the loop that reads the controller takes each ATT PDU in the read, with no task")
  func inPlace() async throws {
    let log = try await serve(on: OnLoop(testLoop))
    #expect(log.map(\.value) == Array(1...6 as ClosedRange<UInt8>))
    // The first may have been queued before the connection ran; every one after it reached
    // the server in the loop's read.
    #expect(log.dropFirst().allSatisfy { $0.onLoop && !$0.inTask }, "\(log)")
  }

  @Test("an ATT PDU sent on the loop is written to the controller in place; one sent elsewhere reaches the loop first")
  func sentInPlace() async throws {
    let capture = try BtsnoopWriter(inMemoryWith: BtsnoopWriter.systemClock)
    let (fake, host, link) = try await connectedHost(role: .peripheral, capture: capture)
    defer { host.close() }
    // On the loop: recorded (as it is written) before the send returns, with no hop.
    let writtenInPlace = await host.stream.loop.submit { () -> Bool in
      let before = capture.bytes.count
      do { try link.send([0x1B, 0x03, 0x00, 0x01]) } catch { return false }
      return capture.bytes.count > before
    }
    #expect(writtenInPlace)
    // Off the loop, the two that follow reach the controller in the order sent.
    try link.send([0x1B, 0x03, 0x00, 0x02])
    try link.send([0x1B, 0x03, 0x00, 0x03])
    var values: [UInt8] = []
    for _ in 0..<3 {
      guard let frame = await fake.nextFrame() else { break }
      values.append(frame.payload.last ?? 0)
      fake.completed(1)
    }
    #expect(values == [1, 2, 3])
  }

  @Test("a connection on another executor takes its PDUs from the link's queue, in its own task")
  func queuedElsewhere() async throws {
    let other = EventLoop()
    let log = try await serve(on: OnLoop(other))
    #expect(log.map(\.value) == Array(1...6 as ClosedRange<UInt8>))
    #expect(log.allSatisfy { $0.inTask && !$0.onLoop })
    try await other.shutdown()
  }
}
