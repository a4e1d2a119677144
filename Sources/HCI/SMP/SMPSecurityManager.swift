import ATT
import Runtime
import Sockets
import Synchronization
import Wire

/// The Security Manager of an `HCIHost` (Vol 3 Part H): Just Works pairing in both roles, LE
/// legacy or Secure Connections (`SMPPairing` per connection), bonds kept in a `BondStore`, and
/// encryption with a stored bond instead of pairing again.
///
/// - Central: `pair` on the connection (or a peripheral's Security Request) starts LE
///   Enable Encryption with the bond's key if there is one, otherwise pairing.
/// - Peripheral: answers Pairing Request; `pair` sends a Security Request. The controller's
///   LTK request gets the key of the running pairing, or the bond's when EDIV and Rand match.
///
/// "The Security Manager Timer shall be reset when an L2CAP SMP command is queued for
/// transmission. ... If the timer reaches 30 seconds, the procedure shall be considered to
/// have failed ... no further SMP commands shall be sent over the L2CAP Security Manager
/// Channel" (3.4): the timer runs on the host's injected clock (its one timer tells the manager
/// the time), and a timed-out link stays silent.
///
/// Each link's pairing state belongs to the host's event loop, with no lock: the SMP PDUs,
/// the controller's key requests and encryption events (in the host's reads) and the
/// host's timer (a task on that loop) all reach it there. What comes from elsewhere goes there: `pair` (awaiting
/// the loop), a user's answer (`answer`, which waits for the loop), a link ended from
/// another thread. One manager serves one host.
public final class SMPSecurityManager: HCISecurityManager {
  public struct Options: Sendable {
    /// Set the SC bit: LE Secure Connections when the peer sets it too.
    public var secureConnections: Bool
    /// Ask for bonding, and keep bonds in the store.
    public var bonding: Bool
    /// The SMP timeout (30 s in the spec).
    public var timeout: Duration
    /// Central, when the peer answers its bond's key with "PIN or Key Missing": true
    /// disconnects (Authentication Failure) and keeps the bond until it is forgotten, as an
    /// iPhone does; false pairs again at once, the new bond replacing the old.
    public var disconnectOnKeyMissing: Bool
    /// Peripheral: pairs again with a central it already has a bond with (replacing the
    /// bond); false answers Pairing Failed, Unspecified Reason.
    public var acceptRepairing: Bool
    /// What this side can show and type (Vol 3 Part H 2.3.2): with MITM, the pairing
    /// method follows from it and the peer's.
    public var ioCapability: IOCapability
    /// Ask for MITM protection (the AuthReq bit), as an iPhone does.
    public var mitm: Bool
    /// Refuse a pairing that gives no MITM protection (Just Works), as an accessory that
    /// demands a passkey does.
    public var requireMITM: Bool
    /// Passkey Entry, when this side types: the passkey to answer with (nil refuses:
    /// Passkey Entry Failed).
    public var passkey: UInt32?
    /// Numeric Comparison: the answer to "does the peer show this number?" (nil or false
    /// refuses: Numeric Comparison Failed).
    public var confirmsNumbers: Bool?
    /// The reason sent when the peer's confirm value does not match (a wrong passkey):
    /// Confirm Value Failed, as the Core specification says (Vol 3 Part H 2.3.5.5,
    /// 2.3.5.6.3); a fault switch sends another.
    public var wrongPasskeyReason: SMPReason = .confirmValueFailed

    public init(
      secureConnections: Bool = true, bonding: Bool = true, timeout: Duration = .seconds(30),
      disconnectOnKeyMissing: Bool = false, acceptRepairing: Bool = true,
      ioCapability: IOCapability = .noInputNoOutput, mitm: Bool = false, requireMITM: Bool = false,
      passkey: UInt32? = nil, confirmsNumbers: Bool? = nil
    ) {
      self.secureConnections = secureConnections
      self.bonding = bonding
      self.timeout = timeout
      self.disconnectOnKeyMissing = disconnectOnKeyMissing
      self.acceptRepairing = acceptRepairing
      self.ioCapability = ioCapability
      self.mitm = mitm
      self.requireMITM = requireMITM
      self.passkey = passkey
      self.confirmsNumbers = confirmsNumbers
    }
  }

