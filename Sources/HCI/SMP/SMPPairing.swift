import ATT

/// Why a pairing procedure ended without keys.
public enum SMPPairingError: Error, Hashable, Sendable, CustomStringConvertible {
  /// This side refused and sent Pairing Failed with `reason`; `detail` says why.
  case refused(SMPReason, String)
  /// The peer sent Pairing Failed.
  case peerFailed(SMPReason)
  /// No SMP progress for 30 s (Vol 3 Part H 3.4); no SMP command may follow on this link.
  case timeout
  /// The controller reported Encryption Change with a failure (e.g. 0x06, the peer lost the key).
  case encryptionFailed(HCIStatus)
  /// The link went down first.
  case disconnected

  public var description: String {
    switch self {
    case .refused(let reason, let detail): return "sent Pairing Failed \(reason): \(detail)"
    case .peerFailed(let reason): return "the peer sent Pairing Failed \(reason)"
    case .timeout: return "SMP timeout: no answer within 30 s"
    case .encryptionFailed(let status): return "encryption failed: \(status)"
    case .disconnected: return "the link went down"
    }
  }
}

/// What the state machine asks its shell to do.
public enum SMPAction: Hashable, Sendable {
  /// One PDU to the peer on CID 0x0006.
  case send(SMPPDU)
  /// Central: HCI_LE_Enable_Encryption with this key.
  case startEncryption(ltk: UInt128, ediv: UInt16, rand: UInt64)
  /// Pairing and key distribution are done; the bond is nil unless both sides asked for bonding
  /// and a key that can encrypt the link again was exchanged.
  case completed(Bond?)
  /// The procedure ended without keys (any Pairing Failed to send comes first, as `.send`).
  case failed(SMPPairingError)
  /// Passkey Entry, this side shows: show the user this passkey (0 to 999999, six digits).
  case displayPasskey(UInt32)
  /// Passkey Entry, this side types: ask the user for the passkey the peer shows, and
  /// answer with `enterPasskey(_:)`.
  case requestPasskey
  /// Numeric Comparison: show the user this number (six digits) and ask whether the peer
  /// shows the same; answer with `confirm(_:)`.
  case requestConfirmation(UInt32)
}

/// One pairing procedure on one connection (Vol 3 Part H 2.3 to 2.4), as a plain value: each
/// input (a PDU, an Encryption Change, a Long Term Key request, the user's passkey or answer)
/// returns the actions to take. LE legacy pairing, or LE Secure Connections when both Pairing
/// Request and Response set the SC bit; Just Works, Passkey Entry (TK = the passkey in legacy
/// pairing, 20 rounds of a confirm value per passkey bit in SC) or Numeric Comparison as the
/// two sides' IO capabilities, OOB flags and MITM bits choose (`PairingMethod`). A side that
/// requires MITM protection refuses Just Works (Authentication Requirements). No I/O, no
/// clock: the 30-second timer belongs to the shell.
public struct SMPPairing: Sendable {
  public enum Phase: Hashable, Sendable {
    /// Peripheral: no Pairing Request yet; central: not started.
    case idle
    /// Central: Pairing Request sent.
    case awaitingResponse
    /// SC: the peer's Pairing Public Key is next.
    case awaitingPublicKey
    /// The peer's Pairing Confirm is next (Mconfirm, Sconfirm or Cb).
    case awaitingConfirm
    /// The peer's Pairing Random is next.
    case awaitingRandom
    /// SC: the peer's DHKey check (Ea or Eb) is next.
    case awaitingDHKeyCheck
    /// The key is known; the central starts encryption, the peripheral answers the LTK request.
    case awaitingEncryption
    /// Encrypted; receiving the peer's keys.
    case distributing
    /// Keys exchanged; `.completed` was returned.
    case complete
    /// Ended without keys; every later input is ignored.
    case failed
  }

