import ATT
import Runtime
import TestSupport
import Testing
import Wire

@testable import Links

/// A memory bearer that can only send with an async call: `sendNow` always declines.
private final class AsyncOnlyBearer: ATTBearer {
  let inner: MemoryBearer
  init(_ inner: MemoryBearer) { self.inner = inner }
  var name: String { inner.name }
  var securityLevel: SecurityLevel { inner.securityLevel }
  func send(_ pdu: [UInt8]) async throws(BearerError) { try await inner.send(pdu) }
  nonisolated(nonsending) func receive() async throws(BearerError) -> [UInt8]? { try await inner.receive() }
  func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }
  func close() { inner.close() }
}

/// The bearers that wrap another (a capture, a cut) send and take PDUs without suspending
/// when the bearer inside them can, so a connection on them sends its replies at once
/// rather than through its queue, and takes a burst without an async call each.
@Suite("wrapping bearers", .timeLimit(scaledMinutes(1)))
struct WrappingBearerTests {
  static func pdu(_ index: Int) -> [UInt8] { [0x1B, UInt8(index & 0xFF), UInt8(index >> 8)] }

  @Test("a capture sends now and takes what is queued, and records each PDU once, in order")
  func captureWithoutSuspending() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("now.btsnoop")
    let writer = try BtsnoopWriter(path: path, clock: StepClock().clock)
    let (central, peripheral) = MemoryLink.pair()
    let captured = CapturingBearer(central, writer: writer)
    for index in 0..<3 { #expect(try captured.sendNow(Self.pdu(index))) }
    for index in 0..<3 { #expect(peripheral.receiveIfReady() == Self.pdu(index)) }
    for index in 3..<6 { try await peripheral.send(Self.pdu(index)) }
    for index in 3..<6 { #expect(captured.receiveIfReady() == Self.pdu(index)) }
    #expect(captured.receiveIfReady() == nil)
    captured.close()

    let file = try #require(readSnoop(try readFile(path)))
    // Connection Complete, six PDUs, Disconnection Complete.
    try #require(file.records.count == 8)
    let pdus = file.records.dropFirst().dropLast()
    #expect(pdus.map { Array($0.packet[9...]) } == (0..<6).map(Self.pdu))
    #expect(pdus.map(\.flags) == [0, 0, 0, 1, 1, 1], "sent by the host, then received")
    writer.close()
  }

  @Test("over a bearer that cannot send now, a capture declines and the send that follows records nothing again")
  func captureOverAnAsyncOnlyBearer() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("later.btsnoop")
    let writer = try BtsnoopWriter(path: path, clock: StepClock().clock)
    let (central, peripheral) = MemoryLink.pair()
    let captured = CapturingBearer(AsyncOnlyBearer(central), writer: writer)
    #expect(try !captured.sendNow(Self.pdu(0)))
    #expect(peripheral.receiveIfReady() == nil, "nothing was sent")
    try await captured.send(Self.pdu(0))
    try await captured.send(Self.pdu(1))
    #expect(try await peripheral.receive() == Self.pdu(0))
    #expect(try await peripheral.receive() == Self.pdu(1))
    captured.close()

    let file = try #require(readSnoop(try readFile(path)))
    try #require(file.records.count == 4)
    #expect(file.records.dropFirst().dropLast().map { Array($0.packet[9...]) } == [Self.pdu(0), Self.pdu(1)])
    writer.close()
  }

  @Test("a cut counts PDUs sent now and taken without waiting, and closes the link after the k-th")
  func cutWithoutSuspending() async throws {
    let (central, peripheral) = MemoryLink.pair()
    let sending = CuttingBearer(central, cutAfter: 2, direction: .sent)
    #expect(try sending.sendNow(Self.pdu(0)))
    #expect(!sending.isCut)
    #expect(try sending.sendNow(Self.pdu(1)))
    #expect(sending.isCut)
    #expect(throws: BearerError.disconnected) { _ = try sending.sendNow(Self.pdu(2)) }
    #expect(peripheral.receiveIfReady() == Self.pdu(0))
    #expect(peripheral.receiveIfReady() == Self.pdu(1))
    #expect(try await peripheral.receive() == nil, "the link was closed after the second")

    let (a, b) = MemoryLink.pair()
    let receiving = CuttingBearer(b, cutAfter: 2, direction: .received)
    for index in 0..<3 { try await a.send(Self.pdu(index)) }
    #expect(receiving.receiveIfReady() == Self.pdu(0))
    #expect(receiving.receiveIfReady() == Self.pdu(1))
    #expect(receiving.isCut)
    #expect(receiving.receiveIfReady() == nil, "what the link had queued is lost with it")
    #expect(receiving.received == 2)
  }
}