  private struct Link {
    var pairing: SMPPairing?
    /// Encrypting with a stored bond (no pairing running).
    var reencrypting = false
    /// Central: a level asked for while the link encrypted with a bond (a peripheral's
    /// Security Request with MITM meeting a Just Works bond's encryption already started):
    /// when the bond's key gives less, pairing follows the encryption.
    var neededAfterEncryption: SecurityLevel?
    /// Callers of `pair` waiting for the outcome.
    var waiters: [Inbox<Result<SecurityLevel, SMPPairingError>>] = []
    /// When the SMP timer runs out (nil: stopped). The host's timer tells the manager the time.
    var deadline: Duration?
    /// After an SMP timeout nothing more is sent on this link.
    var timedOut = false
    /// The pairing waits for its user's answer to this, on this connection.
    var prompt: (PairingPrompt, HCIConnection)?
    /// The running pairing is to go wrong on purpose (`BondStore.spoilNextPairing`, taken
    /// when it started).
    var spoiled = false
    /// The highest level a `pair` on this link has asked for: `.authenticated` asks for MITM
    /// protection and refuses a pairing without it.
    var wanted = SecurityLevel.unencrypted
  }

  public let options: Options
  /// Nil: pairings leave no bond.
  public let store: BondStore?
  private let clock: any EngineClock
  private let logger: Logger
  /// Each link's state, by handle, bound to the loop of the host the manager serves (set
  /// by the first connection it hears of).
  private let bound = AtomicLazyReference<LoopBound<[UInt16: Link]>>()
  /// Held down by a conformance harness: `.encrypted` pairs as NoInputNoOutput without MITM
  /// (a level's raw value; -1: not held).
  private let ceiling = Atomic<Int>(-1)

  /// - Parameters:
  ///   - store: where bonds are kept and looked up; nil pairs without keeping bonds.
  ///   - clock: bounds `pair`'s wait (inject a `ManualClock` in tests); the SMP timer itself
  ///     runs on the host's clock.
  public init(
    store: BondStore?, options: Options = Options(), clock: any EngineClock = SystemClock(), logger: Logger = .none
  ) {
    self.store = store
    self.options = options
    self.clock = clock
    self.logger = logger
    store?.takeAnswers { [weak self] answer, peer in self?.answer(answer, for: peer) ?? false }
    store?.takeLimits { [weak self] level in self?.limitPairing(to: level) }
  }

  /// Pairs afresh as a device that can neither show nor type (Just Works, no MITM asked or
  /// required) while `level` is `.encrypted`; nil pairs as the options say again. A
  /// conformance harness uses it to offer an accessory a link without MITM protection.
  public func limitPairing(to level: SecurityLevel?) {
    ceiling.store(level?.rawValue ?? -1, ordering: .releasing)
  }

  /// Whether pairings may give MITM protection now.
  private var mayAuthenticate: Bool {
    let held = ceiling.load(ordering: .acquiring)
    return held < 0 || held >= SecurityLevel.authenticated.rawValue
  }

  /// The links' state, on `connection`'s host's loop.
  private func links(_ connection: HCIConnection) -> LoopBound<[UInt16: Link]> {
    if let known = bound.load() { return known }
    let loop = connection.host.stream.loop
    let links = bound.storeIfNil(LoopBound([:], on: loop))
    precondition(links.loop === loop, "an SMPSecurityManager serves one host")
    return links
  }

  /// The user's answer for the pairing that waits for one (with `peer`, an address as
  /// `BondEvent` gives it, or any); false when none waits for that kind of answer.
  /// Called from any thread: it waits for the host's loop, where the pairings are.
  @discardableResult
  public func answer(_ answer: PairingAnswer, for peer: String? = nil) -> Bool {
    guard let links = bound.load() else { return false }
    return links.loop.runAndWait { [self] in answerOnLoop(answer, for: peer, links) }
  }