  /// Central: initiator; peripheral: responder.
  public let role: LinkRole
  /// This side's address on the connection, and the peer's (c1, f5 and f6 hash them).
  public let local: DeviceAddress
  public let peer: DeviceAddress
  /// What this side offers: IO capability, AuthReq, key distribution.
  public let offer: PairingFeatures
  /// Refuse a pairing without MITM protection (Just Works) with Authentication
  /// Requirements. Asking for MITM (the AuthReq bit) is not requiring it: an iPhone asks,
  /// and pairs Just Works with an accessory that has no display.
  public let requiresMITM: Bool
  public private(set) var phase = Phase.idle
  /// The Pairing Request and Response as sent, once known.
  public private(set) var request: PairingFeatures?
  public private(set) var response: PairingFeatures?
  /// True once both sides set the SC bit.
  public private(set) var secureConnections = false
  /// The method, once both features are known.
  public private(set) var method: PairingMethod?
  /// Passkey Entry: the passkey shown or typed here, once known.
  private var passkey: UInt32?
  /// The step waiting for the user's passkey or answer.
  private var waitingForUser: UserStep?
  /// Numeric Comparison: the user said the numbers match.
  private var userConfirmed = false
  /// SC Passkey Entry: the round (0 to 19) and its bit.
  private var round = 0
  /// Numeric Comparison, responder: the DHKey check that came before the user's answer.
  private var heldCheck: UInt128?

  private enum UserStep: Hashable, Sendable {
    /// Legacy initiator: Mconfirm waits for TK.
    case legacyConfirm
    /// Legacy responder: Sconfirm waits for TK (Mconfirm is in `peerConfirm`).
    case legacyResponderConfirm
    /// SC Passkey Entry initiator: round 0 waits for the passkey.
    case firstRound
    /// SC Passkey Entry responder: Cai is in `peerConfirm`, its answer waits for the passkey.
    case roundAnswer
    /// Numeric Comparison: the DHKey check waits for the user's answer.
    case comparison
  }
  /// The STK (legacy) or LTK (SC) that encrypts the link, masked to the key size.
  public private(set) var key: UInt128?
  private var keySize: UInt8 = 16
  private var keyPair: P256KeyPair?
  private var peerPublicKey: P256PublicKey?
  private var dhKey: P256Value?
  private var localRandom: UInt128 = 0
  private var peerConfirm: UInt128 = 0
  private var peerRandom: UInt128 = 0
  private var macKey: UInt128 = 0
  /// Keys still to come from the peer.
  private var expected = KeyDistribution()
  private var received = ReceivedKeys()
  private var sent: (ltk: UInt128, ediv: UInt16, rand: UInt64)?

  private struct ReceivedKeys {
    var ltk: UInt128?
    var ediv: UInt16 = 0
    var rand: UInt64 = 0
    var irk: UInt128?
    var identity: DeviceAddress?
  }

  /// The keys this side distributes: its LTK with EDIV and Rand (legacy pairing only; an SC LTK
  /// is not distributed).
  public static let sentKeys: KeyDistribution = [.encKey]
  /// The keys this side takes from a peer: LTK, identity (IRK and address), and a CSRK that it
  /// accepts but does not keep.
  public static let acceptedKeys: KeyDistribution = [.encKey, .idKey, .signKey]

  /// The Pairing Request of a Just Works central: no input or output, bonding, SC if wanted;
  /// it sends `sentKeys` and asks for `acceptedKeys`.
  public static func justWorks(secureConnections: Bool, bonding: Bool = true) -> PairingFeatures {
    features(ioCapability: .noInputNoOutput, mitm: false, secureConnections: secureConnections, bonding: bonding)
  }

  /// The features of a side with `ioCapability`, asking for MITM protection or not.
  public static func features(ioCapability: IOCapability, mitm: Bool, secureConnections: Bool, bonding: Bool = true)
    -> PairingFeatures
  {
    var authReq: AuthReq = bonding ? .bonding : []
    if secureConnections { authReq.insert(.secureConnections) }
    if mitm { authReq.insert(.mitm) }
    return PairingFeatures(
      ioCapability: ioCapability, authReq: authReq, initiatorKeyDistribution: sentKeys,
      responderKeyDistribution: acceptedKeys)
  }

  /// - Parameters:
  ///   - local, peer: the addresses the connection uses (c1, f5 and f6 hash them).
  ///   - offer: IO capability, AuthReq and key size of this side (a central's Pairing Request).
  public init(
    role: LinkRole, local: DeviceAddress, peer: DeviceAddress, offer: PairingFeatures, requiresMITM: Bool = false
  ) {
    self.role = role
    self.local = local
    self.peer = peer
    self.offer = offer
    self.requiresMITM = requiresMITM
  }

