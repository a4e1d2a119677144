// Bonds on the simulated links
//
// A device that keeps bonds on the simulated links (unix:, tcp:, memory) has a `Keyring`: its
// own address and, per peer address, the key and level of their bond. With a keyring at both
// ends, security follows LE's shape (Core Vol 3 Part H 2.4): the end that wants a protected
// link (the accessory) asks with a Security Request naming itself; the other end (the phone)
// encrypts with its bond if it has one, otherwise pairs and both keep a new bond. So the bond
// trouble of the field can happen here as over the air:
//
// - the phone forgot the bond, the accessory kept it: the phone pairs afresh and the
//   accessory, which still holds a bond with that phone, pairs again (replacing it) or
//   refuses (`acceptRepairing`);
// - the accessory forgot it, the phone kept it: the phone encrypts with a key the accessory
//   does not hold, the accessory answers Key Missing (HCI's "PIN or Key Missing", 0x06),
//   and the phone either disconnects and keeps its bond until its user forgets it, as an
//   iPhone does (`disconnectOnKeyMissing`), or forgets it and pairs again.
//
// The messages are in LinkFraming.swift; `BondExchange` is one end's part, driven by the
// socket links over the wire and by the in-memory links directly.
import ATT
import Foundation
import Runtime
import Wire

/// What a device remembers of its bonds on the simulated links: its address, and a key and
/// level per peer. Shared by every link of the device, so a bond outlives its connection.
public final class Keyring: BondBook {
  public struct Bond: Hashable, Sendable {
    public var key: UInt64
    public var level: SecurityLevel
    public init(key: UInt64, level: SecurityLevel) {
      self.key = key
      self.level = level
    }
  }

  /// How a device reacts in bond trouble.
  public struct Behaviour: Hashable, Sendable {
    /// When the peer answers Key Missing to this device's bond: true disconnects and keeps
    /// the bond until it is forgotten (an iPhone); false forgets it and pairs again.
    public var disconnectOnKeyMissing: Bool
    /// Pairs with a peer it already has a bond with, replacing the bond; false refuses.
    public var acceptRepairing: Bool
    /// The reason of the Pair Reject that answers a pairing whose passkey went wrong (a Bond
    /// Request with key 0): Confirm Value Failed, as the Core specification says (Vol 3
    /// Part H 2.3.5.5, 2.3.5.6.3); a fault switch sends another.
    public var wrongPasskeyReason: UInt8

    public init(
      disconnectOnKeyMissing: Bool = true, acceptRepairing: Bool = true,
      wrongPasskeyReason: UInt8 = LinkFraming.RejectReason.confirmValueFailed
    ) {
      self.disconnectOnKeyMissing = disconnectOnKeyMissing
      self.acceptRepairing = acceptRepairing
      self.wrongPasskeyReason = wrongPasskeyReason
    }
  }

  private struct State {
    package var bonds: [String: Bond] = [:]
    package var observer: (@Sendable (BondEvent) -> Void)?
    package var ceiling: SecurityLevel?
  }

  /// This device's address on the simulated links.
  public let address: String
  public let behaviour: Behaviour
  private let state = Locked(State())

  /// - Parameter address: this device's address; by default a random static address, as a
  ///   device picks one (Core Vol 6 Part B 1.3.2.1: the two top bits set).
  public init(address: String? = nil, behaviour: Behaviour = Behaviour()) {
    self.address = address ?? Keyring.randomAddress()
    self.behaviour = behaviour
  }

  /// Calls `observer` with every event from now on (one observer; a later call replaces it).
  /// It is called while a link holds its lock: it must not call back into the link.
  public func observe(_ observer: @escaping @Sendable (BondEvent) -> Void) {
    state.withLock { $0.observer = observer }
  }

  public func bond(with peer: String) -> Bond? { state.withLock { $0.bonds[peer] } }

  public var bondedPeers: [String] { state.withLock { $0.bonds.keys.sorted() } }

  @discardableResult
  public func forget(_ peer: String?) -> [String] {
    let forgotten = state.withLock { state -> [String] in
      let peers = peer.map { state.bonds[$0] == nil ? [] : [$0] } ?? state.bonds.keys.sorted()
      for peer in peers { state.bonds[peer] = nil }
      return peers
    }
    for peer in forgotten { emit(.forgotten(peer: peer)) }
    return forgotten
  }

