/// Which way a PDU travels. In ANCS the phone is the LL central and the watch the peripheral.
public enum AirDirection: Int, CaseIterable, Hashable, Sendable {
  case centralToPeripheral = 0
  case peripheralToCentral = 1

  public var reversed: AirDirection { self == .centralToPeripheral ? .peripheralToCentral : .centralToPeripheral }
}

/// The link layer of the air-time model, as a plain value: ATT PDUs queued each way are cut
/// into LL packets and carried in connection events, and each PDU gets the time its last
/// packet ends. Protocol/ATT.md, "Air-time model", states the rules:
///
/// - Connection events start at anchors 0, CI, 2 CI, ... A PDU ready at time t goes out from
///   the first anchor at or after t: a PDU the host hands over during an event waits for the
///   next one, so an answer comes one connection interval after its request at the earliest.
/// - An event is a run of exchanges (central packet, T_IFS, peripheral packet, T_IFS); a
///   side with nothing ready sends an empty packet. The event goes on while either side has
///   a packet ready for it and the next exchange ends by the next anchor.
/// - Each direction is first in, first out; packets are never lost.
public struct AirSchedule: Sendable {
  /// A PDU's last packet has been received.
  public struct Delivery: Hashable, Sendable {
    public var id: Int
    public var direction: AirDirection
    public var arrival: Duration
  }

  /// What the events run so far carried.
  public struct Statistics: Hashable, Sendable {
    public var events = 0
    /// Packets with a payload, each way (indexed by `AirDirection.rawValue`).
    public var dataPackets = [0, 0]
    public var emptyPackets = 0
  }

  private struct Item {
    var id: Int
    var fragments: [Int]
    var sent = 0
    var encrypted: Bool
    /// Nanoseconds.
    var ready: Int64
  }

  public let parameters: AirParameters
  public private(set) var statistics = Statistics()
  private var queues: [[Item]] = [[], []]
  private var heads = [0, 0]
  /// The earliest anchor not yet used, in nanoseconds.
  private var nextAnchor: Int64 = 0
  private let interval: Int64
  private let interFrameSpace = AirSchedule.nanoseconds(AirParameters.interFrameSpace)

  public init(_ parameters: AirParameters) {
    self.parameters = parameters
    interval = Self.nanoseconds(parameters.connectionInterval)
  }

  /// Queues a PDU of `size` bytes that the host hands over at `ready`. A PDU is never ready
  /// before the one queued before it the same way; returns when it is ready.
  @discardableResult
  public mutating func enqueue(id: Int, size: Int, direction: AirDirection, encrypted: Bool, ready: Duration)
    -> Duration
  {
    let d = direction.rawValue
    let time = max(queues[d].last.map(\.ready) ?? 0, Self.nanoseconds(ready))
    queues[d].append(Item(id: id, fragments: parameters.fragments(ofPDU: size), encrypted: encrypted, ready: time))
    return .nanoseconds(time)
  }

  /// True when every queued PDU has been delivered.
  public var isEmpty: Bool { AirDirection.allCases.allSatisfy { heads[$0.rawValue] == queues[$0.rawValue].count } }

  /// The anchor of the next connection event with something to carry; nil when nothing is queued.
  public var nextEvent: Duration? { nextEventNanoseconds.map { .nanoseconds($0) } }

  private var nextEventNanoseconds: Int64? {
    let ready = AirDirection.allCases.compactMap { head($0.rawValue)?.ready }.min()
    return ready.map(anchor(atOrAfter:))
  }

  /// The first anchor at or after `time`, and not before the next unused one.
  public func anchor(atOrAfter time: Duration) -> Duration { .nanoseconds(anchor(atOrAfter: Self.nanoseconds(time))) }

  private func anchor(atOrAfter time: Int64) -> Int64 {
    if time <= nextAnchor { return nextAnchor }
    return nextAnchor + (time - nextAnchor + interval - 1) / interval * interval
  }

