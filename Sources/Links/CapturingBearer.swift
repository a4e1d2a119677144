import ATT
import Runtime
import Wire

/// Wraps any bearer and records every ATT PDU it sends and receives in a btsnoop file
/// (`BtsnoopWriter`), from this end's point of view: what it sends is "sent by the host".
/// Each bearer is a link of its own in the capture: its own connection handle, an LE
/// Connection Complete when it is made and a Disconnection Complete when it ends (the peer
/// closed: reason 0x13; this end: 0x16). Everything else passes through unchanged. Closing
/// the bearer flushes the capture; the writer stays open for other bearers and closes with
/// `BtsnoopWriter.close()` or when released.
public final class CapturingBearer: ATTBearer {
  public let inner: any ATTBearer
  public let writer: BtsnoopWriter
  /// This link's connection handle in the capture.
  public let handle: UInt16
  /// The link has ended: nothing more is recorded.
  private let ended = Locked(false)

  /// `role` is this end's: the phone is the central, the watch the peripheral.
  public init(_ inner: any ATTBearer, writer: BtsnoopWriter, role: Btsnoop.Connection.Role = .central) {
    self.inner = inner
    self.writer = writer
    self.handle = writer.openConnection(role: role)
  }

  private func end(reason: UInt8) {
    let first = ended.withLock { ended in
      defer { ended = true }
      return !ended
    }
    if first { writer.closeConnection(handle, reason: reason) }
    writer.flush()
  }

  public var name: String { inner.name }

  /// Recorded before it goes out, so a reply the peer sends at once never appears in the
  /// capture ahead of the request that caused it. Once the link has ended (its Disconnection
  /// Complete is in the capture) nothing more is recorded on it, as a capture shows no packet
  /// on a link after its end: a PDU sent then never reaches the peer, and one this end still
  /// takes from the link's buffer after closing it is left out.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    record(pdu, .sent)
    try inner.send(pdu)
  }

  /// As `receive`, when the inner bearer has a PDU queued.
  public func receiveIfReady() -> [UInt8]? {
    guard let pdu = inner.receiveIfReady() else { return nil }
    record(pdu, .received)
    return pdu
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    guard let pdu = try await inner.receive() else {
      end(reason: 0x13)
      return nil
    }
    record(pdu, .received)
    return pdu
  }

  /// Passes the offer on (`ATTBearer.handOver(to:)`), recording each PDU handed over as
  /// `receive()` records it.
  public func handOver(to receiver: (any PDUReceiver)?) -> Bool {
    handOver(through: inner, to: receiver) { [self] pdu in
      record(pdu, .received)
      return pdu
    }
  }

  /// Under the flag `end` sets, so no record follows the link's end.
  private func record(_ pdu: [UInt8], _ direction: Btsnoop.Direction) {
    ended.withLock { ended in
      if !ended { writer.record(pdu, direction: direction, handle: handle) }
    }
  }

  public var securityLevel: SecurityLevel { inner.securityLevel }
  public var peerAddress: String? { inner.peerAddress }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    try await inner.pair(level)
  }

  public func close() {
    inner.close()
    end(reason: 0x16)
  }
}
