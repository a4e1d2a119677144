/// How well a link is protected, as the GATT server checks it.
public enum SecurityLevel: Int, Comparable, Sendable, CustomStringConvertible, CaseIterable {
  /// No encryption (LE security mode 1 level 1).
  case unencrypted = 1
  /// Encrypted with an unauthenticated key, e.g. Just Works (mode 1 level 2).
  case encrypted = 2
  /// Encrypted with an authenticated (MITM-protected) key (mode 1 level 3 or 4).
  case authenticated = 3

  public static func < (a: SecurityLevel, b: SecurityLevel) -> Bool { a.rawValue < b.rawValue }

  public var description: String {
    switch self {
    case .unencrypted: return "unencrypted"
    case .encrypted: return "encrypted"
    case .authenticated: return "authenticated"
    }
  }
}

/// Why a bearer operation failed.
public enum BearerError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The link is down; nothing more can be sent.
  case disconnected
  /// A PDU larger than the link can carry.
  case tooLarge(size: Int, limit: Int)
  /// The peer refused to pair, or pairing is not possible on this link.
  case pairingFailed(String)
  /// An operating-system error on a real or simulated link.
  case io(String)

  public var description: String {
    switch self {
    case .disconnected: return "the link is disconnected"
    case .tooLarge(let size, let limit): return "PDU of \(size) bytes exceeds the link's \(limit)"
    case .pairingFailed(let why): return "pairing failed: \(why)"
    case .io(let why): return why
    }
  }
}

/// Something that carries ATT PDUs between two devices: one `send` is one PDU, one
/// `receive` is one PDU, as on an L2CAP channel (CID 4). Links implement it; engines use it
/// and never see a concrete link.
public protocol ATTBearer: AnyObject, Sendable {
  /// Sends one PDU, at once: never blocks and never suspends, so an engine sends in the step
  /// that decided to, with no task and no queue of its own. A link puts the PDU on the wire
  /// or queues it behind what the peer has not yet read, in order; throws `.disconnected`
  /// once the link is down (nothing is sent), `.tooLarge` for a PDU it cannot carry.
  func send(_ pdu: [UInt8]) throws(BearerError)
  /// The next PDU from the peer, or nil once the link is closed (by either side). The
  /// project's links also return nil when the waiting task is cancelled; the link stays up
  /// and what arrives meanwhile is kept for the next call. It runs on the caller's executor
  /// (`nonisolated(nonsending)`, SE-0461): a connection's receive loop waits and resumes
  /// where it runs, with no hop to the global executor and back for every PDU.
  nonisolated(nonsending) func receive() async throws(BearerError) -> [UInt8]?
  /// The next PDU if the peer's PDUs are already queued here, taken without waiting; nil
  /// otherwise (then `receive()` says whether one comes or the link closed). Lets a receive
  /// loop drain a burst without an async call per PDU. Optional: the default is always nil.
  func receiveIfReady() -> [UInt8]?
  /// Offers to hand every PDU received from now on straight to `receiver` (a connection, or
  /// a wrapping bearer's `ReceiveStage` in front of one), in a plain call on the receiver's
  /// executor (`PDUReceiver.take(_:)`), rather than queueing it for `receive()`: no queue,
  /// lock or task between the link and the connection. Only a link whose reader runs on
  /// that executor can (a socket link read by the event loop the connection runs on; an
  /// in-memory link made on it); it answers true, and from then on `receive()` only waits
  /// for the link's end (or for what is sent from off the loop, for an in-memory link). What
  /// it queued before stays for `receiveIfReady()`, and the connection takes that first. The
  /// connection's `run()` calls it on the connection's executor, and again with nil when it
  /// returns, to let go. A wrapping bearer passes the offer on with a stage of its own in
  /// front. Optional: the default declines (false).
  func handOver(to receiver: (any PDUReceiver)?) -> Bool
  /// The link's current security level; the GATT server checks it on every access.
  var securityLevel: SecurityLevel { get }
  /// Pairs (or re-encrypts with a bond) to reach at least `level`. Returns the level reached.
  func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel
  /// Closes the link; both ends' `receive` then return nil.
  func close()
  /// A short description of the link, for logs ("memory", "unix:/tmp/phone.sock").
  var name: String { get }
  /// The peer's address, when the link knows it (a Bluetooth connection; a simulated link
  /// once the peer has named itself in a bonded exchange). Optional: the default is nil.
  var peerAddress: String? { get }
}

extension ATTBearer {
  /// Nothing is ever ready without `receive()`: links that queue what they receive say
  /// otherwise.
  public func receiveIfReady() -> [UInt8]? { nil }

  /// Declines: the link queues what it receives for `receive()`.
  public func handOver(to receiver: (any PDUReceiver)?) -> Bool { false }

  public var peerAddress: String? { nil }
}

/// What a link hands each PDU it receives to in place (`ATTBearer.handOver(to:)`): a
/// connection, or a wrapping bearer's stage in front of one.
public protocol PDUReceiver: AnyObject, Sendable {
  /// The serial executor the PDUs must reach it on: the connection's.
  nonisolated var unownedExecutor: UnownedSerialExecutor { get }
  /// Takes one PDU. Only on `unownedExecutor`, in a plain call from the link's reader.
  nonisolated func take(_ pdu: [UInt8])
}

extension PDUReceiver {
  /// True when the receiver runs on `executor` (a link's reader): then it may hand over.
  public func runs(on executor: AnyObject) -> Bool {
    unownedExecutor.asSerialExecutor().map { $0 as AnyObject === executor } ?? false
  }
}

/// A wrapping bearer's part of the way from a link to the receiver in front of which it
/// stands (`ATTBearer.handOver(to:)`): `pass` sees each PDU first, on the receiver's
/// executor, and hands on what it returns (nil: nothing).
public final class ReceiveStage: PDUReceiver {
  public let next: any PDUReceiver
  private let pass: @Sendable ([UInt8]) -> [UInt8]?

  public init(before next: any PDUReceiver, pass: @escaping @Sendable ([UInt8]) -> [UInt8]?) {
    self.next = next
    self.pass = pass
  }

  public var unownedExecutor: UnownedSerialExecutor { next.unownedExecutor }

  public func take(_ pdu: [UInt8]) {
    if let passed = pass(pdu) { next.take(passed) }
  }
}

extension ATTBearer {
  /// A wrapping bearer's `handOver(to:)`: offers `inner` to hand over to `receiver` through
  /// a stage where `pass` sees each PDU first, as this bearer's `receive()` would.
  public func handOver(
    through inner: any ATTBearer, to receiver: (any PDUReceiver)?, pass: @escaping @Sendable ([UInt8]) -> [UInt8]?
  ) -> Bool {
    inner.handOver(to: receiver.map { ReceiveStage(before: $0, pass: pass) })
  }
}
