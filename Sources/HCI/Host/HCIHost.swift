import ATT
import Links
import Runtime
import Sockets
import Synchronization
import Wire

/// What a command got back from the controller.
public enum CommandAnswer: Hashable, Sendable {
  /// HCI_Command_Complete, with the command's return parameters (undecoded).
  case complete([UInt8])
  /// HCI_Command_Status: the command started (success) or was refused.
  case status(HCIStatus)
}

/// An LE host over an H4 byte stream (Vol 4 Part E): it sends commands with command-credit
/// flow control and awaits their answers, sends and reassembles ACL data with Number Of
/// Completed Packets flow control, and routes L2CAP's fixed channels of each connection
/// (`HCIConnection`). Roles and set-up are in HCIHost+Roles.swift.
///
/// The event loop the stream was opened on reads it and hands each chunk to the host in
/// place, on the loop's thread: the host decodes its packets and dispatches them there (an
/// ATT PDU to a connection that runs on the loop, in place too: `HCIConnection`). The
/// command and ACL flows belong to that loop too (`LoopBound`): a packet sent from the loop
/// (a connection that runs there) goes out in place, with no lock; one sent from elsewhere
/// reaches the loop first (`EventLoop.execute`). So every packet to the controller is
/// written on the loop, in the order the flows released it; the write never blocks. The
/// host's one timer (`HostTimer`), on the loop too, fails the commands past their deadline
/// and tells the security manager the time. Nothing a controller or peer sends can trap:
/// a malformed packet is logged and dropped, and an H4 desynchronisation (the stream cannot
/// find packet boundaries again) or the end of the stream closes the host, failing every wait
/// with `.closed(why)`.
public final class HCIHost: Sendable {
  public struct Options: Sendable {
    /// How long a command may wait for its Command Complete or Command Status (Linux uses 2 s).
    public var commandTimeout: Duration

    public init(commandTimeout: Duration = .seconds(2)) {
      self.commandTimeout = commandTimeout
    }
  }

  enum ConnectionOutcome: Sendable {
    case connected(HCIConnection)
    case failed(HCIStatus, role: UInt8)
  }

  /// Who takes a command's answer, or the error: the controller's answer, the deadline, the
  /// host's end.
  typealias Answer = @Sendable (Result<CommandAnswer, HCIHostError>) -> Void

  /// Who waits for a command: its name, for errors and the log, and who takes its answer.
  struct Pending: Sendable {
    var name: String
    var onAnswer: Answer
  }

  /// What the host shares between the loop and its callers elsewhere, under its lock.
  struct State {
    var connections: [UInt16: HCIConnection] = [:]
    /// The random static address set by `setUp`.
    var randomAddress = BDAddress.zero
    var scanReports: Inbox<ScanReport>?
    var closed: String?
    var parameterJudge: ParameterJudge?
  }

  /// How a central judges a peripheral's Connection Parameter Update Request beyond the Core
  /// specification's ranges, and whom it tells.
  public struct ParameterJudge: Sendable {
    /// Each rule the parameters break, in words; empty: accepted.
    public var rules: @Sendable (ConnectionParameters) -> [String]
    /// Told of every request judged: the link's name, the parameters, the rules broken.
    public var report: @Sendable (String, ConnectionParameters, [String]) -> Void

    public init(
      rules: @escaping @Sendable (ConnectionParameters) -> [String],
      report: @escaping @Sendable (String, ConnectionParameters, [String]) -> Void
    ) {
      self.rules = rules
      self.report = report
    }
  }

  /// The judge of connection parameter requests on this host's central links (nil: the
  /// Core specification's ranges only, and nobody told).
  public var parameterJudge: ParameterJudge? {
    get { state.withLock { $0.parameterJudge } }
    set { state.withLock { $0.parameterJudge = newValue } }
  }

  public let stream: DescriptorStream
  public let options: Options
  /// The host's time: command deadlines, and the security manager's.
  public let clock: any EngineClock
  let logger: Logger
  let capture: BtsnoopWriter?
  public let security: any HCISecurityManager
  let state = Locked(State())
  /// The host's one timer, on its loop.
  let timer: HostTimer
  /// The number of the last command submitted.
  private let lastID = Atomic<UInt64>(0)

