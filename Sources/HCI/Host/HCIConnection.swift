import ATT
import Runtime
import Sockets
import Synchronization
import Wire

/// The role of this host on a connection.
public enum LinkRole: Hashable, Sendable, CustomStringConvertible {
  case central
  case peripheral

  public var description: String { self == .central ? "central" : "peripheral" }
}

/// One LE connection of an `HCIHost`, and the `ATTBearer` of its ATT channel: one `send` is
/// one ATT PDU on L2CAP CID 0x0004, one `receive` one PDU from it. The LE signalling channel
/// (0x0005) is answered here; SMP (0x0006) goes to the host's `HCISecurityManager`. After
/// Disconnection Complete (or the host's end), `receive` returns nil and `send` throws
/// `.disconnected`. ATT PDUs reach a connection that runs on the host's event loop in place
/// (`handOver(to:)`), in the read of the chunk that completed them.
public final class HCIConnection: ATTBearer {
  /// What the controller said of the link's encryption: its loop's alone (the controller's
  /// events and the security manager, which run in the host's reads).
  private struct Encryption {
    var encrypted = false
    /// The key the link is encrypted with came from a pairing with MITM protection.
    var authenticatedKey = false
    /// The key the security manager last gave the controller, authenticated or not, until
    /// the controller reports encryption with it.
    var pendingKey: Bool?
  }

  private struct State {
    var open = true
    /// Disconnect has been sent.
    var disconnecting = false
    var reason: HCIStatus?
    /// Each caller of `waitForDisconnection` waiting now has its own inbox: any number may
    /// wait (the security manager and the application both do).
    var endWaiters: [Inbox<HCIStatus>] = []
  }

  public let handle: UInt16
  public let role: LinkRole
  public let peer: DeviceAddress
  /// This host's address on the connection (its random static address).
  public let local: DeviceAddress
  /// The LE Connection Complete event that opened the connection.
  public let event: LEConnectionComplete
  let host: HCIHost
  private let state = Locked(State())
  private let encryption: LoopBound<Encryption>
  /// `state.open`, readable without the lock: SMP reads it for every PDU it sends.
  private let up = Atomic<Bool>(true)
  /// ATT still flows: `state.open && !state.disconnecting`, readable without the lock, as
  /// every PDU each way checks it.
  private let attOpen = Atomic<Bool>(true)
  /// `securityLevel`, readable from any thread: the GATT server reads it for every request.
  /// Stored on the loop as the controller reports encryption.
  private let levelNow = Atomic<Int>(SecurityLevel.unencrypted.rawValue)
  private let att = Inbox<[UInt8]>()
  /// Who takes ATT PDUs in place (`handOver(to:)`); nil: they go to `att`. On the host's
  /// loop, where its reads are.
  private let receiver: LoopBound<(any PDUReceiver)?>

  init(host: HCIHost, event: LEConnectionComplete) {
    self.host = host
    self.event = event
    handle = event.connectionHandle
    role = event.role == 0x00 ? .central : .peripheral
    peer = DeviceAddress(type: event.peerAddressType, address: event.peerAddress)
    local = DeviceAddress(type: .random, address: host.state.withLock { $0.randomAddress })
    receiver = LoopBound(nil, on: host.stream.loop)
    encryption = LoopBound(Encryption(), on: host.stream.loop)
  }

  public var name: String { "\(host.stream.name) \(role) to \(peer.address)" }

  /// Encrypted once the controller reported Encryption Change on: authenticated when the key
  /// came from Passkey Entry or Numeric Comparison (or a bond they made), encrypted for a Just
  /// Works key; unencrypted again if it reports encryption off.
  public var securityLevel: SecurityLevel {
    SecurityLevel(rawValue: levelNow.load(ordering: .acquiring)) ?? .unencrypted
  }

  /// The security manager gives the controller a key (LE Enable Encryption, or the answer to
  /// an LTK request): the link's level once the controller reports encryption with it (on an
  /// encrypted link the old key's level holds until then). On the host's loop.
  func usesKey(authenticated: Bool) {
    encryption.value.pendingKey = authenticated
  }
  /// The peer's address as the bond store names it (its identity address once bonded), else
  /// the address it connected with: so `forget` finds its link, and bond events name it.
  public var peerName: String {
    ((host.security as? SMPSecurityManager)?.store?.name(of: peer)) ?? peer.address.description
  }

  public var peerAddress: String? { peerName }

  /// True until Disconnection Complete or the host's end.
  public var isConnected: Bool { up.load(ordering: .acquiring) }

  // MARK: ATTBearer