  private var initiator: DeviceAddress { role == .central ? local : peer }
  private var responder: DeviceAddress { role == .central ? peer : local }
  /// This side's key distribution bits as negotiated, and the peer's.
  private var ours: KeyDistribution {
    guard let response else { return [] }
    let keys = role == .central ? response.initiatorKeyDistribution : response.responderKeyDistribution
    return keys.intersection(secureConnections ? [] : Self.sentKeys)
  }
  private var theirs: KeyDistribution {
    guard let response else { return [] }
    let keys = role == .central ? response.responderKeyDistribution : response.initiatorKeyDistribution
    return keys.intersection(Self.acceptedKeys.subtracting(secureConnections ? [.encKey] : []))
  }

  // MARK: Inputs

  /// Central: sends the Pairing Request.
  public mutating func start() -> [SMPAction] {
    guard role == .central, phase == .idle else { return [] }
    request = offer
    phase = .awaitingResponse
    return [.send(.pairingRequest(offer))]
  }

  /// One PDU from the peer (Security Request is the shell's business).
  public mutating func receive(_ pdu: SMPPDU) -> [SMPAction] {
    guard phase != .complete, phase != .failed else { return [] }
    if case .pairingFailed(let reason) = pdu {
      phase = .failed
      return [.failed(.peerFailed(reason))]
    }
    if case .keypressNotification = pdu { return [] }
    return attempt { (self: inout SMPPairing) throws(SMPPairingError) in try self.step(pdu) }
  }

  /// The passkey the user typed for `requestPasskey` (0 to 999999); nil when they gave up
  /// (Pairing Failed, Passkey Entry Failed).
  public mutating func enterPasskey(_ value: UInt32?) -> [SMPAction] {
    guard phase != .complete, phase != .failed, passkey == nil, case .passkeyEntry? = method else { return [] }
    return attempt { (self: inout SMPPairing) throws(SMPPairingError) in
      guard let value, value <= 999_999 else {
        throw .refused(.passkeyEntryFailed, value == nil ? "no passkey was entered" : "\(value ?? 0) is not six digits")
      }
      self.passkey = value
      return try self.resume()
    }
  }

  /// The user's answer to `requestConfirmation`: no ends the pairing (Pairing Failed, Numeric
  /// Comparison Failed).
  public mutating func confirm(_ matches: Bool) -> [SMPAction] {
    // Only once the number is shown: an answer before it would answer nothing.
    guard phase != .complete, phase != .failed, waitingForUser == .comparison else { return [] }
    return attempt { (self: inout SMPPairing) throws(SMPPairingError) in
      guard matches else { throw .refused(.numericComparisonFailed, "the user said the numbers differ") }
      self.userConfirmed = true
      return try self.resume()
    }
  }

  /// Runs `body`; a refusal ends the procedure with Pairing Failed.
  private mutating func attempt(_ body: (inout SMPPairing) throws(SMPPairingError) -> [SMPAction]) -> [SMPAction] {
    do throws(SMPPairingError) {
      return try body(&self)
    } catch {
      phase = .failed
      if case .refused(let reason, _) = error { return [.send(.pairingFailed(reason)), .failed(error)] }
      return [.failed(error)]
    }
  }

  /// The step that waited for the user, now that the answer is here.
  private mutating func resume() throws(SMPPairingError) -> [SMPAction] {
    guard let step = waitingForUser else { return [] }
    waitingForUser = nil
    switch step {
    case .legacyConfirm:
      localRandom = Self.random()
      phase = .awaitingConfirm
      return [.send(.pairingConfirm(try legacyConfirm(localRandom)))]
    case .legacyResponderConfirm:
      localRandom = Self.random()
      phase = .awaitingRandom
      return [.send(.pairingConfirm(try legacyConfirm(localRandom)))]
    case .firstRound, .roundAnswer:
      return try roundConfirm()
    case .comparison:
      return try compared()
    }
  }

  /// The controller's Encryption Change for this link.
  public mutating func encryptionChanged(status: HCIStatus, enabled: Bool) -> [SMPAction] {
    guard phase == .awaitingEncryption else { return [] }
    guard status == .success, enabled else {
      phase = .failed
      return [.failed(.encryptionFailed(status == .success ? .unspecifiedError : status))]
    }
    // Vol 3 Part H 3.6.1: the responder distributes its keys first, then the initiator.
    var actions: [SMPAction] = []
    if role == .peripheral { actions += distribution() }
    expected = theirs
    phase = .distributing
    return actions + finishIfDone()
  }