  /// The host's state that belongs to its loop: touched only there, so neither way takes a
  /// lock.
  struct LoopState {
    /// The H4 packet being read between chunks.
    var decoder = H4Decoder()
    /// Each connection by handle, to route what the controller sends, as the loop's reads
    /// add and remove them; `state.connections` is the same set for the rest of the host.
    var routes: [UInt16: HCIConnection] = [:]
    /// The ACL data being reassembled.
    var reassembler = ACLReassembler()
    /// Commands waiting for a credit, and those sent and not yet answered.
    var commands = CommandFlow<Pending>()
    /// ACL packets waiting for a controller buffer, and those the controller has not freed.
    var acl = ACLFlow(capacity: 1)
    /// The controller's LE_ACL_Data_Packet_Length; 27 (the LE minimum) until read.
    var aclPacketLength = 27
  }
  private let loopState: LoopBound<LoopState>
  /// LE Connection Complete events, as connections or failures, for `accept` and `connect`.
  let connectionEvents = Inbox<ConnectionOutcome>()

  /// Starts reading and writing `stream` (on the event loop it was opened on). Call
  /// `setUp()` before anything else, and `close()` when done: the host runs (and stays
  /// alive) until its stream ends.
  /// - Parameters:
  ///   - capture: records every H4 packet both ways (create it with `connection: nil`).
  ///   - security: handles SMP (CID 0x0006) and Long Term Key requests.
  public init(
    stream: DescriptorStream, clock: any EngineClock = SystemClock(), options: Options = Options(),
    logger: Logger = .none, capture: BtsnoopWriter? = nil, security: any HCISecurityManager = PairingNotSupported()
  ) {
    self.stream = stream
    self.clock = clock
    self.options = options
    self.logger = logger
    self.capture = capture
    self.security = security
    let timer = HostTimer(clock: clock, loop: stream.loop)
    self.timer = timer
    loopState = LoopBound(LoopState(), on: stream.loop)
    // On the loop, whose state it reads and changes.
    Task { await timer.run(next: { self.deadline }, fire: { self.timerFired(now: $0) }) }
    do {
      // The stream holds the host (through its receiver) until it ends.
      try stream.start { [self] event in
        switch event {
        case .bytes(let chunk): read(chunk)
        case .ended(let fault):
          timer.stop()
          // The connections were told by the shutdown, if it came first; let go of them.
          loopState.modify { $0.routes = [:] }
          shutdown(fault.map { "\(stream.name): \($0)" } ?? "\(stream.name): the controller's stream ended")
        }
      }
    } catch {
      // Off the loop, perhaps: the timer ends on it.
      Task { await timer.end() }
      shutdown("\(error)")
    }
  }

  /// Nil while the host runs; otherwise why it closed.
  public var closedReason: String? { state.withLock { $0.closed } }

  /// The controller's ACL data packet length and buffer count, as the host uses them.
  public var aclBuffers: (length: Int, count: Int) {
    get async { await onLoop { ($0.aclPacketLength, $0.acl.capacity) } }
  }

  /// Runs `body` with the loop's state on the loop: in place there, else through the loop's
  /// queue.
  func onLoop<T: Sendable>(_ body: @escaping @Sendable (inout LoopState) -> T) async -> T {
    await stream.loop.submit { self.loopState.modify(body) }
  }

  /// Closes the host and its stream (idempotent): every connection's bearer ends, and every
  /// wait fails with `.closed`.
  public func close() { shutdown("closed by the host") }

  // MARK: - Commands

  /// Sends `command` and awaits its Command Complete; returns the return parameters, whose
  /// status (their first byte, for every command this host sends) must be success.
  @discardableResult
  public func execute<C: HCICommand>(_ command: C) async throws(HCIHostError) -> [UInt8] {
    let answer = try await send(command.packet, name: C.packetName)
    switch answer {
    case .complete(let parameters):
      if let first = parameters.first, first != HCIStatus.success.rawValue {
        throw .commandFailed(command: C.packetName, opcode: C.opcode, status: HCIStatus(rawValue: first))
      }
      return parameters
    case .status(let status):
      // A Command Status for a command that completes: only a refusal makes sense.
      if status != .success { throw .commandFailed(command: C.packetName, opcode: C.opcode, status: status) }
      return []
    }
  }