  private func answerOnLoop(_ answer: PairingAnswer, for peer: String?, _ links: LoopBound<[UInt16: Link]>) -> Bool {
    let found = { () -> HCIConnection? in
      for (_, link) in links.value.sorted(by: { $0.key < $1.key }) {
        guard let (prompt, connection) = link.prompt, peer == nil || connection.peerName == peer?.uppercased() else {
          continue
        }
        switch (prompt, answer) {
        case (.enterPasskey, .passkey), (.compare, .confirm): return connection
        default: continue
        }
      }
      return nil
    }()
    guard let connection = found else { return false }
    let spoiled = update(connection) { link -> Bool in
      link.prompt = nil
      return link.spoiled
    }
    switch answer {
    case .passkey(let value):
      let typed = spoiled ? Self.oneOff(value) : value
      perform(self.answer(connection) { $0.enterPasskey(typed) }, on: connection)
    case .confirm(let yes): perform(self.answer(connection) { $0.confirm(yes && !spoiled) }, on: connection)
    }
    return true
  }

  /// Asks the user through the store's observer, or answers from the options; without
  /// either, refuses.
  ///
  /// A pairing the store has spoiled (a conformance harness's `spoilNextPairing`) goes wrong
  /// as a user's mistake would: the passkey typed one off, the numbers said to differ, the
  /// passkey shown one off (so that the peer's user types a wrong one).
  private func ask(_ prompt: PairingPrompt, on connection: HCIConnection) {
    let spoiled = update(connection) { $0.spoiled }
    if spoiled { logger.info("\(connection.name): this pairing is spoiled on purpose (a wrong passkey or answer)") }
    switch prompt {
    case .enterPasskey where options.passkey != nil:
      let passkey = options.passkey.map { spoiled ? Self.oneOff($0) : $0 }
      perform(answer(connection) { $0.enterPasskey(passkey) }, on: connection)
    case .compare where options.confirmsNumbers != nil:
      let yes = (options.confirmsNumbers ?? false) && !spoiled
      perform(answer(connection) { $0.confirm(yes) }, on: connection)
    case .showPasskey(let value):
      let shown = spoiled ? Self.oneOff(value) : value
      store?.emit(.pairing(peer: connection.peerName, .showPasskey(shown)))
    default:
      guard let store, store.hasObserver else {
        logger.error("\(connection.name): the pairing asks its user (\(prompt.name)), and no one can answer")
        perform(
          answer(connection) { prompt == .enterPasskey ? $0.enterPasskey(nil) : $0.confirm(false) }, on: connection)
        return
      }
      update(connection) { $0.prompt = (prompt, connection) }
      store.emit(.pairing(peer: connection.peerName, prompt))
    }
  }

  /// This side's Pairing Request or Response: MITM asked when the options say so or the
  /// link needs an authenticated key.
  private func offer(mitm: Bool) -> PairingFeatures {
    guard mayAuthenticate else {
      return SMPPairing.features(
        ioCapability: .noInputNoOutput, mitm: false, secureConnections: options.secureConnections,
        bonding: options.bonding)
    }
    return SMPPairing.features(
      ioCapability: options.ioCapability, mitm: options.mitm || mitm, secureConnections: options.secureConnections,
      bonding: options.bonding)
  }

  /// Whether this side refuses a pairing without MITM protection.
  private func requiresMITM(_ asked: Bool) -> Bool { mayAuthenticate && (options.requireMITM || asked) }

  // MARK: HCISecurityManager

