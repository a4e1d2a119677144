import ATT
import Runtime
import Synchronization
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
  /// With a keyring at both ends, security goes as between two ends that keep bonds
  /// (Keyring.swift).
  public static func pair(
    pairing: PairingPolicy = .accept(upTo: .authenticated), initialLevel: SecurityLevel = .unencrypted,
    keyrings: (central: Keyring?, peripheral: Keyring?) = (nil, nil)
  ) -> (central: MemoryBearer, peripheral: MemoryBearer) {
    let shared = MemoryBearer.Shared(level: initialLevel, pairing: pairing)
    let bonds = keyrings.central.flatMap { central in
      keyrings.peripheral.map { peripheral in
        Locked(MemoryBearer.Bonds(exchanges: [central, peripheral].map { BondExchange(keyring: $0, policy: pairing) }))
      }
    }
    let a = PDUQueue()
    let b = PDUQueue()
    return (
      MemoryBearer(inbox: a, outbox: b, shared: shared, name: "memory(central)", bonds: bonds, end: 0),
      MemoryBearer(inbox: b, outbox: a, shared: shared, name: "memory(peripheral)", bonds: bonds, end: 1)
    )
  }
}

/// One end of a `MemoryLink`.
public final class MemoryBearer: ATTBearer {
  final class Shared: Sendable {
    /// The link's level's raw value: it only rises. Atomic, as the GATT server reads it at
    /// every request.
    private let raw: Atomic<Int>
    let pairing: PairingPolicy
    init(level: SecurityLevel, pairing: PairingPolicy) {
      raw = Atomic(level.rawValue)
      self.pairing = pairing
    }

    var level: SecurityLevel { SecurityLevel(rawValue: raw.load(ordering: .acquiring))! }

    /// Raises the level to at least `level`; returns the level now.
    @discardableResult
    func raise(to level: SecurityLevel) -> SecurityLevel {
      SecurityLevel(rawValue: raw.max(level.rawValue, ordering: .acquiringAndReleasing).newValue)!
    }
  }

  /// Both ends' parts in bonded security, when both keep bonds.
  struct Bonds {
    var exchanges: [BondExchange]
  }

  private let inbox: PDUQueue
  private let outbox: PDUQueue
  private let shared: Shared
  public let name: String
  private let bonds: Locked<Bonds>?
  /// This end's index in `bonds`.
  private let end: Int

  init(inbox: PDUQueue, outbox: PDUQueue, shared: Shared, name: String, bonds: Locked<Bonds>? = nil, end: Int = 0) {
    self.inbox = inbox
    self.outbox = outbox
    self.shared = shared
    self.name = name
    self.bonds = bonds
    self.end = end
  }

  /// Queues the PDU for the peer; never waits.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    // `push` refuses (false) once the outbox is closed.
    if !outbox.push(pdu) { throw .disconnected }
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    await inbox.next()
  }

  public func receiveIfReady() -> [UInt8]? { inbox.nextIfReady() }

  public var securityLevel: SecurityLevel { shared.level }
  /// The peer's address once it named itself in a bonded exchange.
  public var peerAddress: String? { bonds?.withLock { $0.exchanges[end].peer } }

  /// True once either end closed the link.
  public var isClosed: Bool { outbox.isClosed }

  /// PDUs the peer has sent that this end has not yet received.
  public var queuedCount: Int { inbox.count }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    if inbox.isClosed { throw .disconnected }
    guard let bonds else { return try shared.pairingResult(level) }
    return try bondedPairing(level, bonds).get()
  }

  /// Carries the messages of a bonded exchange between the two ends at once, as the socket
  /// links carry them over the wire: this end's Security Request, the other's answer, and so on.
  private func bondedPairing(_ wanted: SecurityLevel, _ bonds: Locked<Bonds>) -> Result<SecurityLevel, BearerError> {
    var outcome: Result<SecurityLevel, BearerError>?
    var closing = false
    bonds.withLock { bonds in
      var message: ControlMessage? = bonds.exchanges[end].request(wanted)
      var receiver = 1 - end
      while let next = message {
        message = nil
        let level = shared.level
        if case .pairReject(let reason, let text) = next, !bonds.exchanges[receiver].handles(next) {
          // The answering end refused this end's request.
          outcome = .failure(.pairingFailed(LinkFraming.rejection(reason: reason, text: text)))
          break
        }
        for effect in bonds.exchanges[receiver].received(next, level: level) {
          switch effect {
          case .send(let reply): message = reply
          case .raise(let raised): shared.raise(to: raised)
          case .finish(let result): outcome = result
          case .disconnect: closing = true
          }
        }
        receiver = 1 - receiver
      }
    }
    if closing { close() }
    if let outcome { return outcome }
    // The answering end disconnected (its bond was unknown here, or the exchange ended
    // without a word for this end).
    return closing ? .failure(.disconnected) : .success(shared.level)
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
    return raise(to: wanted)
  }
}