  /// Sends `command` and decodes its return parameters as `R`.
  public func execute<C: HCICommand, R: HCIPayload>(_ command: C, returning: R.Type) async throws(HCIHostError) -> R {
    let parameters = try await execute(command)
    do {
      return try R(decoding: parameters)
    } catch {
      throw .invalidReturnParameters(command: C.packetName, error)
    }
  }

  /// Sends a command that the controller answers with Command Status and completes later with
  /// an event (Create Connection, Disconnect, Connection Update); returns once it started.
  public func start<C: HCICommand>(_ command: C) async throws(HCIHostError) {
    try Self.started(C.self, try await send(command.packet, name: C.packetName))
  }

  /// Sends a command that the controller answers with Command Status and completes later,
  /// without waiting: a refusal or a failure is logged. For the loop's reads (the security
  /// manager's answers to the controller, a connection's end), where waiting is not allowed.
  /// - Parameter context: what the log says the command was for.
  public func post<C: HCICommand>(_ command: C, context: String? = nil) {
    let logger = self.logger
    let name = stream.name + (context.map { ": \($0)" } ?? "")
    submit(command.packet, name: C.packetName) { result in
      do throws(HCIHostError) {
        try Self.started(C.self, try result.get())
      } catch {
        logger.error("\(name): \(error)")
      }
    }
  }

  /// Throws unless `answer` says the command started.
  private static func started<C: HCICommand>(_: C.Type, _ answer: CommandAnswer) throws(HCIHostError) {
    let status: HCIStatus
    switch answer {
    case .status(let value): status = value
    case .complete(let parameters): status = HCIStatus(rawValue: parameters.first ?? 0)
    }
    if status != .success { throw .commandFailed(command: C.packetName, opcode: C.opcode, status: status) }
  }

  /// Sends one command packet when a credit allows, and awaits its answer.
  /// Cancelled, the command is forgotten (`.cancelled`), unless its answer came first.
  func send(_ packet: HCICommandPacket, name: String) async throws(HCIHostError) -> CommandAnswer {
    let answer = Answered<Result<CommandAnswer, HCIHostError>>()
    let ticket = submit(packet, name: name) { answer.take($0) }
    return try await withTaskCancellationHandler {
      await answer.value
    } onCancel: {
      abandon(ticket)
    }.get()
  }

  /// A command submitted, for `abandon`: one abandoned on its way to the loop is answered
  /// `.cancelled` there rather than sent.
  final class CommandTicket: Sendable {
    let id: UInt64
    let abandoned = Atomic<Bool>(false)
    init(id: UInt64) { self.id = id }
  }

  /// Sends one command packet when a credit allows; `onAnswer` runs exactly once: on the
  /// loop's read of the controller's answer, on the host's timer when `options.commandTimeout`
  /// passes first, or when the host closes or the command is abandoned.
  @discardableResult
  func submit(_ packet: HCICommandPacket, name: String, onAnswer: @escaping Answer) -> CommandTicket {
    let deadline = clock.now + options.commandTimeout
    let ticket = CommandTicket(id: lastID.add(1, ordering: .relaxed).newValue)
    let id = ticket.id
    let waiter = Pending(name: name, onAnswer: onAnswer)
    // Closed already: no hop (a loop that has ended would still run it, later).
    if let closed = closedReason {
      onAnswer(.failure(.closed(closed)))
      return ticket
    }
    atLoop { [self] in
      // Closed before it reached the loop: the end failed the commands it found, and this one
      // must not wait for an answer that cannot come.
      if let closed = closedReason {
        onAnswer(.failure(.closed(closed)))
        return
      }
      // Abandoned on its way here (`abandon` found nothing to take out of the flow).
      if ticket.abandoned.load(ordering: .acquiring) {
        onAnswer(.failure(.cancelled))
        return
      }
      output(
        commands: loopState.modify {
          $0.commands.submit(id: id, opcode: packet.opcode, packet: packet.encoded, deadline: deadline, waiter: waiter)
        })
      timer.wake(for: deadline)
    }
    return ticket
  }