  public func received(_ pdu: [UInt8], on connection: HCIConnection) {
    let decoded: SMPPDU
    do {
      decoded = try SMPPDU(decoding: pdu)
    } catch {
      logger.error("\(connection.name): \(error)")
      let reason: SMPReason = error.reason == .unknownCode(pdu.first ?? 0) ? .commandNotSupported : .invalidParameters
      let actions = update(connection) { link -> [SMPAction] in
        guard !link.timedOut else { return [] }
        let ended = link.pairing.map { pairing in
          var pairing = pairing
          return pairing.abort(.refused(reason, "malformed \(error)"))
        }
        link.pairing = nil
        return [.send(.pairingFailed(reason))] + (ended ?? [])
      }
      perform(actions, on: connection)
      return
    }
    if case .securityRequest(let authReq) = decoded {
      securityRequested(authReq, on: connection)
      return
    }
    if case .pairingRequest = decoded, connection.role == .peripheral, !options.acceptRepairing,
      store?.bond(for: connection.peer) != nil
    {
      logger.info("\(connection.name): refusing to pair again with a peer this device has a bond with")
      // A pairing still running on this link ends with the refusal; after an SMP timeout
      // nothing more is sent (3.4).
      let timedOut = update(connection) { link -> Bool in
        link.pairing = nil
        return link.timedOut
      }
      guard !timedOut else { return }
      store?.emit(.repairingRefused(peer: connection.peerName))
      connection.sendSMP(SMPPDU.pairingFailed(.unspecifiedReason).encoded)
      finish(connection, .failure(.refused(.unspecifiedReason, "refused to pair again: it has a bond with this peer")))
      return
    }
    let actions = update(connection) { link -> [SMPAction] in
      guard !link.timedOut else { return [] }
      if case .pairingRequest = decoded, connection.role == .peripheral,
        link.pairing == nil || link.pairing?.phase == .complete || link.pairing?.phase == .failed
      {
        let mitm = link.wanted == .authenticated
        link.pairing = SMPPairing(
          role: .peripheral, local: connection.local, peer: connection.peer, offer: offer(mitm: mitm),
          requiresMITM: requiresMITM(mitm))
        link.spoiled = store?.spoiled.take() ?? false
        link.reencrypting = false
      }
      guard var pairing = link.pairing else {
        switch decoded {
        case .pairingFailed, .keypressNotification: return []
        case .pairingRequest: return [.send(.pairingFailed(.commandNotSupported))]
        default: return [.send(.pairingFailed(.unspecifiedReason))]
        }
      }
      let actions = pairing.receive(decoded)
      link.pairing = pairing
      return actions
    }
    perform(actions, on: connection)
  }

  public func longTermKeyRequested(_ request: LELongTermKeyRequest, on connection: HCIConnection) {
    let handle = request.connectionHandle
    let running = { () -> (UInt128, Bool)? in
      guard let pairing = links(connection).value[handle]?.pairing,
        let key = pairing.keyForRequest(ediv: request.encryptedDiversifier, rand: request.randomNumber)
      else { return nil }
      return (key, pairing.method?.authenticated ?? false)
    }()
    if let (key, authenticated) = running {
      connection.usesKey(authenticated: authenticated)
      connection.sendCommand(LELongTermKeyRequestReply(connectionHandle: handle, longTermKey: key))
      return
    }
    if let bond = store?.bond(for: connection.peer), bond.ediv == request.encryptedDiversifier,
      bond.rand == request.randomNumber
    {
      update(connection) { link in link.reencrypting = true }
      logger.info("\(connection.name): encrypting with the stored bond (\(bond.level))")
      connection.usesKey(authenticated: bond.authenticated)
      connection.sendCommand(LELongTermKeyRequestReply(connectionHandle: handle, longTermKey: bond.ltk))
      return
    }
    logger.info("\(connection.name): no key for EDIV \(request.encryptedDiversifier), negative reply")
    connection.sendCommand(LELongTermKeyRequestNegativeReply(connectionHandle: handle))
    store?.emit(.keyMissing(peer: connection.peerName))
  }

  public func encryptionChanged(_ event: EncryptionChange, on connection: HCIConnection) {
    let enabled = event.status == .success && event.encryptionEnabled != 0
    var finished: Result<SecurityLevel, SMPPairingError>?
    var pairAgain = false
    var lostKey = false
    var pairFor: SecurityLevel?
    let actions = update(connection) { link -> [SMPAction] in
      if var pairing = link.pairing, pairing.phase == .awaitingEncryption {
        let actions = pairing.encryptionChanged(status: event.status, enabled: event.encryptionEnabled != 0)
        link.pairing = pairing
        return actions
      }
      if link.reencrypting {
        link.reencrypting = false
        // "PIN or Key Missing": the peer has lost the bond; pair again (a new bond replaces
        // it), or, as an iPhone, give up on the link and keep the bond.
        lostKey = !enabled && connection.role == .central && event.status == HCIStatus.pinOrKeyMissing
        pairAgain = lostKey && !options.disconnectOnKeyMissing
        let needed = link.neededAfterEncryption
        link.neededAfterEncryption = nil
        if enabled, let needed, connection.securityLevel < needed {
          // The bond's key gives less than was asked meanwhile: pair for it (the callers of
          // `pair` wait for that pairing).
          pairFor = needed
        } else if pairAgain {
          // Pairing again for the peer that lost its key meets what was asked meanwhile too.
          pairFor = max(.encrypted, needed ?? .encrypted)
        } else {
          finished = enabled ? .success(connection.securityLevel) : .failure(.encryptionFailed(event.status))
        }
      }
      return []
    }
    perform(actions, on: connection)
    if case .success = finished { store?.emit(.encrypted(peer: connection.peerName)) }
    if lostKey { store?.emit(.peerLostKey(peer: connection.peerName)) }
    if let finished { finish(connection, finished) }
    if let pairFor {
      logger.info(
        pairAgain
          ? "\(connection.name): the peer has no key for the bond, pairing again"
          : "\(connection.name): the bond's key gives \(connection.securityLevel), \(pairFor) was asked: pairing")
      begin(on: connection, useBond: false, needs: pairFor)
    } else if lostKey {
      logger.info("\(connection.name): the peer has no key for the bond; disconnecting, the bond kept")
      connection.startDisconnect(reason: .authenticationFailure)
    }
  }