  /// Runs the connection event at `nextEvent` and returns the PDUs it completed, in the
  /// order their last packets ended.
  public mutating func runEvent() -> [Delivery] {
    guard let anchor = nextEventNanoseconds else { return [] }
    let end = anchor + interval
    var time = anchor
    var deliveries: [Delivery] = []
    var first = true
    while true {
      let central = ready(0, by: anchor)
      let peripheral = ready(1, by: anchor)
      if !first && central == nil && peripheral == nil { break }
      let centralTime = packetTime(central)
      let peripheralTime = packetTime(peripheral)
      let exchange = centralTime + peripheralTime + 2 * interFrameSpace
      // The first exchange always fits: AirParameters checks it for full packets.
      if !first && time + exchange > end { break }
      if central != nil, let id = send(0) {
        deliveries.append(Delivery(id: id, direction: .centralToPeripheral, arrival: .nanoseconds(time + centralTime)))
      }
      let peripheralEnd = time + centralTime + interFrameSpace + peripheralTime
      if peripheral != nil, let id = send(1) {
        deliveries.append(Delivery(id: id, direction: .peripheralToCentral, arrival: .nanoseconds(peripheralEnd)))
      }
      statistics.emptyPackets += (central == nil ? 1 : 0) + (peripheral == nil ? 1 : 0)
      time += exchange
      first = false
    }
    statistics.events += 1
    nextAnchor = end
    return deliveries
  }

  /// Runs events until the PDU `id` is delivered, on a copy: the time it arrives if nothing
  /// more is queued before then (more traffic can only delay it).
  public func projectedArrival(of id: Int) -> Duration? {
    var copy = self
    while !copy.isEmpty {
      if let delivery = copy.runEvent().first(where: { $0.id == id }) { return delivery.arrival }
    }
    return nil
  }

  /// When each PDU of `pdus`, all handed over at time zero, arrives: the delivery time of a
  /// queue of PDUs.
  public static func arrivals(
    of pdus: [(size: Int, direction: AirDirection)], over parameters: AirParameters, encrypted: Bool
  ) -> [Duration] {
    var schedule = AirSchedule(parameters)
    for (index, pdu) in pdus.enumerated() {
      schedule.enqueue(id: index, size: pdu.size, direction: pdu.direction, encrypted: encrypted, ready: .zero)
    }
    var arrivals = [Duration](repeating: .zero, count: pdus.count)
    while !schedule.isEmpty {
      for delivery in schedule.runEvent() { arrivals[delivery.id] = delivery.arrival }
    }
    return arrivals
  }

  // MARK: - Queues

  private func head(_ direction: Int) -> Item? {
    heads[direction] < queues[direction].count ? queues[direction][heads[direction]] : nil
  }

  /// The next packet `direction` has ready for the event at `anchor`: its size and whether
  /// it is encrypted.
  private func ready(_ direction: Int, by anchor: Int64) -> (size: Int, encrypted: Bool)? {
    guard let item = head(direction), item.ready <= anchor else { return nil }
    return (item.fragments[item.sent], item.encrypted)
  }

  private func packetTime(_ packet: (size: Int, encrypted: Bool)?) -> Int64 {
    parameters.phy.packetNanoseconds(payload: packet?.size ?? 0, encrypted: packet?.encrypted ?? false)
  }

  /// Sends the head packet of `direction`; returns the PDU's id when that was its last.
  private mutating func send(_ direction: Int) -> Int? {
    statistics.dataPackets[direction] += 1
    let index = heads[direction]
    queues[direction][index].sent += 1
    let item = queues[direction][index]
    guard item.sent == item.fragments.count else { return nil }
    heads[direction] += 1
    if heads[direction] >= 256 && heads[direction] * 2 >= queues[direction].count {
      queues[direction].removeFirst(heads[direction])
      heads[direction] = 0
    }
    return item.id
  }

  static func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }
}