  /// Keeps a bond with `peer` (replacing one), as pairing does.
  public func keep(_ bond: Bond, with peer: String) {
    state.withLock { $0.bonds[peer] = bond }
  }

  /// Drops the bond with `peer` without a `forgotten` event: the device itself replaces it.
  package func drop(_ peer: String) {
    state.withLock { $0.bonds[peer] = nil }
  }

  @discardableResult
  public func spoil(_ peer: String) -> Bool {
    state.withLock { state in
      guard let bond = state.bonds[peer] else { return false }
      state.bonds[peer] = Bond(key: bond.key &+ 1 | 1 << 63, level: bond.level)
      return true
    }
  }

  /// The highest level this device pairs afresh at, when a harness holds it down.
  package var ceiling: SecurityLevel? { state.withLock { $0.ceiling } }

  @discardableResult
  public func limitPairing(to level: SecurityLevel?) -> Bool {
    state.withLock { $0.ceiling = level }
    return true
  }

  /// A harness's spoiled pairing (`spoilNextPairing`).
  package let spoiled = SpoiledPairing()

  @discardableResult
  public func spoilNextPairing(_ armed: Bool) -> Bool {
    spoiled.arm(armed)
    return true
  }

  public var nextPairingSpoiled: Bool { spoiled.isArmed }
  public var spoiledPairingEnd: SpoiledPairingEnd? { spoiled.end }

  package func emit(_ event: BondEvent) {
    state.withLock { $0.observer }?(event)
  }

  package static func randomAddress() -> String {
    var bytes = (0..<6).map { _ in UInt8.random(in: 0...255) }
    bytes[0] |= 0xC0
    return bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
  }
}