  /// Hands the PDU to the host, which queues it for the controller; never suspends.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    guard attOpen.load(ordering: .acquiring) else { throw .disconnected }
    guard pdu.count <= Int(UInt16.max) else { throw .tooLarge(size: pdu.count, limit: Int(UInt16.max)) }
    host.sendL2CAP(L2CAPFrame(channel: .att, payload: pdu), on: self)
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    await att.next()
  }

  public func receiveIfReady() -> [UInt8]? { att.nextIfReady() }

  /// Hands each ATT PDU over in place when `receiver` runs on the loop that reads the host's
  /// stream and this is called there; declines otherwise. Only on the loop, where the reads
  /// are, so no read runs meanwhile and what was queued before stays first.
  public func handOver(to receiver: (any PDUReceiver)?) -> Bool { self.receiver.handOver(to: receiver) }

  /// Pairs (or encrypts with a stored bond) through the host's security manager, and returns
  /// once the link is encrypted: as central it starts pairing, as peripheral it sends a
  /// Security Request.
  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    if securityLevel >= level { return securityLevel }
    guard isConnected else { throw .disconnected }
    return try await host.security.pair(level, on: self)
  }

  /// Disconnects with "remote user terminated connection" without waiting; `receive` returns
  /// nil at once.
  public func close() { startDisconnect(reason: .remoteUserTerminatedConnection) }

  /// Sends HCI_Disconnect with `reason` and returns without waiting (a failure is logged);
  /// `receive` returns nil at once. For the loop's reads, where waiting is not allowed.
  public func startDisconnect(reason: HCIStatus) {
    guard beginDisconnect() else { return }
    host.post(Disconnect(connectionHandle: handle, reason: reason), context: "disconnecting handle 0x\(hex16(handle))")
  }

  // MARK: Connection

  /// Sends HCI_Disconnect with `reason` (7.1.6 allows 0x05, 0x13-0x15, 0x1A, 0x29, 0x3B) and
  /// waits for Disconnection Complete; returns the reason the controller reports.
  @discardableResult
  public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection) async throws(HCIHostError) -> HCIStatus {
    if beginDisconnect() {
      try await host.start(Disconnect(connectionHandle: handle, reason: reason))
    }
    return try await waitForDisconnection()
  }

  /// Waits until the connection ends; returns the reason (`.connectionTerminatedByLocalHost`
  /// when the host itself closed).
  @discardableResult
  public func waitForDisconnection() async throws(HCIHostError) -> HCIStatus {
    let ended = Inbox<HCIStatus>()
    let known = state.withLock { state -> HCIStatus? in
      if state.reason == nil { state.endWaiters.append(ended) }
      return state.reason
    }
    if let known { return known }
    if let reason = await ended.next() { return reason }
    if let reason = state.withLock({ $0.reason }) { return reason }
    throw .cancelled
  }

  /// How many callers wait in `waitForDisconnection` now.
  public var disconnectionWaiters: Int { state.withLock { $0.endWaiters.count } }

  /// Sends one SMP PDU (CID 0x0006), for the security manager.
  public func sendSMP(_ pdu: [UInt8]) {
    guard up.load(ordering: .acquiring) else { return }
    host.sendL2CAP(L2CAPFrame(channel: .smp, payload: pdu), on: self)
  }

  /// Sends a command for this connection from the loop's reads, without waiting there
  /// (its answer only a later read can deliver); failures are logged.
  public func sendCommand<C: HCICommand>(_ command: C) { host.post(command) }

  /// Marks the bearer closed for ATT; false when it already was.
  private func beginDisconnect() -> Bool {
    let first = state.withLock { state -> Bool in
      guard state.open, !state.disconnecting else { return false }
      state.disconnecting = true
      attOpen.store(false, ordering: .releasing)
      return true
    }
    if first { att.close() }
    return first
  }

  // MARK: From the host's reads, on its loop

  func received(_ frame: L2CAPFrame) {
    switch frame.channel {
    case .att:
      guard attOpen.load(ordering: .acquiring) else { return }
      if let receiver = receiver.value {
        receiver.take(frame.payload)
      } else {
        att.push(frame.payload)
      }
    case .leSignaling:
      let judge = host.parameterJudge
      let outcome = LESignalingOutcome.answer(frame.payload, isCentral: role == .central) {
        judge?.rules($0) ?? []
      }
      if let problem = outcome.problem { host.logger.error("\(name): \(problem)") }
      if let request = outcome.request {
        if !request.broken.isEmpty {
          host.logger.info("\(name): connection parameter update refused: \(request.broken.joined(separator: "; "))")
        }
        judge?.report(name, request.parameters, request.broken)
      }
      if let reply = outcome.reply {
        host.sendL2CAP(L2CAPFrame(channel: .leSignaling, payload: reply.encoded), on: self)
      }
      if let parameters = outcome.connectionUpdate {
        sendCommand(LEConnectionUpdate(connectionHandle: handle, connection: parameters))
      }
    case .smp:
      host.security.received(frame.payload, on: self)
    default:
      host.logger.debug("\(name): L2CAP frame on unsupported \(frame.channel) dropped")
    }
  }

  func encryptionChanged(_ event: EncryptionChange) {
    encryption.modify { state in
      state.encrypted = event.status == .success && event.encryptionEnabled != 0
      if state.encrypted, let pending = state.pendingKey { state.authenticatedKey = pending }
      if !state.encrypted { state.authenticatedKey = false }
      state.pendingKey = nil
      let level: SecurityLevel = state.encrypted ? (state.authenticatedKey ? .authenticated : .encrypted) : .unencrypted
      levelNow.store(level.rawValue, ordering: .releasing)
    }
    host.security.encryptionChanged(event, on: self)
  }

  /// Encryption started again on an encrypted link (a new key, as when pairing again for MITM
  /// protection): the controller reports Encryption Key Refresh Complete instead of Encryption
  /// Change (Vol 4 Part E 7.7.39), told to the security manager as the change it is.
  func keyRefreshed(_ event: EncryptionKeyRefreshComplete) {
    encryptionChanged(
      EncryptionChange(
        status: event.status, connectionHandle: event.connectionHandle,
        encryptionEnabled: event.status == .success ? 1 : 0))
  }

  /// `reason` nil: the host closed.
  func didDisconnect(reason: HCIStatus?) {
    let reason = reason ?? .connectionTerminatedByLocalHost
    let waiters = state.withLock { state in
      state.open = false
      up.store(false, ordering: .releasing)
      attOpen.store(false, ordering: .releasing)
      state.reason = reason
      defer { state.endWaiters = [] }
      return state.endWaiters
    }
    att.close()
    for ended in waiters {
      ended.push(reason)
      ended.close()
    }
    host.security.disconnected(self)
  }
}

