/// A bearer whose PDUs are changed on their way: misbehaviour on the wire for fault switches
/// and tests, kept out of the engines' rules. The engine on it does what it always does; its
/// bytes change after it has sent them, or before it receives them.
public final class RewritingBearer: ATTBearer {
  public typealias Rewrite = @Sendable ([UInt8]) -> [UInt8]

  public let inner: any ATTBearer
  private let outgoing: Rewrite?
  private let incoming: Rewrite?

  public init(_ inner: any ATTBearer, outgoing: Rewrite? = nil, incoming: Rewrite? = nil) {
    self.inner = inner
    self.outgoing = outgoing
    self.incoming = incoming
  }

  public var name: String { inner.name }
  public var securityLevel: SecurityLevel { inner.securityLevel }
  public var peerAddress: String? { inner.peerAddress }

  public func send(_ pdu: [UInt8]) throws(BearerError) { try inner.send(outgoing?(pdu) ?? pdu) }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    try await inner.receive().map { incoming?($0) ?? $0 }
  }

  public func receiveIfReady() -> [UInt8]? { inner.receiveIfReady().map { incoming?($0) ?? $0 } }

  /// Passes the offer on (`ATTBearer.handOver(to:)`), rewriting each PDU handed over as
  /// `receive()` does.
  public func handOver(to receiver: (any PDUReceiver)?) -> Bool {
    guard let incoming else { return inner.handOver(to: receiver) }
    return handOver(through: inner, to: receiver) { incoming($0) }
  }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { try await inner.pair(level) }

  public func close() { inner.close() }
}
