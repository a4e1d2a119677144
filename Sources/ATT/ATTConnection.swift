import Wire

/// Why an ATT operation failed.
public enum ATTError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The peer answered with an Error Response.
  case errorResponse(ErrorResponse)
  /// No answer within the transaction timeout; the bearer has been closed.
  case timeout
  /// The link is down.
  case disconnected
  /// The peer answered with something that is not a valid answer to the request.
  case invalidResponse(String)
  /// A PDU larger than the negotiated ATT_MTU.
  case pduTooLarge(size: Int, mtu: Int)

  public var description: String {
    switch self {
    case .errorResponse(let response):
      return "\(response.errorCode) for \(response.requestOpcode) on handle \(response.handle)"
    case .timeout: return "ATT transaction timed out; the link was closed"
    case .disconnected: return "the link is disconnected"
    case .invalidResponse(let why): return "invalid response: \(why)"
    case .pduTooLarge(let size, let mtu): return "PDU of \(size) bytes exceeds ATT_MTU \(mtu)"
    }
  }

  /// The ATT error code when the peer answered with one.
  public var errorCode: ATTErrorCode? {
    if case .errorResponse(let response) = self { return response.errorCode }
    return nil
  }
}

/// What a server does with one incoming request or command.
public struct ATTServerReply: Sendable {
  /// The answer to send; nil for commands, which are never answered.
  public var response: ATTPDU?
  /// Runs after the answer has been sent (for example Data Source notifications that must
  /// follow the Control Point's Write Response).
  public var afterResponse: (@Sendable () async -> Void)?

  public init(_ response: ATTPDU?, afterResponse: (@Sendable () async -> Void)? = nil) {
    self.response = response
    self.afterResponse = afterResponse
  }
}

/// The server side of a connection: the GATT server implements it.
public protocol ATTServerHandler: Sendable {
  /// Handles a decoded request or command other than Exchange MTU (which the connection
  /// answers itself). Requests must be answered; a handler never throws, it answers with an
  /// Error Response instead.
  func handle(_ pdu: ATTPDU, on connection: ATTConnection) async -> ATTServerReply
}

/// A value the peer's server pushed: Handle Value Notification or Indication.
public struct ATTValueEvent: Hashable, Sendable {
  public var handle: UInt16
  public var value: [UInt8]
  public var isIndication: Bool

  public init(handle: UInt16, value: [UInt8], isIndication: Bool) {
    self.handle = handle
    self.value = value
    self.isIndication = isIndication
  }
}

/// One ATT bearer's protocol engine, both roles at once.
///
/// - Client: `request(_:)` sends one request and awaits its answer. "A client shall not send
///   a request until it has received the response to the previous one" (Vol 3 Part F 3.3.2):
///   later callers queue in order.
/// - Server: requests from the peer go to the `ATTServerHandler`, one at a time, and are
///   answered in order; Exchange MTU is answered here.
/// - Indications: at most one unconfirmed at a time, also queued.
/// - "A transaction not completed within 30 seconds shall time out" (Vol 3 Part F 3.3.3):
///   the transaction fails with `.timeout` and, since nothing more may be sent on the
///   bearer, the bearer is closed. The timeout is measured on the injected clock.
/// - Every PDU sent is checked against the negotiated ATT_MTU.
public final class ATTConnection: Sendable {
  public struct Options: Sendable {
    /// The largest PDU this side can receive, offered in Exchange MTU (23...517).
    public var localMTU: UInt16
    public var transactionTimeout: Duration

    public init(localMTU: UInt16 = 517, transactionTimeout: Duration = .seconds(30)) {
      self.localMTU = max(ATTConnection.defaultMTU, localMTU)
      self.transactionTimeout = transactionTimeout
    }
  }

  /// ATT_MTU before any exchange (LE).
  public static let defaultMTU: UInt16 = 23

  private enum Kind: Int {
    case request = 0
    case indication = 1
  }

  /// Who takes a transaction's answer: a caller suspended in `request`, or a callback
  /// (`startRequest`) run on the receive loop, which then also frees the turn.
  private enum Waiter {
    case continuation(CheckedContinuation<Result<ATTPDU, ATTError>, Never>)
    case callback(@Sendable (Result<ATTPDU, ATTError>) async -> Void)
  }

  private struct Pending {
    var requestOpcode: ATTOpcode
    var deadline: Duration
    var waiter: Waiter?
    var result: Result<ATTPDU, ATTError>?
  }