/// One end's part in security on a link whose ends both have keyrings. The end that calls
/// `pair` sends a Security Request; the other drives, as a central does. Inputs are control
/// messages; the effects say what to send and what became of the link and of a pending
/// `pair`.
package struct BondExchange {
  package enum Effect: Equatable {
    case send(ControlMessage)
    /// The link's level rises to this (before anything is sent after it).
    case raise(SecurityLevel)
    /// The pending `pair` of this end ends so.
    case finish(Result<SecurityLevel, BearerError>)
    /// This end closes the link (an iPhone whose bond the peer lost).
    case disconnect
  }

  package let keyring: Keyring
  package let policy: PairingPolicy
  /// The bond this end offered with Bond Request, until the peer answers.
  private var offered: (peer: String, key: UInt64)?
  /// The level the peer's Security Request asked for.
  private var wanted = SecurityLevel.encrypted
  /// The peer's address, once a request named it.
  package private(set) var peer: String?

  package init(keyring: Keyring, policy: PairingPolicy) {
    self.keyring = keyring
    self.policy = policy
  }

  /// What this end sends to ask for `wanted`.
  package func request(_ wanted: SecurityLevel) -> ControlMessage {
    .securityRequest(wanted: UInt8(wanted.rawValue), address: keyring.address)
  }

  /// True when `message` belongs to a bonded exchange this end takes part in, rather than to
  /// the plain pairing of LinkFraming.swift.
  package func handles(_ message: ControlMessage) -> Bool {
    switch message {
    case .securityRequest, .encrypt, .encryptAccept, .keyMissing, .bondRequest: return true
    case .pairAccept, .pairReject: return offered != nil
    case .pairRequest: return false
    }
  }

  package mutating func received(_ message: ControlMessage, level: SecurityLevel) -> [Effect] {
    switch message {
    case .securityRequest(let raw, let address):
      peer = address
      if let asked = SecurityLevel(rawValue: Int(raw)) { wanted = asked }
      return answerSecurityRequest(raw, from: address, level: level)
    case .encrypt(let key, let address):
      peer = address
      guard let bond = keyring.bond(with: address), bond.key == key else {
        // What becomes of this end's request is the other end's choice: it gives up (Pair
        // Reject) or pairs again (Bond Request).
        keyring.emit(.keyMissing(peer: address))
        return [.send(.keyMissing)]
      }
      keyring.emit(.encrypted(peer: address))
      return [
        .raise(bond.level), .send(.encryptAccept(granted: bond.level)), .finish(.success(max(level, bond.level))),
      ]
    case .encryptAccept(let granted):
      if let peer { keyring.emit(.encrypted(peer: peer)) }
      return [.raise(granted)]
    case .keyMissing:
      guard let peer else { return [] }
      keyring.emit(.peerLostKey(peer: peer))
      if keyring.behaviour.disconnectOnKeyMissing {
        return [
          .send(.pairReject(reason: LinkFraming.RejectReason.keyMissing, text: Self.keyMissingText)), .disconnect,
        ]
      }
      keyring.drop(peer)
      return offer(wanted, to: peer, level: level)
    case .bondRequest(let raw, let key, let address):
      peer = address
      guard let wanted = SecurityLevel(rawValue: Int(raw)) else {
        let text = "the peer got an invalid level \(raw)"
        return [
          .send(.pairReject(reason: LinkFraming.RejectReason.invalidParameters, text: text)),
          .finish(.failure(.pairingFailed(text))),
        ]
      }
      let again = keyring.bond(with: address) != nil
      if again && !keyring.behaviour.acceptRepairing {
        keyring.emit(.repairingRefused(peer: address))
        return [
          .send(.pairReject(reason: LinkFraming.RejectReason.pairingNotSupported, text: Self.repairingRefusedText)),
          .finish(.failure(.pairingFailed("refused to pair again with \(address), with which it has a bond"))),
        ]
      }
      if key == Self.wrongPasskeyKey {
        // The peer's confirm value does not match: its user typed a wrong passkey.
        let text = Self.wrongPasskeyText
        return [
          .send(.pairReject(reason: keyring.behaviour.wrongPasskeyReason, text: text)),
          .finish(.failure(.pairingFailed(text))),
        ]
      }
      let granted = max(level, wanted)
      keyring.keep(Keyring.Bond(key: key, level: granted), with: address)
      keyring.emit(.bonded(peer: address, level: granted, again: again))
      return [.raise(granted), .send(.pairAccept(granted: granted)), .finish(.success(granted))]
    case .pairAccept(let granted):
      guard let offered else { return [] }
      self.offered = nil
      let again = keyring.bond(with: offered.peer) != nil
      keyring.keep(Keyring.Bond(key: offered.key, level: granted), with: offered.peer)
      keyring.emit(.bonded(peer: offered.peer, level: granted, again: again))
      return [.raise(granted)]
    case .pairReject(let reason, let text):
      if let offered {
        keyring.emit(.pairingRefused(peer: offered.peer, reason: text))
        if offered.key == Self.wrongPasskeyKey { keyring.spoiled.failed(.peerFailed(reason: reason, text: text)) }
      }
      offered = nil
      return []
    case .pairRequest:
      return []
    }
  }

  private mutating func answerSecurityRequest(_ raw: UInt8, from address: String, level: SecurityLevel) -> [Effect] {
    guard let wanted = SecurityLevel(rawValue: Int(raw)) else {
      return [
        .send(
          .pairReject(reason: LinkFraming.RejectReason.invalidParameters, text: "the peer got an invalid level \(raw)"))
      ]
    }
    if let bond = keyring.bond(with: address), bond.level >= wanted {
      return [.send(.encrypt(key: bond.key, address: keyring.address))]
    }
    return offer(wanted, to: address, level: level)
  }

  /// Pairs afresh: a Bond Request with a new key, unless this end's policy refuses.
  /// A keyring held down (`limitPairing`) offers no more than its ceiling, whatever was asked.
  private mutating func offer(_ asked: SecurityLevel, to address: String, level: SecurityLevel) -> [Effect] {
    let wanted = keyring.ceiling.map { min($0, asked) } ?? asked
    if case .pairReject(let reason, let text) = policy.answer(wanted: UInt8(wanted.rawValue), current: level) {
      return [.send(.pairReject(reason: reason, text: text))]
    }
    // A harness's spoiled pairing: as if its user typed a wrong passkey. The peer finds that
    // the confirm values do not match and answers Pair Reject.
    let key = keyring.spoiled.take() ? Self.wrongPasskeyKey : UInt64.random(in: 1...UInt64.max)
    offered = (address, key)
    return [.send(.bondRequest(wanted: UInt8(wanted.rawValue), key: key, address: keyring.address))]
  }

  package static let keyMissingText =
    "the phone encrypted with a bond this device does not hold (PIN or Key Missing); "
    + "forget this device on the phone to pair again"
  /// The key of a Bond Request whose pairing went wrong (a wrong passkey); never a bond's.
  package static let wrongPasskeyKey: UInt64 = 0
  package static let wrongPasskeyText =
    "the pairing failed: the confirm values do not match (the phone's user typed a wrong passkey)"
  package static let repairingRefusedText = "the accessory refuses to pair again: it already has a bond with this phone"
}