  /// Peripheral: the key for the controller's LTK request during this pairing (EDIV and Rand 0
  /// for an STK or an SC LTK), or nil.
  public func keyForRequest(ediv: UInt16, rand: UInt64) -> UInt128? {
    guard role == .peripheral, phase == .awaitingEncryption, ediv == 0, rand == 0 else { return nil }
    return key
  }

  /// Ends the procedure (timeout or disconnection) without sending anything.
  public mutating func abort(_ error: SMPPairingError) -> [SMPAction] {
    guard phase != .complete, phase != .failed else { return [] }
    phase = .failed
    return [.failed(error)]
  }

  // MARK: Steps

  private mutating func step(_ pdu: SMPPDU) throws(SMPPairingError) -> [SMPAction] {
    switch (phase, pdu) {
    case (.idle, .pairingRequest(let features)) where role == .peripheral:
      return try requested(features)
    case (.awaitingResponse, .pairingResponse(let features)):
      return try responded(features)
    case (.awaitingPublicKey, .pairingPublicKey(let key)):
      return try publicKey(key)
    case (.awaitingConfirm, .pairingConfirm(let value)) where waitingForUser == nil:
      peerConfirm = value
      if role == .central {
        phase = .awaitingRandom
        return [.send(.pairingRandom(localRandom))]
      }
      if secureConnections {
        // SC Passkey Entry responder: Cbi answers Cai, once the passkey is known.
        guard passkey != nil else {
          waitingForUser = .roundAnswer
          return []
        }
        return try roundConfirm()
      }
      // Legacy responder: Sconfirm follows Mconfirm, once TK is known.
      guard isPasskeyEntry == false || passkey != nil else {
        waitingForUser = .legacyResponderConfirm
        return []
      }
      localRandom = Self.random()
      phase = .awaitingRandom
      return [.send(.pairingConfirm(try legacyConfirm(localRandom)))]
    case (.awaitingRandom, .pairingRandom(let value)):
      peerRandom = value
      if secureConnections && isPasskeyEntry { return try roundRandom() }
      return secureConnections ? try scRandom() : try legacyRandom()
    case (.awaitingDHKeyCheck, .pairingDHKeyCheck(let value)) where heldCheck == nil:
      if method == .numericComparison && !userConfirmed {
        // The responder answers once its user has compared the numbers too.
        heldCheck = value
        return []
      }
      return try dhKeyCheck(value)
    case (.distributing, _):
      return try distributed(pdu)
    default:
      throw .refused(.unspecifiedReason, "unexpected \(pdu.code) while \(phase)")
    }
  }

  private mutating func requested(_ features: PairingFeatures) throws(SMPPairingError) -> [SMPAction] {
    request = features
    let response = PairingFeatures(
      ioCapability: offer.ioCapability, oobDataFlag: 0, authReq: offer.authReq,
      maxEncryptionKeySize: offer.maxEncryptionKeySize,
      initiatorKeyDistribution: features.initiatorKeyDistribution.intersection(Self.acceptedKeys),
      responderKeyDistribution: features.responderKeyDistribution.intersection(Self.sentKeys))
    self.response = response
    try negotiate()
    phase = secureConnections ? .awaitingPublicKey : .awaitingConfirm
    return [.send(.pairingResponse(response))] + passkeyActions()
  }

  private mutating func responded(_ features: PairingFeatures) throws(SMPPairingError) -> [SMPAction] {
    response = features
    // The responder may only clear distribution bits the initiator set (3.6.1).
    guard let request, features.initiatorKeyDistribution.isSubset(of: request.initiatorKeyDistribution),
      features.responderKeyDistribution.isSubset(of: request.responderKeyDistribution)
    else { throw .refused(.invalidParameters, "the Pairing Response asks for keys the request did not offer") }
    try negotiate()
    let user = passkeyActions()
    if secureConnections {
      phase = .awaitingPublicKey
      return [.send(.pairingPublicKey(try ownKeyPair().publicKey))] + user
    }
    guard !isPasskeyEntry || passkey != nil else {
      phase = .awaitingConfirm
      waitingForUser = .legacyConfirm
      return user
    }
    localRandom = Self.random()
    phase = .awaitingConfirm
    return user + [.send(.pairingConfirm(try legacyConfirm(localRandom)))]
  }

  private var isPasskeyEntry: Bool {
    if case .passkeyEntry? = method { return true }
    return false
  }