  private struct State {
    var mtu = Int(ATTConnection.defaultMTU)
    var mtuExchanged = false
    var closed: ATTError?
    var busy = [false, false]
    var queued: [[CheckedContinuation<Void, Never>]] = [[], []]
    var pending: [Pending?] = [nil, nil]
    var parkedWatchdog: CheckedContinuation<Void, Never>?
    var server: (any ATTServerHandler)?
    var onValue: (@Sendable (ATTValueEvent) async -> Void)?
  }

  public let bearer: any ATTBearer
  public let options: Options
  private let clock: any EngineClock
  private let logger: Logger
  private let state = Locked(State())

  public init(
    bearer: any ATTBearer, clock: any EngineClock = SystemClock(), options: Options = Options(),
    logger: Logger = .none
  ) {
    self.bearer = bearer
    self.clock = clock
    self.options = options
    self.logger = logger
  }

  /// The ATT_MTU in force.
  public var mtu: Int { state.withLock { $0.mtu } }

  /// The link's security level, as the GATT server checks it.
  public var securityLevel: SecurityLevel { bearer.securityLevel }

  /// Nil while connected; otherwise why the connection ended.
  public var closedReason: ATTError? { state.withLock { $0.closed } }

  /// Sets the handler for requests and commands from the peer.
  public func setServer(_ server: (any ATTServerHandler)?) { state.withLock { $0.server = server } }

  /// Sets the handler for notifications and indications from the peer. It runs on the
  /// receive loop, so nothing is dispatched until it returns: it may send, but must never
  /// wait for an answer (which only this loop could deliver). Indications are confirmed
  /// after it returns.
  public func setValueHandler(_ handler: (@Sendable (ATTValueEvent) async -> Void)?) {
    state.withLock { $0.onValue = handler }
  }

  // MARK: - Running