  /// Runs `call` on the loop: in place when called there, else queued for it.
  private func atLoop(_ call: @escaping @Sendable () -> Void) {
    if stream.loop.inEventLoop { call() } else { stream.loop.execute(call) }
  }

  /// Forgets a command whose caller stopped waiting; its `onAnswer` is told `.cancelled`
  /// (unless the answer, the deadline or the host's end took it first).
  func abandon(_ ticket: CommandTicket) {
    // Marked first: a command not yet in the flow is answered when it reaches the loop.
    ticket.abandoned.store(true, ordering: .releasing)
    atLoop { [self] in
      let (pending, writes) = loopState.modify { $0.commands.abandon(id: ticket.id) }
      output(commands: writes)
      pending?.onAnswer(.failure(.cancelled))
    }
  }

  /// A security manager set `deadline`: the host's timer tells it the time then
  /// (`HCISecurityManager.timerFired(now:on:)`). From any thread: in place on the loop,
  /// else through its queue.
  public func wakeTimer(for deadline: Duration) { atLoop { [timer] in timer.wake(for: deadline) } }

  /// The earliest time the host's timer must tell the host: a command's deadline, or the
  /// security manager's. On the loop.
  private var deadline: Duration? {
    let commands = loopState.value.commands.deadline
    guard let security = security.deadline else { return commands }
    return min(commands ?? security, security)
  }

  /// The timer's call, on the loop: the commands past their deadline fail, and the
  /// security manager is told the time.
  private func timerFired(now: Duration) {
    let (expired, writes) = loopState.modify { $0.commands.timerFired(now: now) }
    output(commands: writes)
    for (opcode, command) in expired {
      logger.error("\(stream.name): \(command.name): no answer within \(options.commandTimeout)")
      command.onAnswer(
        .failure(.commandTimeout(command: command.name, opcode: opcode, timeout: options.commandTimeout)))
    }
    security.timerFired(now: now, on: self)
  }

  /// Commands waiting for a credit, and commands sent and not yet answered.
  public var commandBacklog: (queued: Int, inFlight: Int) {
    get async { await onLoop { ($0.commands.queuedCount, $0.commands.inFlightCount) } }
  }

  // MARK: - ACL

  /// Sends one L2CAP PDU on `handle`, split to the controller's ACL packet length; packets
  /// leave as the controller frees buffers. Never waits: on the loop it goes out in place,
  /// with no lock; from elsewhere it is queued for the loop, in the order sent.
  func sendL2CAP(_ frame: L2CAPFrame, on connection: HCIConnection) {
    atLoop { [self] in
      let handle = connection.handle
      let packets = loopState.modify { state -> [ACLPacket] in
        // Gone with its connection (whose handle another may have taken since it was sent),
        // or with the host (which closed the stream first).
        guard state.routes[handle] === connection, !stream.isClosed else { return [] }
        let fragments = ACLPacket.fragments(of: frame.encoded, handle: handle, bufferSize: state.aclPacketLength)
        return state.acl.enqueue(fragments)
      }
      output(acl: packets)
    }
  }

  /// Packets held back by ACL flow control and packets the controller has not yet freed.
  public var aclBacklog: (queued: Int, outstanding: Int) {
    get async { await onLoop { ($0.acl.queuedCount, $0.acl.outstandingCount) } }
  }

  // MARK: - I/O

  /// Writes packets to the controller; on the loop, by whatever released them from the flows,
  /// so they leave in the order released (the write never blocks, and never calls back into
  /// the host: a failed one ends the stream, whose end reaches the host from the loop).
  private func output(_ packet: H4Packet) {
    capture?.record(h4Packet: packet.encoded, direction: .sent, isEvent: packet.type == .command)
    try? stream.write(packet.encoded)
  }

  private func output(commands: [[UInt8]]) {
    for bytes in commands { output(H4Packet(type: .command, bytes: bytes)) }
  }

  private func output(acl packets: [ACLPacket]) {
    for packet in packets { output(H4Packet(type: .acl, bytes: packet.encoded)) }
  }

