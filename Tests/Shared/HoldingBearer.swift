import ATT
import Links
import Runtime

/// A memory link's end that holds back the PDUs `holds` picks while `holding`, and every PDU
/// sent after the first one held, as a link under flow control keeps what it cannot take
/// yet, in order, until `release()`; everything else goes through as the link sends it.
public final class HoldingBearer: ATTBearer {
  private struct State {
    var holding = true
    /// What waits for the release, in the order sent.
    var waiting: [[UInt8]] = []
    /// How many of those `holds` picked.
    var picked = 0
  }
  public let inner: MemoryBearer
  private let holds: @Sendable ([UInt8]) -> Bool
  private let state = Locked(State())

  public init(_ inner: MemoryBearer, holds: @escaping @Sendable ([UInt8]) -> Bool) {
    self.inner = inner
    self.holds = holds
  }

  /// Picked PDUs held back.
  public var held: Int { state.withLock { $0.picked } }

  /// Sends what is held, in order, and from now on holds nothing. What the link refuses
  /// (it closed meanwhile) is lost with it, as on a real link.
  public func release() {
    state.withLock { state in
      state.holding = false
      for pdu in state.waiting { try? inner.send(pdu) }
      state.waiting = []
      state.picked = 0
    }
  }

  /// Under the lock `release` takes, so nothing sent meanwhile overtakes what it sends.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    try state.withLock { (state) throws(BearerError) in
      let picked = holds(pdu)
      guard state.holding, picked || !state.waiting.isEmpty else { return try inner.send(pdu) }
      if inner.isClosed { throw .disconnected }
      state.waiting.append(pdu)
      if picked { state.picked += 1 }
    }
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? { try await inner.receive() }
  public func receiveIfReady() -> [UInt8]? { inner.receiveIfReady() }
  public var securityLevel: SecurityLevel { inner.securityLevel }
  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }
  public func close() { inner.close() }
  public var name: String { inner.name }
}
