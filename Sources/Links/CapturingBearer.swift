import ATT

/// Wraps any bearer and records every ATT PDU it sends and receives in a btsnoop file
/// (`BtsnoopWriter`), from this end's point of view: what it sends is "sent by the host".
/// Everything else passes through unchanged. Closing the bearer flushes the capture; the
/// writer stays open for other bearers and closes with `BtsnoopWriter.close()` or when
/// released.
public final class CapturingBearer: ATTBearer {
  public let inner: any ATTBearer
  public let writer: BtsnoopWriter

  public init(_ inner: any ATTBearer, writer: BtsnoopWriter) {
    self.inner = inner
    self.writer = writer
  }

  public var name: String { inner.name }

  /// Recorded before it goes out, so a reply the peer sends at once never appears in the
  /// capture ahead of the request that caused it.
  public func send(_ pdu: [UInt8]) async throws(BearerError) {
    writer.record(pdu, direction: .sent)
    try await inner.send(pdu)
  }

  public func receive() async throws(BearerError) -> [UInt8]? {
    guard let pdu = try await inner.receive() else {
      writer.flush()
      return nil
    }
    writer.record(pdu, direction: .received)
    return pdu
  }

  public var securityLevel: SecurityLevel { inner.securityLevel }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    try await inner.pair(level)
  }

  public func close() {
    inner.close()
    writer.flush()
  }
}