  /// A chunk from the controller, on the stream's loop: its whole packets are dispatched in
  /// place. A stream that lost the packet boundaries closes the host, after the packets
  /// before the break.
  private func read(_ chunk: [UInt8]) {
    let (packets, broken) = loopState.modify { state -> ([H4Packet], H4Error?) in
      state.decoder.append(chunk)
      var packets: [H4Packet] = []
      do throws(H4Error) {
        while let packet = try state.decoder.next() { packets.append(packet) }
      } catch {
        return (packets, error)
      }
      return (packets, nil)
    }
    for packet in packets {
      // Closed meanwhile (from another thread): what is left of the chunk is not the host's.
      if stream.isClosed { return }
      capture?.record(h4Packet: packet.encoded, direction: .received, isEvent: packet.type == .event)
      received(packet)
    }
    if let broken { shutdown("\(stream.name): \(broken); reopen the transport and reset the controller") }
  }

  private func received(_ packet: H4Packet) {
    do {
      switch packet.type {
      case .event: dispatch(try HCIEvent(decoding: packet.bytes))
      case .acl: receivedACL(try ACLPacket(decoding: packet.bytes))
      default: logger.error("\(stream.name): unexpected \(packet.type) packet from the controller, dropped")
      }
    } catch {
      logger.error("\(stream.name): \(error); packet dropped")
    }
  }

  private func receivedACL(_ packet: ACLPacket) {
    let result = loopState.modify { state -> Result<([UInt8], HCIConnection)?, ACLReassemblyError> in
      guard let connection = state.routes[packet.handle] else { return .success(nil) }
      do throws(ACLReassemblyError) {
        return .success(try state.reassembler.push(packet).map { ($0, connection) })
      } catch {
        return .failure(error)
      }
    }
    switch result {
    case .failure(let error): logger.error("\(stream.name): \(error)")
    case .success(nil): break
    case .success(let (pdu, connection)?):
      do {
        connection.received(try L2CAPFrame(decoding: pdu))
      } catch {
        logger.error("\(stream.name): \(error); PDU dropped")
      }
    }
  }

  private func dispatch(_ event: HCIEvent) {
    switch event {
    case .commandComplete(let event):
      answered(event.commandOpcode, credits: event.numHCICommandPackets, .complete(event.returnParameters))
    case .commandStatus(let event):
      answered(event.commandOpcode, credits: event.numHCICommandPackets, .status(event.status))
    case .numberOfCompletedPackets(let event):
      for entry in event.entries {
        output(
          acl: loopState.modify {
            $0.acl.completed(handle: entry.connectionHandle, count: Int(entry.numCompletedPackets))
          }
        )
      }
    case .leConnectionComplete(let event), .leEnhancedConnectionComplete(let event):
      connectionCompleted(event)
    case .disconnectionComplete(let event):
      disconnected(event)
    case .encryptionChange(let event):
      routed(event.connectionHandle)?.encryptionChanged(event)
    case .encryptionKeyRefreshComplete(let event):
      routed(event.connectionHandle)?.keyRefreshed(event)
    case .leLongTermKeyRequest(let event):
      if let connection = routed(event.connectionHandle) {
        security.longTermKeyRequested(event, on: connection)
      }
    case .leAdvertisingReport, .leUnknown(LEExtendedAdvertisingReport.subevent, _):
      scanned(event)
    case .leConnectionUpdateComplete(let event):
      logger.debug("\(stream.name): connection 0x\(hex16(event.connectionHandle)) parameters updated: \(event)")
    default:
      logger.trace("\(stream.name): event ignored: \(event)")
    }
  }

  private func answered(_ opcode: HCIOpcode, credits: UInt8, _ answer: CommandAnswer) {
    let (pending, writes) = loopState.modify { $0.commands.answered(opcode: opcode, credits: credits) }
    output(commands: writes)
    pending?.onAnswer(.success(answer))
  }

  /// The connection `handle` names, from anywhere (the security manager's timer).
  func connection(_ handle: UInt16) -> HCIConnection? { state.withLock { $0.connections[handle] } }

  /// The connection `handle` names, in the loop's reads.
  private func routed(_ handle: UInt16) -> HCIConnection? { loopState.value.routes[handle] }

