import Runtime

/// What happened to a bond, for a device's log and events.
public enum BondEvent: Hashable, Sendable {
  /// Paired and bonded; `again` when it replaced a bond this device already had.
  case bonded(peer: String, level: SecurityLevel, again: Bool)
  /// The link was encrypted with the bond.
  case encrypted(peer: String)
  /// This device encrypted with its bond and the peer has no such key (it lost the bond).
  case peerLostKey(peer: String)
  /// The peer encrypted with a bond this device does not hold.
  case keyMissing(peer: String)
  /// The peer, bonded already, asked to pair again and this device refused.
  case repairingRefused(peer: String)
  /// This device asked to pair and the peer refused, saying why.
  case pairingRefused(peer: String, reason: String)
  /// The bond was forgotten here.
  case forgotten(peer: String)
  /// A pairing asks this device's user: to read a passkey to the peer, to type the one
  /// the peer shows (`BondBook.answer`), or to compare a number.
  case pairing(peer: String, PairingPrompt)

  /// The peer's address.
  public var peer: String {
    switch self {
    case .bonded(let peer, _, _), .encrypted(let peer), .peerLostKey(let peer), .keyMissing(let peer),
      .repairingRefused(let peer), .forgotten(let peer), .pairingRefused(let peer, _), .pairing(let peer, _):
      return peer
    }
  }

  /// The event's name in JSON events: bonded, encrypted, peerLostKey, keyMissing,
  /// repairingRefused, pairingRefused, forgotten, pairing.
  public var name: String {
    switch self {
    case .bonded: return "bonded"
    case .encrypted: return "encrypted"
    case .peerLostKey: return "peerLostKey"
    case .keyMissing: return "keyMissing"
    case .repairingRefused: return "repairingRefused"
    case .pairingRefused: return "pairingRefused"
    case .forgotten: return "forgotten"
    case .pairing: return "pairing"
    }
  }
}

/// What a pairing asks of a user (Vol 3 Part H 2.3.5.1).
public enum PairingPrompt: Hashable, Sendable {
  /// Passkey Entry: this device shows the passkey; the user types it on the peer.
  case showPasskey(UInt32)
  /// Passkey Entry: the peer shows a passkey; the user types it here.
  case enterPasskey
  /// Numeric Comparison: does the peer show this number?
  case compare(UInt32)

  /// `showPasskey`, `enterPasskey`, `compare`.
  public var name: String {
    switch self {
    case .showPasskey: return "showPasskey"
    case .enterPasskey: return "enterPasskey"
    case .compare: return "compare"
    }
  }

  public var number: UInt32? {
    switch self {
    case .showPasskey(let value), .compare(let value): return value
    case .enterPasskey: return nil
    }
  }
}

/// A user's answer to a `PairingPrompt`.
public enum PairingAnswer: Hashable, Sendable {
  /// The passkey the peer shows (0 to 999999).
  case passkey(UInt32)
  /// Whether the peer shows the same number.
  case confirm(Bool)
}

/// A passkey as a user types it: exactly six digits (000000 to 999999); nil otherwise.
public func passkey(digits text: String) -> UInt32? {
  guard text.count == 6, text.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
  return UInt32(text)
}

/// Six digits, leading zeros kept: how a passkey or a comparison value is shown.
public func sixDigits(_ value: UInt32) -> String {
  let digits = String(value % 1_000_000)
  return String(repeating: "0", count: 6 - digits.count) + digits
}

