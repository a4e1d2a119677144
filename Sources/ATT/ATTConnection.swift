import Runtime
import Synchronization
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
  /// Runs after the answer has been put on the link, in the same step, on the connection's
  /// executor (for example Data Source notifications that must follow the Control Point's
  /// Write Response), before the next PDU received is taken.
  public var afterResponse: (@Sendable (isolated ATTConnection) -> Void)?

  public init(_ response: ATTPDU?, afterResponse: (@Sendable (isolated ATTConnection) -> Void)? = nil) {
    self.response = response
    self.afterResponse = afterResponse
  }
}

/// The server side of a connection: the GATT server implements it.
public protocol ATTServerHandler: Sendable {
  /// Handles a decoded request or command other than Exchange MTU (which the connection
  /// answers itself), on the connection's executor, at once: what must follow the answer
  /// goes in the reply's `afterResponse`. Requests must be answered; a
  /// handler never throws, it answers with an Error Response instead.
  func handle(_ pdu: ATTPDU, on connection: isolated ATTConnection) -> ATTServerReply
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

/// One ATT bearer's protocol engine, both roles at once: the shell that performs what
/// `ATTMachine` decides. An actor: the machine is stepped only on the connection's executor
/// (its own, or its owner's), one input at a time, so it needs no lock; whoever is elsewhere
/// (a phone's console, a scenario) reaches it with `await`.
///
/// - Client: `request` sends a request, or queues it behind the one outstanding, and hands
///   over its answer. Answers are taken on the receive loop in arrival order.
/// - Server: requests from the peer go to the `ATTServerHandler`, one at a time, in a plain
///   call, and are answered in order; Exchange MTU is answered by the machine. A reply's
///   `afterResponse` runs right after its answer, before the next PDU is taken.
/// - Indications: at most one unconfirmed at a time, also queued.
/// - A transaction past its 30 seconds fails everything and closes the bearer (Vol 3 Part F
///   3.3.3), measured on the injected clock.
public actor ATTConnection: HomedActor {
  public typealias Options = ATTOptions
  /// Who takes a transaction's answer: isolated to the connection, so it runs on the
  /// connection's executor, where the answer arrives. Synchronous: an engine on the same
  /// executor takes the answer in a plain call (`assumeIsolated`), with no async frame.
  public typealias Answer = @Sendable (isolated ATTConnection, Result<ATTPDU, ATTError>) -> Void
  /// Who takes the peer's notifications and indications: isolated to the connection and
  /// synchronous, as `Answer` is (a client there takes the value in a plain call).
  public typealias ValueHandler = @Sendable (isolated ATTConnection, ATTValueEvent) -> Void
  /// Each transaction's waiter is the callback that takes its answer; a caller that awaits
  /// one has its callback resume it (`awaitAnswer`).
  typealias Machine = ATTMachine<Answer>

  /// ATT_MTU before any exchange (LE).
  public static let defaultMTU = ATTOptions.defaultMTU

  public nonisolated let bearer: any ATTBearer
  public nonisolated let options: Options
  private nonisolated let clock: any EngineClock
  private nonisolated let logger: Logger
  // `@exclusivity(unchecked)`: no run-time exclusivity check on these actor-isolated fields,
  // which every PDU touches (each access otherwise costs a call into the runtime and a
  // thread-local look-up: about 4 % of the in-memory end-to-end benchmark, BENCHMARKS.md).
  // The actor already rules out two tasks at once; within one synchronous step nothing
  // reaches them twice: the machine is a value, changed in plain calls on it (mostly the one
  // `inout` of `withMachine` a step takes), and no callback runs inside such an access.
  @exclusivity(unchecked) private var machine: Machine
  @exclusivity(unchecked) private var server: (any ATTServerHandler)?
  @exclusivity(unchecked) private var onValue: ValueHandler?
  /// The machine's ATT_MTU, for readers on other executors; written only here.
  private nonisolated let agreedMTU: Atomic<Int>
  /// `run()` has returned.
  private var ended = false
  /// Tells the machine the time at each of its deadlines.
  private let watchdog: OwnedTimer
  /// The serial executor the connection runs on (its owner's, or one of its own), kept so
  /// that it lives as long as the connection.
  private nonisolated let home: ExecutorHome

  /// The connection's executor: `executorOf`'s given to `init`, or its own.
  public nonisolated var unownedExecutor: UnownedSerialExecutor { home.executor }
  public nonisolated var executorHome: ExecutorHome { home }

  /// A connection on `bearer`. With `executorOf`, it runs on that actor's executor rather
  /// than one of its own (SE-0392): an engine that owns its connections (the watch's) keeps
  /// itself, them and their GATT clients and sessions on one serial executor, so none of
  /// them needs a lock and no call between them leaves the executor.
  public init(
    bearer: any ATTBearer, clock: any EngineClock = SystemClock(), options: Options = Options(),
    logger: Logger = .none, executorOf owner: (any Actor)? = nil
  ) {
    home = owner.map { ExecutorHome(sharing: $0) } ?? ExecutorHome(nil)
    self.bearer = bearer
    self.clock = clock
    self.options = options
    self.logger = logger
    machine = Machine(options: options)
    agreedMTU = Atomic(Int(ATTOptions.defaultMTU))
    watchdog = OwnedTimer(clock: clock, timers: home.timers)
  }

  /// The ATT_MTU in force; readable from anywhere (it only grows, once).
  public nonisolated var mtu: Int { agreedMTU.load(ordering: .acquiring) }

  /// The link's security level, as the GATT server checks it.
  public nonisolated var securityLevel: SecurityLevel { bearer.securityLevel }

  /// Nil while connected; otherwise why the connection ended.
  public var closedReason: ATTError? { machine.closed }

  /// Sets the handler for requests and commands from the peer. Once `run()` has returned,
  /// handlers are not kept: nothing would call them, and a handler that holds the connection
  /// would keep it, and its link, forever.
  public func setServer(_ server: (any ATTServerHandler)?) {
    if !ended { self.server = server }
  }

  /// Sets the handler for notifications and indications from the peer. It runs on the
  /// receive loop, so nothing is dispatched until it returns: it may send, but must never
  /// wait for an answer (which only this loop could deliver). Indications are confirmed
  /// after it returns.
  public func setValueHandler(_ handler: ValueHandler?) {
    if !ended { onValue = handler }
  }

  /// The machine by reference: a method called on the stored value directly may work on a
  /// copy of the whole machine (every field retained, then released), on every PDU.
  @inline(__always)
  private func withMachine<T>(_ body: (inout Machine) -> T) -> T { body(&machine) }

  /// Publishes the machine's ATT_MTU when it changed (only this actor writes it).
  private func publish(mtu: Int) {
    if agreedMTU.load(ordering: .relaxed) != mtu { agreedMTU.store(mtu, ordering: .releasing) }
  }

  /// Runs one input through the machine; wakes the watchdog when the machine's deadline
  /// moved.
  private func step(_ input: (inout Machine, () -> Duration) -> Machine.Effects) -> Machine.Effects {
    let clock = self.clock
    let (effects, moved, mtu) = withMachine { machine in
      let before = machine.deadline
      let effects = input(&machine, { clock.now })
      let after = machine.deadline
      return (effects, after != before ? after : nil, machine.mtu)
    }
    if let moved { watchdog.wake(for: moved) }
    publish(mtu: mtu)
    return effects
  }

  /// Performs an input's effects, in order, synchronously; a request or command for the
  /// server is served in its place.
  private func perform(_ effects: Machine.Effects) {
    for effect in effects { perform(effect) }
  }

  /// Performs one effect.
  private func perform(_ effect: Machine.Effect) {
    switch effect {
    case .send(let bytes):
      do throws(ATTError) { try put(bytes) } catch {
        logger.info("\(bearer.name): could not send \(ATTOpcode(rawValue: bytes.first ?? 0))")
      }
    case .start(let bytes, let indication, _, let number):
      do throws(ATTError) { try put(bytes) } catch {
        // The request or indication just started fails, before anything else happens.
        perform(step { machine, now in machine.sendFailed(indication: indication, number: number, now: now()) })
      }
    case .complete(let answer, let result): answer(self, result)
    case .serve(let pdu): serve(pdu)
    case .deliver(let event): onValue?(self, event)
    case .close(let reason):
      logger.error("\(bearer.name): \(reason)")
      bearer.close()
    case .note(let text): logger.info("\(bearer.name): \(text)")
    case .adoptMTU(let peer):
      machine.adopt(peer: peer)
      publish(mtu: machine.mtu)
    }
  }

  // MARK: - Running

  /// Receives and dispatches PDUs until the link closes; then fails everything pending with
  /// `.disconnected` and lets go of the server and value handlers. Run it in its own task.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.runWatchdog() }
      // A link read on this executor hands each PDU over in place (`take(_:)`); then the
      // loop below takes what it queued before, and waits for the link's end (and, on an
      // in-memory link, for what is sent from off its loop, which it queues).
      let handedOver = bearer.handOver(to: self)
      while true {
        // What is already queued is taken without an async call (a burst of notifications).
        var received = bearer.receiveIfReady()
        if received == nil { received = try? await bearer.receive() }
        guard let bytes = received else { break }
        self.received(bytes)
      }
      if handedOver { _ = bearer.handOver(to: nil) }
      perform(step { machine, _ in machine.close(.disconnected) })
      // The handlers often hold this connection: let go of them, so neither keeps the other.
      ended = true
      server = nil
      onValue = nil
      watchdog.stop()
    }
  }

  /// Takes one PDU from the link: from `run()`'s loop, or handed over in place by a link
  /// that reads on this connection's executor (`ATTBearer.handOver(to:)`), which calls it in
  /// a plain call (`take(_:)`) from its read, with no task between.
  public func received(_ bytes: [UInt8]) {
    if logger.enabled(.trace) { logger.trace("\(bearer.name) < \(Hex.encode(bytes))") }
    perform(step { machine, now in machine.received(bytes, now: now) })
  }

  private func runWatchdog() async {
    await watchdog.run(
      next: {
        assertIsolated("the watchdog asks for the deadline on the connection's executor")
        return withMachine { $0.deadline }
      },
      fire: { now in perform(step { machine, _ in machine.timerFired(now: now) }) })
  }

  /// Closes the bearer; `run()` then fails what was outstanding with `.disconnected` and
  /// returns. Requests from now on fail at once, as the bearer refuses them. A connection
  /// whose `run()` never started tells the waiters of its outstanding requests nothing.
  public nonisolated func close() {
    bearer.close()
  }

  // MARK: - Sending

  /// Sends a PDU that is no transaction (a command, a notification) after checking it
  /// against the state and ATT_MTU: put on the bearer now, in the caller's step. Throws what
  /// the machine refuses, or `.disconnected` when the bearer refused it.
  public func send(_ pdu: ATTPDU) throws(ATTError) {
    try put(withMachine { $0.encode(pdu) }.get())
  }

  /// Puts checked bytes on the bearer, which never suspends (it queues what the peer has
  /// not read): there is no queue here, and no task to send it.
  private func put(_ bytes: [UInt8]) throws(ATTError) {
    do {
      try bearer.send(bytes)
    } catch {
      throw .disconnected
    }
    if logger.enabled(.trace) { logger.trace("\(bearer.name) > \(Hex.encode(bytes))") }
  }

  /// Sends a request, or queues it behind the one outstanding, and returns. `onAnswer` runs
  /// exactly once: on the receive loop when the answer comes, before the PDUs that follow it
  /// are dispatched; or with the error when the request could not be sent, timed out, or
  /// the link closed. Lets an engine that lives on the receive loop keep its order without
  /// a task switch per request, and never wait for a turn only the receive loop can free.
  public func request(_ pdu: ATTPDU, onAnswer: @escaping Answer) {
    perform(step { machine, now in machine.request(pdu, waiter: onAnswer, now: now()) })
  }

  /// Sends a request and returns the peer's answer. An Error Response throws
  /// `.errorResponse`; an answer of the wrong kind throws `.invalidResponse`.
  public func request(_ pdu: ATTPDU) async throws(ATTError) -> ATTPDU {
    try await awaitAnswer { connection, answer in connection.request(pdu, onAnswer: answer) }
  }

  /// Starts a transaction whose `Answer` resumes the caller, here on the connection's
  /// executor, where the answer arrives: no lock between them. The machine calls every
  /// transaction's answer exactly once (its answer, a failure, or the link's end), so the
  /// wait always ends, once `run()` is running. It cannot be cancelled, for the same reason.
  private func awaitAnswer(_ start: (isolated ATTConnection, @escaping Answer) -> Void) async throws(ATTError)
    -> ATTPDU
  {
    try await withCheckedContinuation { continuation in
      start(self) { _, result in continuation.resume(returning: result) }
    }.get()
  }

  /// Sends a Handle Value Notification, the value cut to ATT_MTU - 3 bytes, as `send` does.
  public func notify(handle: UInt16, value: [UInt8]) throws(ATTError) {
    try put(withMachine { $0.notification(handle: handle, value: value) }.get())
  }

  /// Sends a Handle Value Indication, or queues it behind the one unconfirmed, and returns
  /// without waiting for its confirmation. `onConfirmation` runs exactly once: on the receive
  /// loop with the Handle Value Confirmation, or with the error when the indication could
  /// not be sent, timed out, or the link closed. A server handler, which runs on the receive
  /// loop that must carry the confirmation, indicates this way.
  public func indicate(handle: UInt16, value: [UInt8], onConfirmation: @escaping Answer) {
    perform(
      step { machine, now in
        machine.indicate(handle: handle, value: value, waiter: onConfirmation, now: now())
      })
  }

  /// Sends a Handle Value Indication and awaits its confirmation. Never from the receive
  /// loop (a server handler, a value handler): the confirmation comes through it.
  public func indicate(handle: UInt16, value: [UInt8]) async throws(ATTError) {
    _ = try await awaitAnswer { connection, answer in
      connection.indicate(handle: handle, value: value, onConfirmation: answer)
    }
  }

  /// Client side of Exchange MTU: offers `options.localMTU`; returns the ATT_MTU in force.
  @discardableResult
  public func exchangeMTU() async throws(ATTError) -> Int {
    let answer = try await request(.exchangeMTURequest(ExchangeMTURequest(clientRxMTU: options.localMTU)))
    guard case .exchangeMTUResponse = answer else { throw .invalidResponse("expected Exchange MTU Response") }
    let agreed = machine.mtu
    logger.debug("\(bearer.name): ATT_MTU \(agreed)")
    return agreed
  }

  // MARK: - Serving

  /// Answers a request (or takes a command), then runs what the reply does after its answer.
  private func serve(_ pdu: ATTPDU) {
    guard let server else {
      let refusal = ErrorResponse(requestOpcode: pdu.opcode, handle: 0, errorCode: .requestNotSupported)
      perform(withMachine { $0.answer(to: pdu.opcode, with: .errorResponse(refusal)) })
      return
    }
    let reply = server.handle(pdu, on: self)
    perform(withMachine { $0.answer(to: pdu.opcode, with: reply.response) })
    reply.afterResponse?(self)
  }
}

extension ATTConnection: PDUReceiver {
  /// A PDU handed over in place by the link's reader, which runs on this connection's
  /// executor: `received(_:)`, entered in a plain call (checked, as `assumeIsolated` is).
  public nonisolated func take(_ pdu: [UInt8]) {
    assumeIsolated(passing: pdu) { connection, pdu in connection.received(pdu) }
  }
}
