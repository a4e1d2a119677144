import ATT
import Runtime
import Wire

/// Two in-process bearers joined by the air-time model: what one end sends reaches the
/// other when `AirSchedule` says its last LL packet ends, on an injected clock. With a
/// `ManualClock` the test moves time; with `SystemClock` (`ancs demo --air`) the link is as
/// slow as the LE link it stands for. Otherwise it behaves like `MemoryLink`: one security
/// level and one closed state for both ends; pairing costs no air time.
public enum AirLink {
  public static func pair(
    _ parameters: AirParameters, clock: any EngineClock, pairing: PairingPolicy = .accept(upTo: .authenticated),
    initialLevel: SecurityLevel = .unencrypted
  ) -> (central: AirBearer, peripheral: AirBearer) {
    let air = AirBearer.Air(
      parameters: parameters, clock: clock, security: MemoryBearer.Shared(level: initialLevel, pairing: pairing))
    return (
      AirBearer(air: air, outgoing: .centralToPeripheral, name: "air(central, \(parameters))"),
      AirBearer(air: air, outgoing: .peripheralToCentral, name: "air(peripheral, \(parameters))")
    )
  }
}

/// One end of an `AirLink`.
public final class AirBearer: ATTBearer {
  /// What both ends share: the schedule, the PDUs on the air, and the waiting receivers.
  final class Air: Sendable {
    struct State {
      var schedule: AirSchedule
      var nextID = 0
      /// PDUs sent and not yet received, each way, oldest first.
      var inFlight: [[(id: Int, bytes: [UInt8])]] = [[], []]
      /// Arrival times of PDUs whose connection event has begun.
      var arrivals: [Int: Duration] = [:]
      var closed = false
      /// Changes on every send and on close; receivers wait for a change.
      var generation: UInt64 = 0
      var nextWaiter: UInt64 = 0
      var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]

      /// Runs the events whose anchor has passed: no PDU sent from now on can join them.
      mutating func runEvents(before now: Duration) {
        while let anchor = schedule.nextEvent, anchor < now {
          for delivery in schedule.runEvent() { arrivals[delivery.id] = delivery.arrival }
        }
      }

      mutating func changed() -> [CheckedContinuation<Void, Never>] {
        generation &+= 1
        defer { waiters = [:] }
        return Array(waiters.values)
      }
    }

    enum Step {
      case deliver([UInt8])
      case closed
      /// Wait until the clock reaches the deadline, if any, or the state changes.
      case wait(Duration?, generation: UInt64)
    }

    let parameters: AirParameters
    let clock: any EngineClock
    let security: MemoryBearer.Shared
    let state: Locked<State>

    init(parameters: AirParameters, clock: any EngineClock, security: MemoryBearer.Shared) {
      self.parameters = parameters
      self.clock = clock
      self.security = security
      state = Locked(State(schedule: AirSchedule(parameters)))
    }

    /// What a receiver of `direction` does next.
    func step(_ direction: AirDirection) -> Step {
      state.withLock { state in
        if state.closed { return .closed }
        // Read inside the lock, so that every send stamped before `now` is already queued.
        let now = clock.now
        state.runEvents(before: now)
        guard let head = state.inFlight[direction.rawValue].first else {
          return .wait(nil, generation: state.generation)
        }
        guard let arrival = state.arrivals[head.id] else {
          return .wait(state.schedule.projectedArrival(of: head.id), generation: state.generation)
        }
        guard arrival <= now else { return .wait(arrival, generation: state.generation) }
        state.inFlight[direction.rawValue].removeFirst()
        state.arrivals[head.id] = nil
        return .deliver(head.bytes)
      }
    }

    /// Returns when the clock reaches `deadline` (if given) or the state has changed since
    /// `generation`; false when the task is cancelled.
    func wait(until deadline: Duration?, since generation: UInt64) async -> Bool {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await self.change(since: generation) }
        if let deadline { group.addTask { [clock] in try? await clock.sleep(until: deadline) } }
        await group.next()
        group.cancelAll()
      }
      return !Task.isCancelled
    }

    private func change(since generation: UInt64) async {
      let id = state.withLock { state in
        state.nextWaiter += 1
        return state.nextWaiter
      }
      await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
          let now = state.withLock { state -> Bool in
            if state.generation != generation || Task.isCancelled { return true }
            state.waiters[id] = continuation
            return false
          }
          if now { continuation.resume() }
        }
      } onCancel: {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
      }
    }

    func close() {
      let waiters = state.withLock { state in
        state.closed = true
        return state.changed()
      }
      for waiter in waiters { waiter.resume() }
    }
  }

  let air: Air
  let outgoing: AirDirection
  public let name: String

  init(air: Air, outgoing: AirDirection, name: String) {
    self.air = air
    self.outgoing = outgoing
    self.name = name
  }

  public var parameters: AirParameters { air.parameters }

  /// Queues the PDU on the air at the clock's time. A PDU over the link's ATT_MTU is refused,
  /// as no ATT layer would send it. Never suspends.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    if pdu.count > air.parameters.mtu { throw .tooLarge(size: pdu.count, limit: air.parameters.mtu) }
    let encrypted = securityLevel >= .encrypted
    let waiters = try air.state.withLock { state throws(BearerError) -> [CheckedContinuation<Void, Never>] in
      if state.closed { throw .disconnected }
      let id = state.nextID
      state.nextID += 1
      state.schedule.enqueue(
        id: id, size: pdu.count, direction: outgoing, encrypted: encrypted, ready: air.clock.now)
      state.inFlight[outgoing.rawValue].append((id, pdu))
      return state.changed()
    }
    for waiter in waiters { waiter.resume() }
  }

  /// The next PDU once its last packet has arrived; nil when the link is closed (what was
  /// still on the air is lost) or the waiting task is cancelled (nothing is lost).
  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    while true {
      switch air.step(outgoing.reversed) {
      case .deliver(let pdu): return pdu
      case .closed: return nil
      case .wait(let deadline, let generation):
        if await !air.wait(until: deadline, since: generation) { return nil }
      }
    }
  }

  public var securityLevel: SecurityLevel { air.security.level }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    if air.state.withLock({ $0.closed }) { throw .disconnected }
    return try air.security.pairingResult(level)
  }

  public func close() { air.close() }
}