/// Handles the Security Manager channel (L2CAP CID 0x0006) and the controller's Long Term Key
/// requests. Called on the host's loop's thread (in its reads, and `deadline` and
/// `timerFired` from its timer's task there), except `pair`, from any task, and
/// `disconnected`, also from the thread that closes the host: it must not wait for the
/// controller or the peer (send with `HCIConnection.sendSMP` and `sendCommand`, which do
/// not wait).
public protocol HCISecurityManager: Sendable {
  /// One SMP PDU from the peer.
  func received(_ pdu: [UInt8], on connection: HCIConnection)
  /// The central started encryption; answer with the key or a negative reply.
  func longTermKeyRequested(_ request: LELongTermKeyRequest, on connection: HCIConnection)
  /// The controller's Encryption Change for the connection (its `securityLevel` already follows).
  func encryptionChanged(_ event: EncryptionChange, on connection: HCIConnection)
  /// The connection ended; forget its state.
  func disconnected(_ connection: HCIConnection)
  /// `pair` on the connection's bearer: returns the level reached once the link is encrypted.
  /// Unlike the other methods, this one is called by a task that may wait.
  func pair(_ level: SecurityLevel, on connection: HCIConnection) async throws(BearerError) -> SecurityLevel
  /// The earliest time the manager must be told (`timerFired`), on the host's clock
  /// (`HCIHost.clock`); nil when none. A manager that sets one wakes the host's timer
  /// (`HCIHost.wakeTimer(for:)`).
  var deadline: Duration? { get }
  /// The host's timer: the time is `now`, at or past `deadline`.
  func timerFired(now: Duration, on host: HCIHost)
}

extension HCISecurityManager {
  public var deadline: Duration? { nil }
  public func timerFired(now: Duration, on host: HCIHost) {}
  public func encryptionChanged(_ event: EncryptionChange, on connection: HCIConnection) {}
  public func disconnected(_ connection: HCIConnection) {}
  public func pair(_ level: SecurityLevel, on connection: HCIConnection) async throws(BearerError) -> SecurityLevel {
    throw .pairingFailed("this host's security manager does not pair")
  }
}

/// The security manager of a host that cannot pair yet: it answers Pairing Request and
/// Security Request with Pairing Failed "Pairing Not Supported" (0x05), so a peer does not
/// wait for its 30-second SMP timeout; a command it does not know with 0x07 and a malformed
/// one with 0x0A (Vol 3 Part H 3.5.5); and a Long Term Key request with the negative reply.
public struct PairingNotSupported: HCISecurityManager {
  public init() {}

  public func received(_ pdu: [UInt8], on connection: HCIConnection) {
    let reason: SMPReason
    do {
      switch try SMPPDU(decoding: pdu) {
      case .pairingRequest, .securityRequest: reason = .pairingNotSupported
      default: return
      }
    } catch {
      reason = error.reason == .unknownCode(pdu.first ?? 0) ? .commandNotSupported : .invalidParameters
      connection.host.logger.error("\(connection.name): \(error)")
    }
    connection.sendSMP(SMPPDU.pairingFailed(reason).encoded)
  }

  public func longTermKeyRequested(_ request: LELongTermKeyRequest, on connection: HCIConnection) {
    connection.sendCommand(LELongTermKeyRequestNegativeReply(connectionHandle: request.connectionHandle))
  }
}