  /// Tells a harness how the pairing it spoiled failed.
  private func spoiledPairingFailed(_ error: SMPPairingError) {
    switch error {
    case .peerFailed(let reason): store?.spoiled.failed(.peerFailed(reason: reason.rawValue, text: "\(reason)"))
    case .refused(let reason, let detail):
      store?.spoiled.failed(.refused(reason: reason.rawValue, text: "\(reason): \(detail)"))
    default: store?.spoiled.failed(.unfinished(error.description))
    }
  }

  /// On the loop (Disconnection Complete), or from the thread that closes the host, in
  /// which case the link is forgotten on the loop.
  public func disconnected(_ connection: HCIConnection) {
    guard let links = bound.load() else { return }
    let forget: @Sendable () -> Void = { [self] in
      let link = links.modify { $0.removeValue(forKey: connection.handle) }
      if link?.spoiled == true { spoiledPairingFailed(.disconnected) }
      for waiter in link?.waiters ?? [] {
        waiter.push(.failure(.disconnected))
        waiter.close()
      }
    }
    if links.loop.inEventLoop { forget() } else { links.loop.execute(forget) }
  }

  /// How `pair` found the link.
  private enum PairStart {
    case reached
    case timedOut
    case disconnected
    case waiting
  }

  public func pair(_ level: SecurityLevel, on connection: HCIConnection) async throws(BearerError) -> SecurityLevel {
    if connection.securityLevel >= level { return connection.securityLevel }
    let waiter = Inbox<Result<SecurityLevel, SMPPairingError>>()
    // On the host's loop (in place when called there), where the link's state is and the
    // controller's Encryption Change is taken: a change that came since the look above is
    // seen there, one still to come finds the waiter.
    let started = await links(connection).loop.submit { [self] () -> PairStart in
      // Ended since the caller looked (its state forgotten, its handle free for another):
      // nothing of it is kept again.
      guard connection.isConnected else { return .disconnected }
      let (timedOut, reached) = update(connection) { link -> (Bool, Bool) in
        if connection.securityLevel >= level { return (false, true) }
        link.waiters.append(waiter)
        link.wanted = max(link.wanted, level)
        return (link.timedOut, false)
      }
      if reached { return .reached }
      if timedOut { return .timedOut }
      if connection.role == .central {
        begin(on: connection, needs: level, requireMITM: level == .authenticated)
        return .waiting
      }
      let ongoing = links(connection).value[connection.handle]?.pairing.map {
        $0.phase != .complete && $0.phase != .failed
      }
      if ongoing != true {
        var authReq: AuthReq = options.bonding ? .bonding : []
        if options.secureConnections { authReq.insert(.secureConnections) }
        if options.mitm || level == .authenticated { authReq.insert(.mitm) }
        connection.sendSMP(SMPPDU.securityRequest(authReq).encoded)
        armTimer(on: connection)
      }
      return .waiting
    }
    switch started {
    case .reached: return connection.securityLevel
    case .timedOut: throw .pairingFailed(SMPPairingError.timeout.description)
    case .disconnected: throw .disconnected
    case .waiting: break
    }
    // The SMP timer (on the host's clock) ends a pairing that stalls, and marks the link
    // timed out before its waiters hear of it; this wait's own bound, a second later, is only
    // a net for a host whose timer never comes. At the same moment, the two raced: a caller
    // could hear "timeout" while the link still took a Pairing Request.
    let deadline = clock.now + options.timeout + .seconds(1)
    let result = await withDeadline(deadline, on: clock) { await waiter.next() }
    switch result {
    case .success(let reached)? where reached < level:
      throw .pairingFailed("the link is \(reached), with a key made without MITM protection; \(level) needs one")
    case .success(let reached)?: return reached
    case .failure(let error)?: throw .pairingFailed(error.description)
    case nil:
      if !connection.isConnected { throw .disconnected }
      throw .pairingFailed(SMPPairingError.timeout.description)
    }
  }