  private func connectionCompleted(_ event: LEConnectionComplete) {
    guard event.status == .success else {
      connectionEvents.push(.failed(event.status, role: event.role))
      return
    }
    let connection = HCIConnection(host: self, event: event)
    let fresh = state.withLock { state -> Bool in
      guard state.closed == nil, state.connections[event.connectionHandle] == nil else { return false }
      state.connections[event.connectionHandle] = connection
      return true
    }
    guard fresh else {
      logger.error(
        "\(stream.name): LE Connection Complete for handle 0x\(hex16(event.connectionHandle)) in use, ignored")
      return
    }
    loopState.modify { $0.routes[event.connectionHandle] = connection }
    logger.info(
      "\(stream.name): connected to \(connection.peer) as \(connection.role), handle 0x\(hex16(event.connectionHandle))"
    )
    connectionEvents.push(.connected(connection))
  }

  private func disconnected(_ event: DisconnectionComplete) {
    guard event.status == .success else {
      logger.error("\(stream.name): disconnection of handle 0x\(hex16(event.connectionHandle)) failed: \(event.status)")
      return
    }
    let freed = loopState.modify { state in
      state.routes[event.connectionHandle] = nil
      state.reassembler.reset(handle: event.connectionHandle)
      return state.acl.disconnected(handle: event.connectionHandle)
    }
    output(acl: freed)
    let connection = state.withLock { $0.connections.removeValue(forKey: event.connectionHandle) }
    logger.info("\(stream.name): handle 0x\(hex16(event.connectionHandle)) disconnected: \(event.reason)")
    connection?.didDisconnect(reason: event.reason)
  }

  private func scanned(_ event: HCIEvent) {
    guard let inbox = state.withLock({ $0.scanReports }) else { return }
    do {
      for report in try ScanReport.reports(in: event) ?? [] { inbox.push(report) }
    } catch {
      logger.error("\(stream.name): \(error); report dropped")
    }
  }

  func shutdown(_ reason: String) {
    let taken = state.withLock { state -> ([HCIConnection], Inbox<ScanReport>?)? in
      guard state.closed == nil else { return nil }
      state.closed = reason
      defer {
        state.connections = [:]
        state.scanReports = nil
      }
      return (Array(state.connections.values), state.scanReports)
    }
    guard let (connections, scan) = taken else { return }
    // The stream first: the loop then dispatches nothing more of what it read (`read(_:)`
    // looks before each packet), so no event reaches a connection told below that it ended.
    stream.close()
    logger.info("\(stream.name): host closed: \(reason)")
    // The commands are the loop's (which runs this even once it has ended); a command that
    // reaches the loop after this finds the host closed.
    atLoop { [self] in
      for command in loopState.modify({ $0.commands.removeAll() }) { command.onAnswer(.failure(.closed(reason))) }
    }
    for connection in connections { connection.didDisconnect(reason: nil) }
    scan?.close()
    connectionEvents.close()
    capture?.flush()
  }
}

func hex16(_ value: UInt16) -> String {
  Hex.encode([UInt8(value >> 8), UInt8(value & 0xFF)], separator: "")
}

/// The host's one timer (`OwnedTimer`): an actor on the host's loop, where the host sets
/// its deadlines (a command's, SMP's) and reads them, so it takes no lock, and with the
/// real clock it sleeps on the loop's own timers (no task per sleep). The host's calls,
/// made on the loop, reach it in place.
final actor HostTimer: HomedActor {
  private let home: ExecutorHome
  private let timer: OwnedTimer

  nonisolated var unownedExecutor: UnownedSerialExecutor { home.executor }
  nonisolated var executorHome: ExecutorHome { home }

  init(clock: any EngineClock, loop: EventLoop) {
    home = ExecutorHome(loop)
    timer = OwnedTimer(clock: clock, timers: loop)
  }

  /// Until `stop()`: tells `fire` the time once the earliest deadline `next` reports has
  /// passed (both called on the loop).
  func run(next: () -> Duration?, fire: (Duration) -> Void) async {
    await timer.run(next: next, fire: fire)
  }

  /// A deadline was set; on the loop.
  nonisolated func wake(for deadline: Duration) {
    assumeIsolated(passing: deadline) { $0.timer.wake(for: $1) }
  }

  /// Ends `run`; on the loop.
  nonisolated func stop() {
    assumeIsolated(passing: ()) { timer, _ in timer.end() }
  }

  /// Ends `run`.
  func end() { timer.stop() }
}