  /// Receives and dispatches PDUs until the link closes; then fails everything pending with
  /// `.disconnected`. Run it in its own task.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.watchdog() }
      while true {
        // What is already queued is taken without an async call (a burst of notifications).
        var received = bearer.receiveIfReady()
        if received == nil { received = try? await bearer.receive() }
        guard let bytes = received else { break }
        await dispatch(bytes)
      }
      shutdown(.disconnected)
      group.cancelAll()
    }
  }

  /// Closes the bearer; `run()` then returns.
  public func close() {
    bearer.close()
    shutdown(.disconnected)
  }

  private func shutdown(_ reason: ATTError) {
    let (waiters, queued, watchdog) = state.withLock {
      state -> ([Waiter], [CheckedContinuation<Void, Never>], CheckedContinuation<Void, Never>?) in
      if state.closed == nil { state.closed = reason }
      var waiters: [Waiter] = []
      for kind in 0..<2 {
        if var pending = state.pending[kind] {
          if let waiter = pending.waiter {
            waiters.append(waiter)
            state.pending[kind] = nil
          } else if pending.result == nil {
            pending.result = .failure(reason)
            state.pending[kind] = pending
          }
        }
      }
      let queued = state.queued.flatMap { $0 }
      state.queued = [[], []]
      defer { state.parkedWatchdog = nil }
      return (waiters, queued, state.parkedWatchdog)
    }
    for waiter in waiters {
      switch waiter {
      case .continuation(let continuation): continuation.resume(returning: .failure(reason))
      case .callback(let callback): Task { await callback(.failure(reason)) }
      }
    }
    for waiter in queued { waiter.resume() }
    watchdog?.resume()
  }

  // MARK: - Sending

  /// Sends an encoded PDU after checking it against ATT_MTU.
  @inline(__always)
  public func send(_ pdu: ATTPDU) async throws(ATTError) {
    try await sendBytes(pdu.encoded())
  }

  /// Checks `bytes` against the connection's state and ATT_MTU and sends them.
  ///
  /// Inlined into its callers: when the bearer sends at once (`sendNow`, the project's
  /// links) no async call is made, which saves several async frames and executor checks on
  /// every PDU.
  @inline(__always)
  private func sendBytes(_ bytes: [UInt8]) async throws(ATTError) {
    if try !sendBytesNow(bytes) { try await sendBytesLater(bytes) }
  }

  /// Checks `bytes`, then sends them if the bearer can without waiting. False when it
  /// cannot: checked but not sent, for `sendBytesLater`.
  private func sendBytesNow(_ bytes: [UInt8]) throws(ATTError) -> Bool {
    let (mtu, closed) = state.withLock { ($0.mtu, $0.closed) }
    if let closed { throw closed }
    if bytes.count > mtu { throw .pduTooLarge(size: bytes.count, mtu: mtu) }
    if logger.enabled(.trace) { logger.trace("\(bearer.name) > \(Hex.encode(bytes))") }
    do {
      return try bearer.sendNow(bytes)
    } catch {
      throw .disconnected
    }
  }

  /// Sends checked bytes through the bearer's async `send`.
  private func sendBytesLater(_ bytes: [UInt8]) async throws(ATTError) {
    do {
      try await bearer.send(bytes)
    } catch {
      throw .disconnected
    }
  }

  /// Sends a request and returns the peer's answer. An Error Response throws
  /// `.errorResponse`; an answer of the wrong kind throws `.invalidResponse`.
  public func request(_ pdu: ATTPDU) async throws(ATTError) -> ATTPDU {
    try await transact(.request, pdu)
  }

  /// Sends a request without waiting for its answer: returns once it is on the wire.
  /// `onAnswer` runs exactly once: on the receive loop when the answer comes, before the PDUs
  /// that follow it are dispatched; or with the error when the request could not be sent,
  /// timed out, or the link closed. Lets an engine that lives on the receive loop keep its
  /// order without a task switch per request.
  ///
  /// With `waitForTurn` false it returns false at once, sending nothing and never calling
  /// `onAnswer`, when another request is outstanding: code on the receive loop must not wait
  /// for a turn that only the receive loop can free.
  @discardableResult
  public func startRequest(
    _ pdu: ATTPDU, waitForTurn: Bool = true, onAnswer: @escaping @Sendable (Result<ATTPDU, ATTError>) async -> Void
  ) async -> Bool {
    if waitForTurn {
      do {
        try await acquire(.request)
      } catch {
        await onAnswer(.failure(error))
        return true
      }
    } else {
      let turn = state.withLock { state -> Bool in
        if state.closed != nil || state.busy[Kind.request.rawValue] { return false }
        state.busy[Kind.request.rawValue] = true
        return true
      }
      if !turn { return false }
    }
    let deadline = clock.now + options.transactionTimeout
    let watchdog = state.withLock { state -> CheckedContinuation<Void, Never>? in
      state.pending[Kind.request.rawValue] = Pending(
        requestOpcode: pdu.opcode, deadline: deadline, waiter: .callback(onAnswer))
      defer { state.parkedWatchdog = nil }
      return state.parkedWatchdog
    }
    watchdog?.resume()
    do {
      try await sendBytes(pdu.encoded())
    } catch {
      // Unless a disconnection already answered it, answer with the send's failure.
      let mine = state.withLock { state -> Bool in
        guard state.pending[Kind.request.rawValue]?.waiter != nil else { return false }
        state.pending[Kind.request.rawValue] = nil
        return true
      }
      if mine {
        release(.request)
        await onAnswer(.failure(error))
      }
    }
    return true
  }

  /// Sends a Handle Value Notification, cutting the value to ATT_MTU - 3 bytes ("If the
  /// attribute value is longer than (ATT_MTU-3) octets, then only the first (ATT_MTU-3)
  /// octets of this attributes value can be sent in a notification", Vol 3 Part F 3.4.7.1).
  public func notify(handle: UInt16, value: [UInt8]) async throws(ATTError) {
    try await send(.handleValueNotification(HandleValueNotification(handle: handle, value: fitted(value))))
  }

  /// Sends a Handle Value Indication and awaits its confirmation.
  public func indicate(handle: UInt16, value: [UInt8]) async throws(ATTError) {
    _ = try await transact(
      .indication, .handleValueIndication(HandleValueIndication(handle: handle, value: fitted(value))))
  }

  /// A value cut to the ATT_MTU - 3 bytes a notification or indication can carry.
  private func fitted(_ value: [UInt8]) -> [UInt8] {
    let room = mtu - 3
    return value.count > room ? Array(value[..<room]) : value
  }

  /// Client side of Exchange MTU: offers `options.localMTU`; returns the ATT_MTU in force.
  @discardableResult
  public func exchangeMTU() async throws(ATTError) -> Int {
    let answer = try await request(.exchangeMTURequest(ExchangeMTURequest(clientRxMTU: options.localMTU)))
    guard case .exchangeMTUResponse(let response) = answer else {
      throw .invalidResponse("expected Exchange MTU Response")
    }
    return adoptMTU(peer: response.serverRxMTU)
  }

  /// ATT_MTU = min(client Rx MTU, server Rx MTU), never below 23 (Vol 3 Part F 3.4.2.2).
  private func adoptMTU(peer: UInt16) -> Int {
    let agreed = Int(max(Self.defaultMTU, min(options.localMTU, peer)))
    state.withLock {
      $0.mtu = agreed
      $0.mtuExchanged = true
    }
    logger.debug("\(bearer.name): ATT_MTU \(agreed)")
    return agreed
  }

  // MARK: - Transactions

  private func transact(_ kind: Kind, _ pdu: ATTPDU) async throws(ATTError) -> ATTPDU {
    try await acquire(kind)
    defer { release(kind) }
    let deadline = clock.now + options.transactionTimeout
    let watchdog = state.withLock { state -> CheckedContinuation<Void, Never>? in
      state.pending[kind.rawValue] = Pending(requestOpcode: pdu.opcode, deadline: deadline)
      defer { state.parkedWatchdog = nil }
      return state.parkedWatchdog
    }
    watchdog?.resume()
    do {
      try await sendBytes(pdu.encoded())
    } catch {
      state.withLock { $0.pending[kind.rawValue] = nil }
      throw error
    }
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ATTPDU, ATTError>, Never>) in
      let ready = state.withLock { state -> Result<ATTPDU, ATTError>? in
        guard var pending = state.pending[kind.rawValue] else { return .failure(state.closed ?? .disconnected) }
        if let result = pending.result {
          state.pending[kind.rawValue] = nil
          return result
        }
        pending.waiter = .continuation(continuation)
        state.pending[kind.rawValue] = pending
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
    return try result.get()
  }

  /// Waits for this side's turn: one outstanding transaction of each kind.
  private func acquire(_ kind: Kind) async throws(ATTError) {
    let turn = state.withLock { state -> Result<Bool, ATTError> in
      if let closed = state.closed { return .failure(closed) }
      if state.busy[kind.rawValue] { return .success(false) }
      state.busy[kind.rawValue] = true
      return .success(true)
    }
    if try turn.get() { return }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state -> Bool in
        if state.closed != nil { return true }
        if !state.busy[kind.rawValue] {
          state.busy[kind.rawValue] = true
          return true
        }
        state.queued[kind.rawValue].append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
    if let closed = closedReason {
      release(kind)
      throw closed
    }
  }

  /// Hands the turn to the next queued caller, or frees it.
  private func release(_ kind: Kind) {
    let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if state.queued[kind.rawValue].isEmpty {
        state.busy[kind.rawValue] = false
        return nil
      }
      return state.queued[kind.rawValue].removeFirst()
    }
    next?.resume()
  }

  /// Delivers the answer to the outstanding transaction of `kind`.
  private func complete(_ kind: Kind, _ answer: ATTPDU) async {
    let request = state.withLock { $0.pending[kind.rawValue].flatMap { $0.result == nil ? $0.requestOpcode : nil } }
    guard let request else {
      logger.info("\(bearer.name): unexpected \(answer.opcode) with nothing outstanding; ignored")
      return
    }
    await resolve(kind, Self.match(answer, to: request))
  }

  /// Ends the outstanding transaction of `kind` with `result`, now or when its caller waits.
  private func resolve(_ kind: Kind, _ result: Result<ATTPDU, ATTError>) async {
    let waiter = state.withLock { state -> Waiter? in
      guard var pending = state.pending[kind.rawValue], pending.result == nil else { return nil }
      if let waiter = pending.waiter {
        state.pending[kind.rawValue] = nil
        return waiter
      }
      pending.result = result
      state.pending[kind.rawValue] = pending
      return nil
    }
    switch waiter {
    case nil: return
    case .continuation(let continuation)?: continuation.resume(returning: result)
    case .callback(let callback)?:
      release(kind)
      await callback(result)
    }
  }

  private static func match(_ answer: ATTPDU, to request: ATTOpcode) -> Result<ATTPDU, ATTError> {
    if case .errorResponse(let error) = answer {
      if error.requestOpcode == request { return .failure(.errorResponse(error)) }
      return .failure(.invalidResponse("Error Response for \(error.requestOpcode), expected one for \(request)"))
    }
    let expected: UInt8 =
      request == .handleValueIndication ? ATTOpcode.handleValueConfirmation.rawValue : request.rawValue + 1
    if answer.opcode.rawValue == expected { return .success(answer) }
    return .failure(.invalidResponse("\(answer.opcode) in answer to \(request)"))
  }

  /// Fails the transactions whose deadline has passed. Sleeps until the earliest deadline;
  /// parks while nothing is outstanding, so a busy connection costs it nothing per request.
  private func watchdog() async {
    while !Task.isCancelled {
      let deadline = state.withLock { state -> Duration?? in
        if state.closed != nil { return .none }
        return .some(state.pending.compactMap { $0?.deadline }.min())
      }
      guard let deadline else { return }
      guard let deadline else {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
          let now = state.withLock { state -> Bool in
            if state.closed != nil || state.pending.contains(where: { $0 != nil }) { return true }
            state.parkedWatchdog = continuation
            return false
          }
          if now { continuation.resume() }
        }
        continue
      }
      do { try await clock.sleep(until: deadline) } catch { return }
      let now = clock.now
      let expired = state.withLock { state in
        state.pending.contains { pending in
          guard let pending else { return false }
          return pending.deadline <= now && pending.result == nil
        }
      }
      if expired {
        logger.error("\(bearer.name): ATT transaction timed out after \(options.transactionTimeout); closing the link")
        shutdown(.timeout)
        bearer.close()
        return
      }
    }
  }

  // MARK: - Receiving

  private func dispatch(_ bytes: [UInt8]) async {
    if logger.enabled(.trace) { logger.trace("\(bearer.name) < \(Hex.encode(bytes))") }
    guard let first = bytes.first else {
      logger.info("\(bearer.name): empty PDU ignored")
      return
    }
    let opcode = ATTOpcode(rawValue: first)
    let pdu: ATTPDU
    do {
      pdu = try ATTPDU(decoding: bytes)
    } catch {
      logger.info("\(bearer.name): \(error)")
      if opcode.needsResponse {
        await answer(.errorResponse(ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .invalidPDU)))
      } else if opcode == .errorResponse || ATTOpcode.answers.contains(first) {
        await resolve(.request, .failure(.invalidResponse("\(error)")))
      }
      return
    }
    switch pdu {
    case .handleValueNotification(let notification):
      await deliver(ATTValueEvent(handle: notification.handle, value: notification.value, isIndication: false))
    case .handleValueIndication(let indication):
      await deliver(ATTValueEvent(handle: indication.handle, value: indication.value, isIndication: true))
      await answer(.handleValueConfirmation(HandleValueConfirmation()))
    case .handleValueConfirmation:
      await complete(.indication, pdu)
    case .exchangeMTURequest(let request):
      // Answered with the old MTU; the new one applies from the next PDU.
      await answer(.exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: options.localMTU)))
      _ = adoptMTU(peer: request.clientRxMTU)
    default:
      if opcode.needsResponse || opcode.isCommand {
        await serve(pdu, opcode: opcode)
      } else {
        await complete(.request, pdu)
      }
    }
  }

  private func serve(_ pdu: ATTPDU, opcode: ATTOpcode) async {
    guard case .some(let server) = state.withLock({ $0.server }), !isUnknown(pdu) else {
      if opcode.needsResponse {
        await answer(.errorResponse(ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .requestNotSupported)))
      }
      return
    }
    let reply = await server.handle(pdu, on: self)
    if opcode.needsResponse {
      await answer(
        reply.response ?? .errorResponse(ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .unlikelyError)))
    }
    await reply.afterResponse?()
  }

  private func isUnknown(_ pdu: ATTPDU) -> Bool {
    if case .unknown = pdu { return true }
    return false
  }

  /// Sends an answer; a failure means the link is gone, which the receive loop will see.
  @inline(__always)
  private func answer(_ pdu: ATTPDU) async {
    do {
      try await send(pdu)
    } catch {
      logger.info("\(bearer.name): could not answer \(pdu.opcode): \(error)")
    }
  }

  @inline(__always)
  private func deliver(_ event: ATTValueEvent) async {
    guard let handler = state.withLock({ $0.onValue }) else { return }
    await handler(event)
  }
}