  /// Passkey Entry: this side shows a new passkey, or asks the user for one.
  private mutating func passkeyActions() -> [SMPAction] {
    guard case .passkeyEntry(let entry)? = method else { return [] }
    let shows = entry == .initiatorDisplays ? role == .central : entry == .responderDisplays && role == .peripheral
    guard shows else { return [.requestPasskey] }
    let value = UInt32.random(in: 0...999_999)
    passkey = value
    return [.displayPasskey(value)]
  }

  /// Key size and method, common to both roles once request and response are known.
  private mutating func negotiate() throws(SMPPairingError) {
    guard let request, let response else { return }
    keySize = min(request.maxEncryptionKeySize, response.maxEncryptionKeySize)
    guard keySize >= 7, request.maxEncryptionKeySize <= 16, response.maxEncryptionKeySize <= 16 else {
      throw .refused(.encryptionKeySize, "maximum encryption key size \(keySize) is outside 7...16")
    }
    secureConnections = request.authReq.contains(.secureConnections) && response.authReq.contains(.secureConnections)
    let chosen = PairingMethod.choose(request: request, response: response, secureConnections: secureConnections)
    method = chosen
    if chosen == .outOfBand { throw .refused(.oobNotAvailable, "no OOB data here") }
    if requiresMITM && !chosen.authenticated {
      throw .refused(
        .authenticationRequirements,
        "this side requires MITM protection, and the IO capabilities (\(request.ioCapability), "
          + "\(response.ioCapability)) allow Just Works only")
    }
  }

  private mutating func publicKey(_ key: P256PublicKey) throws(SMPPairingError) -> [SMPAction] {
    let pair = try ownKeyPair()
    // Vol 3 Part H 2.3.5.6.1: a public key that is not on the curve (an invalid-curve attack)
    // ends pairing; the same as the peer's own key (a reflection) too.
    guard key != pair.publicKey else { throw .refused(.invalidParameters, "the peer reflected our public key") }
    do {
      dhKey = try pair.dhKey(peer: key)
    } catch {
      throw .refused(.invalidParameters, "the peer's public key: \(error)")
    }
    peerPublicKey = key
    localRandom = Self.random()
    if isPasskeyEntry {
      // 20 rounds, the initiator's confirm value first (2.3.5.6.3).
      if role == .peripheral {
        phase = .awaitingConfirm
        return [.send(.pairingPublicKey(pair.publicKey))]
      }
      guard passkey != nil else {
        phase = .awaitingConfirm
        waitingForUser = .firstRound
        return []
      }
      return try roundConfirm()
    }
    if role == .central {
      phase = .awaitingConfirm
      return []
    }
    // Responder, Just Works: Cb = f4(PKbx, PKax, Nb, 0) (2.3.5.6.2).
    let confirm = try crypto { () throws(CryptoError) in
      try SMPToolbox.f4(u: pair.publicKey.x, v: key.x, x: localRandom, z: 0)
    }
    phase = .awaitingRandom
    return [.send(.pairingPublicKey(pair.publicKey)), .send(.pairingConfirm(confirm))]
  }

  private mutating func legacyRandom() throws(SMPPairingError) -> [SMPAction] {
    guard try legacyConfirm(peerRandom) == peerConfirm else {
      throw .refused(.confirmValueFailed, "the peer's confirm value does not match its random")
    }
    let (centralRandom, peripheralRandom) = role == .central ? (localRandom, peerRandom) : (peerRandom, localRandom)
    // STK = s1(TK, Srand, Mrand) (2.3.5.5).
    let tk = self.tk
    let stk = try crypto { () throws(CryptoError) in
      try SMPToolbox.s1(k: tk, r1: peripheralRandom, r2: centralRandom)
    }
    key = masked(stk)
    phase = .awaitingEncryption
    if role == .central { return [.startEncryption(ltk: masked(stk), ediv: 0, rand: 0)] }
    return [.send(.pairingRandom(localRandom))]
  }

