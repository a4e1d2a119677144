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
  /// (Keyring.swift). With `executor` (an event loop) that both ends' connections run on,
  /// each end hands what the other sends from there to its connection in place, right
  /// after the sender's step (`ATTBearer.handOver(to:)`, `InPlaceExecutor`); what is sent
  /// from elsewhere is queued as on any other memory link.
  public static func pair(
    pairing: PairingPolicy = .accept(upTo: .authenticated), initialLevel: SecurityLevel = .unencrypted,
    keyrings: (central: Keyring?, peripheral: Keyring?) = (nil, nil), on executor: (any InPlaceExecutor)? = nil
  ) -> (central: MemoryBearer, peripheral: MemoryBearer) {
    let shared = MemoryBearer.Shared(level: initialLevel, pairing: pairing, executor: executor)
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
    /// The ends that have closed the link, a bit each (1 << end); read before each PDU
    /// handed over in place.
    private let closedEnds = Atomic(0)
    /// What both ends' connections run on, when the link hands PDUs over in place.
    let executor: (any InPlaceExecutor)?
    /// Each end's connection that takes PDUs in place (by end), touched only on `executor`'s
    /// thread.
    nonisolated(unsafe) private var receivers: [(any PDUReceiver)?] = [nil, nil]
    /// With `executor`: how many PDUs each end's queue may hold (counted before the push and
    /// after the pop, so never fewer than it holds). A PDU goes in place only behind an
    /// empty queue, so one sent from off the loop is never overtaken.
    private let queuedAt0 = Atomic(0)
    private let queuedAt1 = Atomic(0)
    /// PDUs sent on the loop, each for the connection of its `end`, to be handed over once
    /// the sender's step is over, in order; touched only on `executor`'s thread.
    nonisolated(unsafe) private var inFlight = FIFO<(end: Int, pdu: [UInt8])>()
    /// The call that hands `inFlight` over is queued or runs.
    nonisolated(unsafe) private var handing = false
    /// That call, made once: a closure made for each PDU would cost an allocation each.
    nonisolated(unsafe) private var handOverCall: (() -> Void)?

    init(level: SecurityLevel, pairing: PairingPolicy, executor: (any InPlaceExecutor)? = nil) {
      raw = Atomic(level.rawValue)
      self.pairing = pairing
      self.executor = executor
      handOverCall = { [weak self] in self?.handOverInFlight() }
    }

    /// Hands `pdu` to the connection of `end` once the step running now is over; on
    /// `executor`'s thread only.
    func handOver(_ pdu: [UInt8], to end: Int) {
      inFlight.append((end, pdu))
      if handing { return }
      handing = true
      executor?.runAfterCurrent(handOverCall!)
    }

    /// Hands over what was sent, and what that makes the receivers send, until none is left.
    private func handOverInFlight() {
      while let (end, pdu) = inFlight.popFirst() {
        // Sent before the link closed: it arrives unless its end closed meanwhile (nothing
        // reaches a connection after its own end closed), as a socket delivers what was
        // written before the close. A connection whose run has ended takes nothing.
        if !isClosed(by: end), let receiver = receivers[end] { receiver.take(pdu) }
      }
      handing = false
    }

    /// The connection of `end` that takes PDUs in place; on `executor`'s thread only.
    func receiver(_ end: Int) -> (any PDUReceiver)? {
      precondition(executor?.isCurrent == true, "a memory link's receiver read off its executor")
      return receivers[end]
    }

    /// Sets (or, with nil, clears) the connection of `end` that takes PDUs in place; on
    /// `executor`'s thread only.
    func setReceiver(_ end: Int, _ receiver: (any PDUReceiver)?) {
      precondition(executor?.isCurrent == true, "a memory link's receiver set off its executor")
      receivers[end] = receiver
    }

    /// Notes that `end` closed the link.
    func close(_ end: Int) { closedEnds.bitwiseOr(1 << end, ordering: .acquiringAndReleasing) }
    /// Either end has closed the link.
    var isClosed: Bool { closedEnds.load(ordering: .acquiring) != 0 }
    /// `end` has closed the link.
    func isClosed(by end: Int) -> Bool { closedEnds.load(ordering: .acquiring) & (1 << end) != 0 }

    /// Adds `delta` to the count of `end`'s queue, when the link hands PDUs over in place.
    func count(_ delta: Int, queuedAt end: Int) {
      guard executor != nil else { return }
      if end == 0 {
        queuedAt0.add(delta, ordering: .acquiringAndReleasing)
      } else {
        queuedAt1.add(delta, ordering: .acquiringAndReleasing)
      }
    }
    /// `end`'s queue holds nothing (nor is anything on its way into it).
    func isEmpty(queueAt end: Int) -> Bool {
      (end == 0 ? queuedAt0.load(ordering: .acquiring) : queuedAt1.load(ordering: .acquiring)) == 0
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

  /// Hands the PDU to the peer's connection right after this step, when the peer takes
  /// PDUs in place, this runs on the link's executor and nothing waits in the peer's queue;
  /// queues it for the peer otherwise. Never waits.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    let peerEnd = 1 - end
    if let executor = shared.executor, executor.isCurrent, shared.isEmpty(queueAt: peerEnd),
      shared.receiver(peerEnd) != nil
    {
      if shared.isClosed { throw .disconnected }
      shared.handOver(pdu, to: peerEnd)
      return
    }
    shared.count(1, queuedAt: peerEnd)
    // `push` refuses (false) once the outbox is closed.
    if !outbox.push(pdu) {
      shared.count(-1, queuedAt: peerEnd)
      throw .disconnected
    }
  }

  /// Hands each PDU the peer sends from the link's executor to `receiver` in place, when
  /// the link was made with that executor, `receiver` runs on it, and this is called there;
  /// declines otherwise.
  public func handOver(to receiver: (any PDUReceiver)?) -> Bool {
    guard let executor = shared.executor, executor.isCurrent else { return false }
    guard let receiver else {
      shared.setReceiver(end, nil)
      return true
    }
    guard receiver.runs(on: executor) else { return false }
    shared.setReceiver(end, receiver)
    return true
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    let pdu = await inbox.next()
    if pdu != nil { shared.count(-1, queuedAt: end) }
    return pdu
  }

  public func receiveIfReady() -> [UInt8]? {
    let pdu = inbox.nextIfReady()
    if pdu != nil { shared.count(-1, queuedAt: end) }
    return pdu
  }

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
    shared.close(end)
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
