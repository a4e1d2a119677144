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

  public func send(_ pdu: [UInt8]) async throws(BearerError) {
    if isCut { throw .disconnected }
    let count = counts.withLock { counts -> Int in
      counts.sent += 1
      return counts.sent
    }
    try await inner.send(pdu)
    if direction == .sent && count == cutAfter { inner.close() }
  }

  /// After the cut, nil: what the link had queued is lost with it.
  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    if isCut { return nil }
    guard let pdu = try await inner.receive() else { return nil }
    let count = counts.withLock { counts -> Int in
      counts.received += 1
      return counts.received
    }
    if direction == .received && count == cutAfter { inner.close() }
    return pdu
  }

  public var securityLevel: SecurityLevel { inner.securityLevel }
  public var peerAddress: String? { inner.peerAddress }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }

  public func close() { inner.close() }
}
