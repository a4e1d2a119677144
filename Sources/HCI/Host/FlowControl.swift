/// HCI command flow control (Vol 4 Part E 4.4): the host may send as many commands as the
/// last Command Complete or Command Status allowed (Num_HCI_Command_Packets), and one before
/// the first such event. Each command also has a deadline and its waiter (who takes its
/// answer), kept here with it: the host's one timer tells the flow the time
/// (`timerFired(now:)`), and the commands past theirs are abandoned. Pure: takes inputs,
/// returns the command packets to write now and the waiters to tell.
struct CommandFlow<Waiter: Sendable>: Sendable {
  private struct Command: Sendable {
    var id: UInt64
    var opcode: HCIOpcode
    /// Dropped once sent.
    var packet: [UInt8]
    var deadline: Duration
    var waiter: Waiter
  }

  /// Commands the controller accepts now. "The Host shall assume that the Controller can
  /// accept one HCI Command packet" until told otherwise (Vol 4 Part E 4.4).
  private(set) var credits = 1
  private var queued: [Command] = []
  /// Sent and not yet answered, oldest first.
  private var inFlight: [Command] = []

  /// Commands waiting for a credit.
  var queuedCount: Int { queued.count }
  var inFlightCount: Int { inFlight.count }

  /// The earliest deadline of a command queued or in flight; nil when there is none.
  var deadline: Duration? { (queued.lazy.map(\.deadline) + inFlight.lazy.map(\.deadline)).min() }

  /// Queues a command that must be answered by `deadline`; returns what may be written now.
  mutating func submit(id: UInt64, opcode: HCIOpcode, packet: [UInt8], deadline: Duration, waiter: Waiter)
    -> [[UInt8]]
  {
    queued.append(Command(id: id, opcode: opcode, packet: packet, deadline: deadline, waiter: waiter))
    return release()
  }

  /// The time is `now`: every command past its deadline is abandoned. Returns their waiters
  /// and opcodes, oldest first, and what may be written now.
  mutating func timerFired(now: Duration) -> (expired: [(opcode: HCIOpcode, waiter: Waiter)], send: [[UInt8]]) {
    let expired = (inFlight + queued).filter { $0.deadline <= now }.map { ($0.opcode, $0.waiter) }
    guard !expired.isEmpty else { return ([], []) }
    return (expired, forget { $0.deadline <= now })
  }

  /// A Command Complete or Command Status for `opcode` granting `credits`: the oldest command
  /// in flight with that opcode is answered (nil when none is: opcode 0x0000 only returns
  /// credits, and a late answer to an abandoned command matches nothing).
  mutating func answered(opcode: HCIOpcode, credits: UInt8) -> (waiter: Waiter?, send: [[UInt8]]) {
    self.credits = Int(credits)
    var waiter: Waiter?
    if let index = inFlight.firstIndex(where: { $0.opcode == opcode }) { waiter = inFlight.remove(at: index).waiter }
    return (waiter, release())
  }

  /// Forgets a command that timed out or was cancelled; returns its waiter (nil when the
  /// command is no longer here) and what may be written now. One that was sent may never be
  /// answered, and with it the credit; like Linux after a command timeout, the host then
  /// assumes the controller takes one command again.
  mutating func abandon(id: UInt64) -> (waiter: Waiter?, send: [[UInt8]]) {
    let waiter = (inFlight + queued).first { $0.id == id }?.waiter
    return (waiter, forget { $0.id == id })
  }

  /// Forgets the commands `goes` picks; returns what may be written now.
  private mutating func forget(_ goes: (Command) -> Bool) -> [[UInt8]] {
    queued.removeAll(where: goes)
    let sent = inFlight.count
    inFlight.removeAll(where: goes)
    if inFlight.count < sent { credits = max(credits, 1) }
    return release()
  }

  /// Every command queued or in flight, forgotten (the host closed): their waiters, oldest
  /// first.
  mutating func removeAll() -> [Waiter] {
    defer {
      queued = []
      inFlight = []
    }
    return (inFlight + queued).map(\.waiter)
  }

  private mutating func release() -> [[UInt8]] {
    var send: [[UInt8]] = []
    while credits > 0, !queued.isEmpty {
      var next = queued.removeFirst()
      credits -= 1
      send.append(next.packet)
      next.packet = []
      inFlight.append(next)
    }
    return send
  }
}

/// Host-to-controller ACL flow control (Vol 4 Part E 4.1.1): never more packets outstanding
/// than the controller has buffers (Total_Num_LE_ACL_Data_Packets); Number Of Completed
/// Packets frees them, and so does a disconnection for that handle's packets (7.7.5: "the
/// Controller ... shall consider all data packets that have been sent to the Controller and
/// are returned ... as flushed"). Packets wait in order. Pure.
struct ACLFlow: Sendable {
  /// The controller's buffer count (at least 1).
  let capacity: Int
  private(set) var outstanding: [UInt16: Int] = [:]
  private var queue: [ACLPacket] = []

  init(capacity: Int) { self.capacity = max(1, capacity) }

  var outstandingCount: Int { outstanding.values.reduce(0, +) }
  var queuedCount: Int { queue.count }

  /// Queues the fragments of one PDU; returns the packets that may be written now.
  mutating func enqueue(_ packets: [ACLPacket]) -> [ACLPacket] {
    queue.append(contentsOf: packets)
    return release()
  }

  /// The controller freed `count` buffers of `handle`. More than were outstanding is capped
  /// (a controller bug must not let the host overrun it later).
  mutating func completed(handle: UInt16, count: Int) -> [ACLPacket] {
    let held = outstanding[handle] ?? 0
    let freed = min(held, max(0, count))
    outstanding[handle] = held - freed == 0 ? nil : held - freed
    return release()
  }

  /// `handle` is gone: its queued packets are dropped and its buffers count as free.
  mutating func disconnected(handle: UInt16) -> [ACLPacket] {
    queue.removeAll { $0.handle == handle }
    outstanding[handle] = nil
    return release()
  }

  private mutating func release() -> [ACLPacket] {
    var send: [ACLPacket] = []
    var total = outstandingCount
    while total < capacity, !queue.isEmpty {
      let packet = queue.removeFirst()
      outstanding[packet.handle, default: 0] += 1
      total += 1
      send.append(packet)
    }
    return send
  }
}