  // MARK: Central

  /// "After receiving a Security Request, the master shall first check whether it has the
  /// required security information to enable encryption ... If this information is missing or
  /// does not meet the security properties requested by the slave, then the master shall
  /// initiate the pairing procedure" (Vol 3 Part H 2.4.6): a request for MITM protection is
  /// met by an authenticated bond only.
  private func securityRequested(_ authReq: AuthReq, on connection: HCIConnection) {
    guard connection.role == .central else {
      // A Security Request is the peripheral's; a central sending one is answered as unknown.
      connection.sendSMP(SMPPDU.pairingFailed(.commandNotSupported).encoded)
      return
    }
    let needs: SecurityLevel = authReq.contains(.mitm) ? .authenticated : .encrypted
    guard connection.securityLevel < needs else { return }
    begin(on: connection, needs: needs)
  }

  /// Encrypts with the bond if there is one (and `useBond`) whose key gives `needs`,
  /// otherwise starts pairing (asking for MITM protection for `.authenticated`, and refusing
  /// a pairing without it when `requireMITM`); nothing if either runs.
  private func begin(
    on connection: HCIConnection, useBond: Bool = true, needs: SecurityLevel, requireMITM: Bool = false
  ) {
    let bond = useBond ? store?.bond(for: connection.peer).flatMap { $0.level >= needs ? $0 : nil } : nil
    let actions = update(connection) { link -> [SMPAction] in
      if link.reencrypting {
        // Asked again while the link encrypts with a bond: once it has, pair if that was not
        // enough (encryptionChanged).
        link.neededAfterEncryption = max(link.neededAfterEncryption ?? needs, needs)
        return []
      }
      if link.timedOut { return [] }
      if let pairing = link.pairing, pairing.phase != .complete, pairing.phase != .failed { return [] }
      if let bond {
        link.reencrypting = true
        connection.usesKey(authenticated: bond.authenticated)
        return [.startEncryption(ltk: bond.ltk, ediv: bond.ediv, rand: bond.rand)]
      }
      let mitm = needs == .authenticated || link.wanted == .authenticated
      var pairing = SMPPairing(
        role: .central, local: connection.local, peer: connection.peer, offer: offer(mitm: mitm),
        requiresMITM: requiresMITM(requireMITM || link.wanted == .authenticated))
      let actions = pairing.start()
      link.pairing = pairing
      link.spoiled = store?.spoiled.take() ?? false
      return actions
    }
    if bond != nil, !actions.isEmpty { logger.info("\(connection.name): encrypting with the stored bond") }
    perform(actions, on: connection)
  }

  // MARK: Shell

  @discardableResult
  private func update<T>(_ connection: HCIConnection, _ body: (inout Link) -> T) -> T {
    links(connection).modify { links in body(&links[connection.handle, default: Link()]) }
  }

