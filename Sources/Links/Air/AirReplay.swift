/// A recorded run (`PDUTrace`) replayed over an LE link: each PDU is handed to the link
/// layer when its cause allows (`AirCause`) and never before the PDU its sender sent
/// before it, and `AirSchedule` carries it. The hosts are taken to answer at once: the
/// time they need to compute is not modelled.
public struct AirReplay: Sendable {
  public let parameters: AirParameters
  /// When each PDU was handed to the link layer.
  public let ready: [Duration]
  /// When each PDU's last packet ended at the receiver.
  public let arrivals: [Duration]
  public let statistics: AirSchedule.Statistics

  /// Causes must name earlier PDUs, as a `TracingLink` records them; a PDU whose cause does
  /// not is ready at time zero.
  public init(_ trace: [TracedPDU], over parameters: AirParameters) {
    var schedule = AirSchedule(parameters)
    var ready = [Duration?](repeating: nil, count: trace.count)
    var arrivals = [Duration?](repeating: nil, count: trace.count)
    let order = AirDirection.allCases.map { direction in trace.indices.filter { trace[$0].direction == direction } }
    var next = [0, 0]
    // Every PDU before `arrived` has arrived, the last of them at `latest`.
    var arrived = 0
    var latest = Duration.zero
    func readyTime(_ index: Int) -> Duration? {
      switch trace[index].cause {
      case .start: return .zero
      case .pdu(let cause): return (0..<index).contains(cause) ? arrivals[cause] : .zero
      case .idle: return arrived >= index ? schedule.anchor(atOrAfter: latest) : nil
      }
    }
    while true {
      while arrived < trace.count, let arrival = arrivals[arrived] {
        latest = max(latest, arrival)
        arrived += 1
      }
      for direction in 0..<2 {
        while next[direction] < order[direction].count, let time = readyTime(order[direction][next[direction]]) {
          let index = order[direction][next[direction]]
          let pdu = trace[index]
          ready[index] = schedule.enqueue(
            id: index, size: pdu.size, direction: pdu.direction, encrypted: pdu.encrypted, ready: time)
          next[direction] += 1
        }
      }
      if schedule.isEmpty { break }
      for delivery in schedule.runEvent() { arrivals[delivery.id] = delivery.arrival }
    }
    self.parameters = parameters
    // Every PDU is delivered: each waits only for earlier ones, which the loop delivers first.
    self.ready = ready.map { $0 ?? .zero }
    self.arrivals = arrivals.map { $0 ?? .zero }
    statistics = schedule.statistics
  }
}
