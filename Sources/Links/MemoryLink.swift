import ATT
import Wire

/// What the responding side of a link does when the other side asks to pair.
public enum PairingPolicy: Hashable, Sendable {
  /// Pair, granting at most this level (Just Works gives `.encrypted`; a passkey or
  /// numeric comparison gives `.authenticated`).
  case accept(upTo: SecurityLevel)
  /// Refuse every pairing request.
  case reject
}

/// Two bearers joined in memory: what one sends, the other receives, in order. Both share
/// one security level and one closed state, as the two ends of a real connection do.
public enum MemoryLink {
  /// A connected pair: `central` (the phone, in ANCS) and `peripheral` (the watch).
  public static func pair(
    pairing: PairingPolicy = .accept(upTo: .authenticated), initialLevel: SecurityLevel = .unencrypted
  ) -> (central: MemoryBearer, peripheral: MemoryBearer) {
    let shared = MemoryBearer.Shared(level: initialLevel, pairing: pairing)
    let a = PDUQueue()
    let b = PDUQueue()
    return (
      MemoryBearer(inbox: a, outbox: b, shared: shared, name: "memory(central)"),
      MemoryBearer(inbox: b, outbox: a, shared: shared, name: "memory(peripheral)")
    )
  }
}

/// One end of a `MemoryLink`.
public final class MemoryBearer: ATTBearer {
  final class Shared: Sendable {
    let level: Locked<SecurityLevel>
    let pairing: PairingPolicy
    init(level: SecurityLevel, pairing: PairingPolicy) {
      self.level = Locked(level)
      self.pairing = pairing
    }
  }

  private let inbox: PDUQueue
  private let outbox: PDUQueue
  private let shared: Shared
  public let name: String

  init(inbox: PDUQueue, outbox: PDUQueue, shared: Shared, name: String) {
    self.inbox = inbox
    self.outbox = outbox
    self.shared = shared
    self.name = name
  }

  public func send(_ pdu: [UInt8]) async throws(BearerError) {
    _ = try sendNow(pdu)
  }

  /// Queues the PDU for the peer; never waits.
  public func sendNow(_ pdu: [UInt8]) throws(BearerError) -> Bool {
    // `push` refuses (false) once the outbox is closed.
    if !outbox.push(pdu) { throw .disconnected }
    return true
  }

  public func receive() async throws(BearerError) -> [UInt8]? {
    await inbox.next()
  }

  public func receiveIfReady() -> [UInt8]? { inbox.nextIfReady() }

  public var securityLevel: SecurityLevel { shared.level.withLock { $0 } }

  /// PDUs the peer has sent that this end has not yet received.
  public var queuedCount: Int { inbox.count }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    if inbox.isClosed { throw .disconnected }
    return try shared.pairingResult(level)
  }

  public func close() {
    inbox.close()
    outbox.close()
  }
}

extension MemoryBearer.Shared {
  func pairingResult(_ wanted: SecurityLevel) throws(BearerError) -> SecurityLevel {
    guard case .accept(let limit) = pairing else { throw .pairingFailed("the peer rejects pairing") }
    guard wanted <= limit else { throw .pairingFailed("the peer grants at most \(limit)") }
    return level.withLock { level in
      level = max(level, wanted)
      return level
    }
  }
}