  private func perform(_ actions: [SMPAction], on connection: HCIConnection) {
    for action in actions {
      switch action {
      case .send(.pairingFailed(.confirmValueFailed)) where options.wrongPasskeyReason != .confirmValueFailed:
        connection.sendSMP(SMPPDU.pairingFailed(options.wrongPasskeyReason).encoded)
      case .send(let pdu):
        connection.sendSMP(pdu.encoded)
        if pdu.code != .pairingFailed { armTimer(on: connection) }
      case .startEncryption(let ltk, let ediv, let rand):
        // Started by the pairing (a bond's key was set by `begin`).
        let method = { () -> PairingMethod? in
          guard let link = links(connection).value[connection.handle], !link.reencrypting else { return nil }
          return link.pairing?.method
        }()
        if let method {
          connection.usesKey(authenticated: method.authenticated)
        }
        connection.sendCommand(
          LEStartEncryption(
            connectionHandle: connection.handle, randomNumber: rand, encryptedDiversifier: ediv, longTermKey: ltk))
      case .completed(let bond):
        if let bond, options.bonding, let store {
          let again = store.bond(for: connection.peer) != nil
          do {
            try store.save(bond)
            store.emit(.bonded(peer: connection.peerName, level: connection.securityLevel, again: again))
          } catch {
            logger.error("\(connection.name): paired, but the bond was not saved: \(error)")
          }
        }
        logger.info("\(connection.name): paired\(bond == nil ? "" : " and bonded")")
        finish(connection, .success(connection.securityLevel))
      case .failed(let error):
        logger.error("\(connection.name): pairing failed: \(error)")
        if case .peerFailed(let reason) = error {
          store?.emit(.pairingRefused(peer: connection.peerName, reason: "Pairing Failed \(reason)"))
        }
        finish(connection, .failure(error))
      case .displayPasskey(let value):
        logger.info("\(connection.name): passkey \(sixDigits(value)): type it on the peer")
        ask(.showPasskey(value), on: connection)
      case .requestPasskey:
        ask(.enterPasskey, on: connection)
      case .requestConfirmation(let value):
        logger.info("\(connection.name): numeric comparison: \(sixDigits(value))")
        ask(.compare(value), on: connection)
      }
    }
  }

  /// A passkey one off (a mistyped one), still six digits.
  static func oneOff(_ value: UInt32) -> UInt32 { (value % 1_000_000 + 1) % 1_000_000 }

  /// The running pairing's actions for the user's answer.
  private func answer(_ connection: HCIConnection, _ body: (inout SMPPairing) -> [SMPAction]) -> [SMPAction] {
    update(connection) { link -> [SMPAction] in
      guard var pairing = link.pairing else { return [] }
      let actions = body(&pairing)
      link.pairing = pairing
      return actions
    }
  }

  private func finish(_ connection: HCIConnection, _ result: Result<SecurityLevel, SMPPairingError>) {
    let (waiters, spoiled) = update(connection) { link in
      defer {
        link.waiters = []
        link.deadline = nil
        link.prompt = nil
        link.spoiled = false
      }
      return (link.waiters, link.spoiled)
    }
    if spoiled, case .failure(let error) = result { spoiledPairingFailed(error) }
    for waiter in waiters {
      waiter.push(result)
      waiter.close()
    }
  }

  /// (Re)starts the 30-second SMP timer of the link.
  private func armTimer(on connection: HCIConnection) {
    // On the host's clock, which tells the time (`timerFired`).
    let deadline = connection.host.clock.now + options.timeout
    update(connection) { link in link.deadline = deadline }
    connection.host.wakeTimer(for: deadline)
  }

  /// On the host's loop (its timer).
  public var deadline: Duration? { bound.load()?.value.values.compactMap(\.deadline).min() }

  public func timerFired(now: Duration, on host: HCIHost) {
    guard let links = bound.load() else { return }
    let due = links.value.filter { $0.value.deadline.map { $0 <= now } ?? false }.keys.sorted()
    for handle in due {
      if let connection = host.connection(handle) {
        expire(on: connection, now: now)
      } else {
        // Not the host's connection (any more): nothing to time out, and a deadline left in
        // the past would wake the timer at once, again and again.
        links.modify { links in
          if links[handle]?.deadline.map({ $0 <= now }) == true { links[handle]?.deadline = nil }
        }
      }
    }
  }

  private func expire(on connection: HCIConnection, now: Duration) {
    let actions = update(connection) { link -> [SMPAction] in
      // Re-armed since the timer looked (a PDU at the same moment): not due any more.
      guard link.deadline.map({ $0 <= now }) == true else { return [] }
      link.deadline = nil
      let running = link.pairing.map { $0.phase != .complete && $0.phase != .failed } ?? false
      guard running || !link.waiters.isEmpty else { return [] }
      link.timedOut = true
      guard var pairing = link.pairing else { return [.failed(.timeout)] }
      let actions = pairing.abort(.timeout)
      link.pairing = pairing
      return actions.isEmpty ? [.failed(.timeout)] : actions
    }
    perform(actions, on: connection)
  }
}