/// A device's bonds, as its user manages them (an iPhone's "Forget This Device"): the
/// simulated links' `Keyring` and the Bluetooth host's `BondStore` both are one.
public protocol BondBook: AnyObject, Sendable {
  /// The addresses of the peers this device has a bond with, sorted.
  var bondedPeers: [String] { get }
  /// Forgets the bond with `peer` (an address as `bondedPeers` gives it), or every bond when
  /// nil; returns the addresses forgotten. Throws when the change cannot be kept (a bond
  /// file that cannot be written).
  @discardableResult func forget(_ peer: String?) throws(BondBookError) -> [String]
  /// Calls `observer` with every bond event from now on (one observer; a later call
  /// replaces it).
  func observe(_ observer: @escaping @Sendable (BondEvent) -> Void)
  /// For a conformance harness: replaces the key of the bond with `peer` by one the peer
  /// never had, so that the next encryption meets a missing key, as when the peer has lost
  /// the bond. False without a bond with `peer`.
  @discardableResult func spoil(_ peer: String) throws(BondBookError) -> Bool
  /// Gives the pairing that waits for its user (with `peer`, or any) the user's answer;
  /// false when none waits for that kind of answer.
  func answer(_ answer: PairingAnswer, for peer: String?) -> Bool
  /// For a conformance harness: pairs afresh at most at `level` from now on (`.encrypted`:
  /// as a device that can neither show nor type a number, Just Works only); nil pairs as
  /// configured again. False when this device cannot.
  @discardableResult func limitPairing(to level: SecurityLevel?) -> Bool
  /// For a conformance harness: `armed`, the next pairing fails as when a user types a wrong
  /// passkey or says that the compared numbers differ (taken by the next pairing that
  /// starts, whatever its method); not `armed`, no pairing is spoiled. False when this device
  /// cannot.
  @discardableResult func spoilNextPairing(_ armed: Bool) -> Bool
  /// True while `spoilNextPairing`'s pairing has not yet come.
  var nextPairingSpoiled: Bool { get }
  /// How the pairing `spoilNextPairing` spoiled failed; nil until it has (and after arming
  /// again).
  var spoiledPairingEnd: SpoiledPairingEnd? { get }
}

/// A change to a device's bonds that could not be kept (a bond file that cannot be written),
/// saying what and where.
public struct BondBookError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// How a pairing a harness spoiled on purpose failed: which side sent Pairing Failed, with
/// which reason code (Vol 3 Part H 3.5.5), or that none was sent.
public enum SpoiledPairingEnd: Hashable, Sendable {
  /// The peer sent Pairing Failed.
  case peerFailed(reason: UInt8, text: String)
  /// This device sent Pairing Failed.
  case refused(reason: UInt8, text: String)
  /// No Pairing Failed: the SMP timeout, or the link went down.
  case unfinished(String)
}

/// A conformance harness's spoiled pairing (`BondBook.spoilNextPairing`), for the device
/// whose pairings it spoils: armed, taken by the next pairing that starts, and how that
/// pairing ended.
public final class SpoiledPairing: Sendable {
  private struct State {
    var armed = false
    /// A pairing took it and has not yet ended.
    var running = false
    var end: SpoiledPairingEnd?
  }
  private let state = Locked(State())

  public init() {}

  /// Arms (or disarms) the next pairing; forgets how an earlier one ended.
  public func arm(_ armed: Bool) { state.withLock { $0 = State(armed: armed) } }

  public var isArmed: Bool { state.withLock { $0.armed } }

  /// Taken by a pairing as it starts: true once per arming.
  public func take() -> Bool {
    state.withLock { state in
      defer { state.armed = false }
      state.running = state.running || state.armed
      return state.armed
    }
  }

  /// How the pairing that took it failed; ignored when none did.
  public func failed(_ end: SpoiledPairingEnd) {
    state.withLock { state in
      guard state.running else { return }
      state.running = false
      state.end = end
    }
  }

  public var end: SpoiledPairingEnd? { state.withLock { $0.end } }
}

extension BondBook {
  /// Pairings that never ask their user (the simulated links' Just Works) wait for nothing.
  public func answer(_ answer: PairingAnswer, for peer: String?) -> Bool { false }
  /// A device whose pairing cannot be held down.
  @discardableResult public func limitPairing(to level: SecurityLevel?) -> Bool { false }
  @discardableResult public func spoilNextPairing(_ armed: Bool) -> Bool { false }
  public var nextPairingSpoiled: Bool { false }
  public var spoiledPairingEnd: SpoiledPairingEnd? { nil }
}
