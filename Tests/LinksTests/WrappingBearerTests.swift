import ATT
import Runtime
import TestSupport
import Testing
import Wire

@testable import Links

/// The bearers that wrap another (a capture, a cut) send at once and take what is queued
/// without suspending, as the bearer inside them does, so a connection on them takes a
/// burst without an async call each.
@Suite("wrapping bearers", .timeLimit(scaledMinutes(1)))
struct WrappingBearerTests {
  static func pdu(_ index: Int) -> [UInt8] { [0x1B, UInt8(index & 0xFF), UInt8(index >> 8)] }

  /// A memory link whose central end is captured, `wrap` put between the two.
  struct Captured {
    let directory = TemporaryDirectory()
    let path: String
    let writer: BtsnoopWriter
    let captured: CapturingBearer
    let peripheral: MemoryBearer

    init(wrap: (MemoryBearer) -> any ATTBearer = { $0 }) throws {
      path = directory.file("capture.btsnoop")
      writer = try BtsnoopWriter(path: path, clock: StepClock().clock)
      let (central, peripheral) = MemoryLink.pair()
      captured = CapturingBearer(wrap(central), writer: writer)
      self.peripheral = peripheral
    }

    /// Closes the link and the capture; the ATT PDUs recorded between the link's
    /// Connection Complete and Disconnection Complete, each with its direction flag.
    func recorded() throws -> [(pdu: [UInt8], flags: UInt32)] {
      captured.close()
      writer.close()
      let file = try #require(readSnoop(try readFile(path)))
      try #require(file.records.count >= 2)
      return file.records.dropFirst().dropLast().map { (Array($0.packet[9...]), $0.flags) }
    }
  }

  @Test("a capture sends at once and takes what is queued, and records each PDU once, in order")
  func captureWithoutSuspending() async throws {
    let link = try Captured()
    for index in 0..<3 { try link.captured.send(Self.pdu(index)) }
    for index in 0..<3 { #expect(link.peripheral.receiveIfReady() == Self.pdu(index)) }
    for index in 3..<6 { try link.peripheral.send(Self.pdu(index)) }
    for index in 3..<6 { #expect(link.captured.receiveIfReady() == Self.pdu(index)) }
    #expect(link.captured.receiveIfReady() == nil)
    let recorded = try link.recorded()
    #expect(recorded.map(\.pdu) == (0..<6).map(Self.pdu))
    #expect(recorded.map(\.flags) == [0, 0, 0, 1, 1, 1], "sent by the host, then received")
  }

  @Test("a cut counts PDUs sent and taken without waiting, and closes the link after the k-th")
  func cutWithoutSuspending() async throws {
    let (central, peripheral) = MemoryLink.pair()
    let sending = CuttingBearer(central, cutAfter: 2, direction: .sent)
    try sending.send(Self.pdu(0))
    #expect(!sending.isCut)
    try sending.send(Self.pdu(1))
    #expect(sending.isCut)
    #expect(throws: BearerError.disconnected) { try sending.send(Self.pdu(2)) }
    #expect(peripheral.receiveIfReady() == Self.pdu(0))
    #expect(peripheral.receiveIfReady() == Self.pdu(1))
    #expect(try await peripheral.receive() == nil, "the link was closed after the second")

    let (a, b) = MemoryLink.pair()
    let receiving = CuttingBearer(b, cutAfter: 2, direction: .received)
    for index in 0..<3 { try a.send(Self.pdu(index)) }
    #expect(receiving.receiveIfReady() == Self.pdu(0))
    #expect(receiving.receiveIfReady() == Self.pdu(1))
    #expect(receiving.isCut)
    #expect(receiving.receiveIfReady() == nil, "what the link had queued is lost with it")
    #expect(receiving.received == 2)
  }
}
