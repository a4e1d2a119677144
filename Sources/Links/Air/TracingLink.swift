import ATT
import Runtime
import Wire

/// What a PDU of a recorded run had to wait for before its sender could send it.
public enum AirCause: Hashable, Sendable {
  /// Nothing: ready when the link comes up.
  case start
  /// The arrival of the PDU with this index in the trace, one its sender had received.
  case pdu(Int)
  /// The link falling quiet: ready at the first connection event after every earlier PDU of
  /// the trace has arrived (something done once everything before was over).
  case idle
}

/// One PDU of a recorded run.
public struct TracedPDU: Hashable, Sendable {
  public var direction: AirDirection
  public var size: Int
  public var encrypted: Bool
  public var cause: AirCause
}

/// The PDUs of a run over a `TracingLink`, in the order they were sent, each with its cause:
///
/// - `PDUTrace.origin`, when the sending task sets it;
/// - else the PDU the sending task itself received last on that end: an engine's receive
///   loop answers and reacts on the loop, so that is the PDU it was handling;
/// - else the PDU that end received last (a task that never receives, such as a client
///   waiting for each answer in turn, sends after what its end has received);
/// - else `.start`.
///
/// Every cause names an earlier PDU, so `AirReplay` can replay the trace.
public final class PDUTrace: Sendable {
  /// The cause of every PDU the task sends while it is bound.
  @TaskLocal public static var origin: AirCause?

  struct State {
    var records: [TracedPDU] = []
    /// The last PDU taken by the receiving end of each direction.
    var lastReceived: [Int?] = [nil, nil]
    /// The last PDU each task took, by task and direction.
    var lastReceivedByTask: [TaskKey: Int] = [:]
  }

  struct TaskKey: Hashable {
    var task: Int?
    var direction: AirDirection
  }

  let state = Locked(State())

  public init() {}

  public var records: [TracedPDU] { state.withLock { $0.records } }

  /// The index of the last PDU the receiving end of `direction` has taken.
  public func lastReceived(over direction: AirDirection) -> Int? {
    state.withLock { $0.lastReceived[direction.rawValue] }
  }

  static var currentTask: Int? { withUnsafeCurrentTask { $0?.hashValue } }
}

extension PDUTrace.State {
  /// The cause of a PDU sent now by `task` over `direction`.
  func cause(sentBy task: Int?, over direction: AirDirection) -> AirCause {
    let incoming = direction.reversed
    if let index = lastReceivedByTask[PDUTrace.TaskKey(task: task, direction: incoming)] { return .pdu(index) }
    return lastReceived[incoming.rawValue].map(AirCause.pdu) ?? .start
  }
}

/// Two in-process bearers, like `MemoryLink`, that record every PDU in a `PDUTrace` with
/// what it waited for; `AirReplay` then says when each would arrive over an LE link. The
/// run itself has no delays.
public enum TracingLink {
  public static func pair(
    pairing: PairingPolicy = .accept(upTo: .authenticated), initialLevel: SecurityLevel = .unencrypted
  ) -> (central: TracingBearer, peripheral: TracingBearer, trace: PDUTrace) {
    let trace = PDUTrace()
    let security = MemoryBearer.Shared(level: initialLevel, pairing: pairing)
    let toPeripheral = Inbox<TracingBearer.Tagged>()
    let toCentral = Inbox<TracingBearer.Tagged>()
    return (
      TracingBearer(
        trace: trace, security: security, inbox: toCentral, outbox: toPeripheral, outgoing: .centralToPeripheral),
      TracingBearer(
        trace: trace, security: security, inbox: toPeripheral, outbox: toCentral, outgoing: .peripheralToCentral),
      trace
    )
  }
}

/// One end of a `TracingLink`.
public final class TracingBearer: ATTBearer {
  struct Tagged: Sendable {
    var index: Int
    var bytes: [UInt8]
  }

  let trace: PDUTrace
  let security: MemoryBearer.Shared
  let inbox: Inbox<Tagged>
  let outbox: Inbox<Tagged>
  let outgoing: AirDirection
  private let hook = Locked<(@Sendable () async -> Void)?>(nil)

  init(
    trace: PDUTrace, security: MemoryBearer.Shared, inbox: Inbox<Tagged>, outbox: Inbox<Tagged>, outgoing: AirDirection
  ) {
    self.trace = trace
    self.security = security
    self.inbox = inbox
    self.outbox = outbox
    self.outgoing = outgoing
  }

  public var name: String { outgoing == .centralToPeripheral ? "tracing(central)" : "tracing(peripheral)" }

  /// Runs `hook` each time this end asks for its next PDU: on an engine's receive loop, once
  /// the PDU before has been handled, so the hook sees what that PDU changed.
  public func beforeEachReceive(_ hook: @escaping @Sendable () async -> Void) { self.hook.withLock { $0 = hook } }

  /// Records and queues the PDU; never suspends, so a connection sends it from the task that
  /// decided it, whose cause the trace reads.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    let origin = PDUTrace.origin
    let task = PDUTrace.currentTask
    let encrypted = securityLevel >= .encrypted
    // Recorded and queued under one lock, so the trace's order is the order of delivery.
    let sent = trace.state.withLock { state -> Bool in
      let cause = origin ?? state.cause(sentBy: task, over: outgoing)
      guard outbox.push(Tagged(index: state.records.count, bytes: pdu)) else { return false }
      state.records.append(TracedPDU(direction: outgoing, size: pdu.count, encrypted: encrypted, cause: cause))
      return true
    }
    if !sent { throw .disconnected }
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    await hook.withLock { $0 }?()
    // Over the air the next PDU comes hundreds of microseconds later, long after the tasks
    // the last one woke have sent what they send at once; yielding first lets them run
    // here too, so their PDUs are traced after the PDU that woke them, not a later one.
    // (Scheduling is not guaranteed: a PDU traced later only gets a later cause.)
    for _ in 0..<8 { await Task.yield() }
    guard let tagged = await inbox.next() else { return nil }
    let key = PDUTrace.TaskKey(task: PDUTrace.currentTask, direction: outgoing.reversed)
    trace.state.withLock { state in
      state.lastReceived[key.direction.rawValue] = tagged.index
      state.lastReceivedByTask[key] = tagged.index
    }
    return tagged.bytes
  }

  public var securityLevel: SecurityLevel { security.level }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    if inbox.isClosed { throw .disconnected }
    return try security.pairingResult(level)
  }

  public func close() {
    inbox.close()
    outbox.close()
  }
}
