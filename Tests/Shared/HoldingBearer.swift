import ATT
import Links
import Runtime

/// A memory link's end that holds the PDUs `holds` picks in an async send while `holding`,
/// as a link under flow control holds what it cannot take yet, until `release()`; it sends
/// no picked PDU now while holding, and everything else as the link does.
public final class HoldingBearer: ATTBearer {
  private struct State {
    var holding = true
    var waiting: [CheckedContinuation<Void, Never>] = []
  }
  public let inner: MemoryBearer
  private let holds: @Sendable ([UInt8]) -> Bool
  private let state = Locked(State())

  public init(_ inner: MemoryBearer, holds: @escaping @Sendable ([UInt8]) -> Bool) {
    self.inner = inner
    self.holds = holds
  }

  /// Picked PDUs waiting to be sent.
  public var held: Int { state.withLock { $0.waiting.count } }

  /// Sends what is held, and from now on holds nothing.
  public func release() {
    let waiting = state.withLock { state in
      state.holding = false
      defer { state.waiting = [] }
      return state.waiting
    }
    for continuation in waiting { continuation.resume() }
  }

  public func send(_ pdu: [UInt8]) async throws(BearerError) {
    if holds(pdu) {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let now = state.withLock { state -> Bool in
          if !state.holding { return true }
          state.waiting.append(continuation)
          return false
        }
        if now { continuation.resume() }
      }
    }
    try await inner.send(pdu)
  }

  public func sendNow(_ pdu: [UInt8]) throws(BearerError) -> Bool {
    if holds(pdu), state.withLock({ $0.holding }) { return false }
    return try inner.sendNow(pdu)
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? { try await inner.receive() }
  public func receiveIfReady() -> [UInt8]? { inner.receiveIfReady() }
  public var securityLevel: SecurityLevel { inner.securityLevel }
  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }
  public func close() { inner.close() }
  public var name: String { inner.name }
}