  private mutating func scRandom() throws(SMPPairingError) -> [SMPAction] {
    guard let pair = keyPair, let peerKey = peerPublicKey, let dhKey else {
      throw .refused(.unspecifiedReason, "Pairing Random before the public keys")
    }
    var actions: [SMPAction] = []
    let (na, nb) = role == .central ? (localRandom, peerRandom) : (peerRandom, localRandom)
    if role == .central {
      let expected = try crypto { () throws(CryptoError) in
        try SMPToolbox.f4(u: peerKey.x, v: pair.publicKey.x, x: peerRandom, z: 0)
      }
      guard expected == peerConfirm else {
        throw .refused(.confirmValueFailed, "the peer's confirm value does not match its random")
      }
    } else {
      actions.append(.send(.pairingRandom(localRandom)))
    }
    try deriveKeys(na: na, nb: nb, dhKey: dhKey)
    if method == .numericComparison {
      // Va = g2(PKax, PKbx, Na, Nb) mod 10^6, shown on both sides (2.3.5.6.2).
      let (pka, pkb) = role == .central ? (pair.publicKey.x, peerKey.x) : (peerKey.x, pair.publicKey.x)
      let value = try crypto { () throws(CryptoError) in try SMPToolbox.g2(u: pka, v: pkb, x: na, y: nb) }
      waitingForUser = .comparison
      return actions + [.requestConfirmation(value % 1_000_000)]
    }
    if role == .central { actions += try initiatorCheck() }
    return actions
  }

  /// MacKey and LTK = f5(DHKey, Na, Nb, A, B); the DHKey check is next.
  private mutating func deriveKeys(na: UInt128, nb: UInt128, dhKey: P256Value) throws(SMPPairingError) {
    let (a, b) = (initiator, responder)
    let keys = try crypto { () throws(CryptoError) in try SMPToolbox.f5(w: dhKey, n1: na, n2: nb, a1: a, a2: b) }
    macKey = keys.macKey
    key = masked(keys.ltk)
    phase = .awaitingDHKeyCheck
  }

  /// The initiator's Ea = f6(MacKey, Na, Nb, rb, IOcapA, A, B).
  private func initiatorCheck() throws(SMPPairingError) -> [SMPAction] {
    let ea = try check(n1: localRandom, n2: peerRandom, ioCap: request?.ioCap ?? 0, a1: initiator, a2: responder)
    return [.send(.pairingDHKeyCheck(ea))]
  }

  /// Numeric Comparison, once the user said the numbers match: the initiator sends Ea; the
  /// responder checks an Ea that came before the answer.
  private mutating func compared() throws(SMPPairingError) -> [SMPAction] {
    if role == .central { return try initiatorCheck() }
    guard let held = heldCheck else { return [] }
    heldCheck = nil
    return try dhKeyCheck(held)
  }

  // MARK: SC Passkey Entry (2.3.5.6.3)

  /// This round's bit of the passkey, as f4's Z: 0x80 or 0x81.
  private var roundBit: UInt8 { 0x80 | UInt8((passkey ?? 0) >> UInt32(round) & 1) }

  /// The initiator opens a round with Cai = f4(PKax, PKbx, Nai, rai); the responder answers
  /// Cai with Cbi = f4(PKbx, PKax, Nbi, rbi).
  private mutating func roundConfirm() throws(SMPPairingError) -> [SMPAction] {
    guard let pair = keyPair, let peerKey = peerPublicKey else {
      throw .refused(.unspecifiedReason, "a passkey round before the public keys")
    }
    localRandom = Self.random()
    let (random, z) = (localRandom, roundBit)
    let confirm = try crypto { () throws(CryptoError) in
      try SMPToolbox.f4(u: pair.publicKey.x, v: peerKey.x, x: random, z: z)
    }
    phase = role == .central ? .awaitingConfirm : .awaitingRandom
    return [.send(.pairingConfirm(confirm))]
  }

  /// The peer's Ni: its confirm value must match (else the passkeys differ); the responder
  /// then reveals Nbi; after round 20 the keys follow from the last Na and Nb.
  private mutating func roundRandom() throws(SMPPairingError) -> [SMPAction] {
    guard let pair = keyPair, let peerKey = peerPublicKey, let dhKey else {
      throw .refused(.unspecifiedReason, "Pairing Random before the public keys")
    }
    let (random, z) = (peerRandom, roundBit)
    let expected = try crypto { () throws(CryptoError) in
      try SMPToolbox.f4(u: peerKey.x, v: pair.publicKey.x, x: random, z: z)
    }
    guard expected == peerConfirm else {
      throw .refused(.confirmValueFailed, "round \(round + 1) of the passkey: the peer's confirm value does not match")
    }
    var actions: [SMPAction] = role == .peripheral ? [.send(.pairingRandom(localRandom))] : []
    round += 1
    guard round == 20 else {
      if role == .central { return try roundConfirm() }
      phase = .awaitingConfirm
      return actions
    }
    let (na, nb) = role == .central ? (localRandom, peerRandom) : (peerRandom, localRandom)
    try deriveKeys(na: na, nb: nb, dhKey: dhKey)
    if role == .central { actions += try initiatorCheck() }
    return actions
  }

