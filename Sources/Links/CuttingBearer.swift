import ATT
import Runtime
import Wire

/// Fault injection: wraps a bearer and closes it right after its k-th PDU in one direction,
/// as a radio link lost at an exact point of the traffic. The k-th PDU itself goes through;
/// everything after it meets a closed link. Counts are kept either way, so a run with a cut
/// that never comes (k beyond the traffic) measures how many PDUs there were.
public final class CuttingBearer: ATTBearer {
  public enum Direction: String, Sendable, CaseIterable {
    /// PDUs this end sends.
    case sent
    /// PDUs this end receives.
    case received
  }

  public let inner: any ATTBearer
  public let direction: Direction
  public let cutAfter: Int
  private let counts = Locked((sent: 0, received: 0))

  public init(_ inner: any ATTBearer, cutAfter: Int, direction: Direction) {
    self.inner = inner
    self.cutAfter = cutAfter
    self.direction = direction
  }

  public var name: String { inner.name }

  /// PDUs sent and received so far.
  public var sent: Int { counts.withLock { $0.sent } }
  public var received: Int { counts.withLock { $0.received } }

  /// Whether the cut has happened.
  public var isCut: Bool { (direction == .sent ? sent : received) >= cutAfter }

  public func send(_ pdu: [UInt8]) throws(BearerError) {
    if isCut { throw .disconnected }
    try inner.send(pdu)
    cut(.sent, at: counted(.sent))
  }

  /// After the cut, nil: what the link had queued is lost with it.
  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    if isCut { return nil }
    guard let pdu = try await inner.receive() else { return nil }
    cut(.received, at: counted(.received))
    return pdu
  }

  /// As `receive`, when the inner bearer has a PDU queued.
  public func receiveIfReady() -> [UInt8]? {
    if isCut { return nil }
    guard let pdu = inner.receiveIfReady() else { return nil }
    cut(.received, at: counted(.received))
    return pdu
  }

  /// Passes the offer on (`ATTBearer.handOver(to:)`), counting and cutting as `receive()`
  /// does: nothing is handed over after the cut.
  public func handOver(to receiver: (any PDUReceiver)?) -> Bool {
    handOver(through: inner, to: receiver) { [self] pdu in
      if isCut { return nil }
      cut(.received, at: counted(.received))
      return pdu
    }
  }

  /// Counts one more PDU in `direction`; returns the count.
  private func counted(_ direction: Direction) -> Int {
    counts.withLock { counts -> Int in
      if direction == .sent {
        counts.sent += 1
        return counts.sent
      }
      counts.received += 1
      return counts.received
    }
  }

  /// Closes the link when the `count`-th PDU in `direction` is the one to cut after.
  private func cut(_ direction: Direction, at count: Int) {
    if direction == self.direction && count == cutAfter { inner.close() }
  }

  public var securityLevel: SecurityLevel { inner.securityLevel }
  public var peerAddress: String? { inner.peerAddress }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }

  public func close() { inner.close() }
}