  private mutating func dhKeyCheck(_ value: UInt128) throws(SMPPairingError) -> [SMPAction] {
    let (na, nb) = role == .central ? (localRandom, peerRandom) : (peerRandom, localRandom)
    let (a, b) = (initiator, responder)
    // Ea = f6(MacKey, Na, Nb, rb, IOcapA, A, B), Eb = f6(MacKey, Nb, Na, ra, IOcapB, B, A); r = 0
    // for Just Works (2.3.5.6.5).
    let expected =
      role == .central
      ? try check(n1: nb, n2: na, ioCap: response?.ioCap ?? 0, a1: b, a2: a)
      : try check(n1: na, n2: nb, ioCap: request?.ioCap ?? 0, a1: a, a2: b)
    guard expected == value else { throw .refused(.dhKeyCheckFailed, "the peer's DHKey check value is wrong") }
    phase = .awaitingEncryption
    guard let key else { throw .refused(.unspecifiedReason, "no LTK") }
    if role == .central { return [.startEncryption(ltk: key, ediv: 0, rand: 0)] }
    let eb = try check(n1: nb, n2: na, ioCap: response?.ioCap ?? 0, a1: b, a2: a)
    return [.send(.pairingDHKeyCheck(eb))]
  }

  /// f6 with r = the passkey for Passkey Entry, 0 otherwise (2.3.5.6.5).
  private func check(n1: UInt128, n2: UInt128, ioCap: UInt32, a1: DeviceAddress, a2: DeviceAddress)
    throws(SMPPairingError) -> UInt128
  {
    let (macKey, r) = (self.macKey, isPasskeyEntry ? tk : 0)
    return try crypto { () throws(CryptoError) in
      try SMPToolbox.f6(w: macKey, n1: n1, n2: n2, r: r, ioCap: ioCap, a1: a1, a2: a2)
    }
  }

  // MARK: Key distribution (3.6)

  private mutating func distributed(_ pdu: SMPPDU) throws(SMPPairingError) -> [SMPAction] {
    switch pdu {
    case .encryptionInformation(let ltk) where expected.contains(.encKey) && received.ltk == nil:
      received.ltk = ltk
    case .centralIdentification(let ediv, let rand) where expected.contains(.encKey) && received.ltk != nil:
      received.ediv = ediv
      received.rand = rand
      expected.remove(.encKey)
    case .identityInformation(let irk) where expected.contains(.idKey) && received.irk == nil:
      received.irk = irk
    case .identityAddressInformation(let address) where expected.contains(.idKey) && received.irk != nil:
      received.identity = address
      expected.remove(.idKey)
    case .signingInformation where expected.contains(.signKey):
      expected.remove(.signKey)
    default:
      throw .refused(.unspecifiedReason, "unexpected \(pdu.code) during key distribution")
    }
    return finishIfDone()
  }

  /// This side's keys (legacy only): a fresh LTK, masked to the key size, with EDIV and Rand.
  /// A central sends the peripheral's own LTK, EDIV and Rand back instead. The central's key
  /// only matters if the roles reverse, and a peripheral that answers a later LTK request
  /// with the central's key instead of its own (Bumble 0.0.236 does) still finds the right one.
  private mutating func distribution() -> [SMPAction] {
    guard ours.contains(.encKey) else { return [] }
    let keys =
      role == .central && received.ltk != nil
      ? (ltk: received.ltk ?? 0, ediv: received.ediv, rand: received.rand)
      : (ltk: masked(Self.random()), ediv: UInt16.random(in: 0...UInt16.max), rand: UInt64.random(in: 1...UInt64.max))
    sent = keys
    return [
      .send(.encryptionInformation(ltk: keys.ltk)), .send(.centralIdentification(ediv: keys.ediv, rand: keys.rand)),
    ]
  }

  private mutating func finishIfDone() -> [SMPAction] {
    guard phase == .distributing, expected.isEmpty else { return [] }
    var actions: [SMPAction] = []
    if role == .central { actions += distribution() }
    phase = .complete
    return actions + [.completed(bond)]
  }

  /// The bond, once complete: for legacy pairing the peripheral's distributed LTK (the one a
  /// central encrypts with later), for SC the LTK itself.
  private var bond: Bond? {
    guard let request, let response, let key,
      request.authReq.rawValue & 0x03 == 0x01, response.authReq.rawValue & 0x03 == 0x01
    else { return nil }
    var bond: Bond
    if secureConnections {
      bond = Bond(peer: peer, ltk: key, ediv: 0, rand: 0, secureConnections: true, keySize: keySize)
    } else if role == .central, let ltk = received.ltk {
      bond = Bond(
        peer: peer, ltk: ltk, ediv: received.ediv, rand: received.rand, secureConnections: false, keySize: keySize)
    } else if role == .peripheral, let sent {
      bond = Bond(
        peer: peer, ltk: sent.ltk, ediv: sent.ediv, rand: sent.rand, secureConnections: false, keySize: keySize)
    } else {
      return nil
    }
    bond.identity = received.identity
    bond.irk = received.irk
    bond.authenticated = method?.authenticated ?? false
    return bond
  }

  // MARK: Helpers

  private mutating func ownKeyPair() throws(SMPPairingError) -> P256KeyPair {
    if let keyPair { return keyPair }
    let pair = try crypto { () throws(CryptoError) in try P256KeyPair.generate() }
    keyPair = pair
    return pair
  }

  /// TK (2.3.5.3): the passkey for Passkey Entry, 0 for Just Works.
  private var tk: UInt128 { UInt128(passkey ?? 0) }

  /// c1 with TK, the addresses of the connection.
  private func legacyConfirm(_ random: UInt128) throws(SMPPairingError) -> UInt128 {
    guard let request, let response else { throw .refused(.unspecifiedReason, "confirm before the features") }
    let (a, b, tk) = (initiator, responder, tk)
    return try crypto { () throws(CryptoError) in
      try SMPToolbox.c1(k: tk, r: random, preq: request, pres: response, initiator: a, responder: b)
    }
  }

  /// Keeps the least significant `keySize` bytes (Vol 3 Part H 2.3.4).
  private func masked(_ key: UInt128) -> UInt128 {
    keySize >= 16 ? key : key & ((1 << (8 * UInt128(keySize))) - 1)
  }

  private func crypto<T>(_ body: () throws(CryptoError) -> T) throws(SMPPairingError) -> T {
    do {
      return try body()
    } catch {
      throw .refused(.unspecifiedReason, "cryptography failed: \(error)")
    }
  }

  static func random() -> UInt128 {
    var generator = SystemRandomNumberGenerator()
    return UInt128(generator.next() as UInt64) << 64 | UInt128(generator.next() as UInt64)
  }
}

/// What a pairing leaves to encrypt the link again (Vol 3 Part H 2.4.4): the LTK with the EDIV
/// and Rand that identify it (both 0 for an SC LTK), and the peer's identity if it sent one.
public struct Bond: Hashable, Sendable {
  /// The address the peer connected with.
  public var peer: DeviceAddress
  /// The identity address from Identity Address Information.
  public var identity: DeviceAddress?
  public var irk: UInt128?
  public var ltk: UInt128
  public var ediv: UInt16
  public var rand: UInt64
  public var secureConnections: Bool
  public var keySize: UInt8
  /// Paired with MITM protection (Passkey Entry or Numeric Comparison): the key gives an
  /// authenticated link (security mode 1 level 3 or 4); a Just Works key an encrypted one.
  public var authenticated: Bool

  public init(
    peer: DeviceAddress, identity: DeviceAddress? = nil, irk: UInt128? = nil, ltk: UInt128, ediv: UInt16, rand: UInt64,
    secureConnections: Bool, keySize: UInt8 = 16, authenticated: Bool = false
  ) {
    self.peer = peer
    self.identity = identity
    self.irk = irk
    self.ltk = ltk
    self.ediv = ediv
    self.rand = rand
    self.secureConnections = secureConnections
    self.keySize = keySize
    self.authenticated = authenticated
  }

  /// The level a link encrypted with this bond's key has.
  public var level: SecurityLevel { authenticated ? .authenticated : .encrypted }
}
