import ATT
import Links
import Phone
import Processes
import Runtime
import Watch
import Wire

/// `ancs bench --air PHY,CI,MTU,DLE`: how long a scenario would take over an LE link
/// (Protocol/ATT.md, "Air-time model").
///
/// The phone holds every notification the scenario posts when the watch connects. Phone and
/// watch run over a `TracingLink`, without delays and on a clock that stands still (no
/// timeout or timer fires), and every PDU is recorded with what it waited for; `AirReplay`
/// then gives each PDU's arrival over the LE link. After the sync and the rest of the
/// watch's setup, each notification is posted again, one at a time on the quiet link, for
/// the latency of a live notification.
public struct AirBench {
  var parameters: AirParameters
  var scenario: Scenario
  /// The scenario's name in the results.
  var label: String

  public init(parameters: AirParameters, scenario: Scenario, label: String) {
    self.parameters = parameters
    self.scenario = scenario
    self.label = label
  }

  /// Traced runs per prediction; each figure is their median. The watch engine's reads of
  /// the phone's time and battery race its first commands for the one ATT request turn, so
  /// a run now and then takes another order (Protocol/ATT.md, "Air-time model").
  static let runs = 5

  public func run() async throws -> [Bench.Result] {
    var runs: [[Bench.Result]] = []
    for _ in 0..<Self.runs { runs.append(try await traced()) }
    return runs[0].indices.map { row in
      var result = runs[0][row]
      result.value = runs.map { $0[row].value }.sorted()[runs.count / 2]
      if result.unit == "ms" && result.value >= 10_000 { (result.value, result.unit) = (result.value / 1000, "s") }
      return result
    }
  }

  /// One traced run, replayed.
  func traced() async throws -> [Bench.Result] {
    let phone = try Phone(wallClock: FixedWallClock(seconds: 1_796_040_000))
    for app in scenario.apps { await phone.register(app: app.id, name: app.name) }
    let notifications = posted(on: phone)
    guard !notifications.isEmpty else { throw UsageError("\(label) posts no notification: nothing to predict") }
    for notification in notifications { await phone.post(notification) }

    let (central, peripheral, trace) = TracingLink.pair()
    let still = ManualClock()
    let serving = Task { await phone.serve(central, clock: still) }
    var options = WatchOptions()
    options.mtu = UInt16(parameters.mtu)
    options.reconnect = false
    let engine = WatchEngine(options: options, clock: still) { peripheral }
    let milestones = TraceMilestones()
    peripheral.beforeEachReceive { [weak engine] in
      guard let engine else { return }
      let shown = await engine.state.notifications.count { $0.fetched && !$0.appName.isEmpty }
      milestones.watchShows(shown, after: trace.lastReceived(over: .centralToPeripheral))
    }
    // The last step of the watch's setup: following the phone's time and battery.
    let followed = [BluetoothUUID(0x1805), 0x180F].compactMap { phone.server.handles(of: $0)?.first?.value }
    // Each PDU the phone takes may be the write that ends it: looked at again then.
    central.beforeEachReceive { milestones.poke() }
    let setUpDone = { () async -> Bool in
      for session in phone.server.sessions {
        var all = true
        for handle in followed where !(await session.cccd(for: handle).contains(.notifications)) { all = false }
        if all { return true }
      }
      return false
    }
    let running = Task {
      await engine.run()
      milestones.finish()
    }
    let count = notifications.count
    var changes = milestones.changes.makeAsyncIterator()
    // Live posts go on the quiet link: after the sync and after the rest of the setup.
    var reached = await milestones.wait(&changes) { $0.shown.count >= count }
    while reached, await !setUpDone() { reached = await changes.next(isolation: nil) != nil }
    for (index, notification) in notifications.enumerated() where reached {
      await PDUTrace.$origin.withValue(.idle) { _ = await phone.post(notification) }
      reached = await milestones.wait(&changes) { $0.shown.count > count + index }
    }
    engine.stop()
    await running.value
    central.close()
    await serving.value
    for end in [central, peripheral] { end.beforeEachReceive {} }
    guard reached else { throw BenchFailure("the watch stopped before it showed every notification") }
    return results(trace.records, milestones.shownAfter, count: count)
  }

  /// Every notification the scenario posts (post and call steps), in step order.
  func posted(on phone: Phone) -> [PhoneNotification] {
    scenario.steps.compactMap { step in
      let template: NotificationTemplate?
      switch step.action {
      case .post(let id): template = scenario.notifications[id]
      case .call(let caller, _): template = .incomingCall(from: caller)
      default: template = nil
      }
      return template.map { $0.notification(date: $0.date.value(on: phone)) }
    }
  }

  func results(_ trace: [TracedPDU], _ milestones: [Int], count: Int) -> [Bench.Result] {
    let replay = AirReplay(trace, over: parameters)
    func shown(_ notifications: Int) -> Duration { replay.arrivals[milestones[notifications - 1]] }
    let posts = trace.indices.filter { trace[$0].cause == .idle }
    let latencies = posts.enumerated().map { shown(count + $0.offset + 1) - replay.ready[$0.element] }.sorted()
    let sync = Array(trace[...milestones[count - 1]])
    let syncReplay = AirReplay(sync, over: parameters)
    let bulk = AirSchedule.arrivals(
      of: Array(repeating: (parameters.mtu, .centralToPeripheral), count: 1000), over: parameters, encrypted: true)
    let name = "air \(parameters)"
    func time(_ text: String, _ duration: Duration) -> Bench.Result {
      Bench.Result(name: "\(name): \(text)", value: duration.seconds * 1000, unit: "ms")
    }
    return [
      time("connection to first notification shown (\(label), \(count) on the phone)", shown(1)),
      time("connection to all \(count) shown", shown(count)),
      Bench.Result(name: "\(name): PDUs until all shown", value: Double(sync.count), unit: "PDUs"),
      Bench.Result(
        name: "\(name): connection events until all shown", value: Double(syncReplay.statistics.events),
        unit: "events"),
      time("one notification posted on the quiet link to shown, median of \(count)", latencies[count / 2]),
      time("one notification posted on the quiet link to shown, slowest", latencies[count - 1]),
      Bench.Result(
        name: "\(name): bulk notifications (\(parameters.mtu - 3)-byte values)",
        value: Double(1000 * (parameters.mtu - 3)) / bulk[999].seconds / 1000, unit: "kB/s"),
    ]
  }

}

/// How far a traced run has come: for each number of notifications the watch shows, the
/// PDU whose arrival made it show that many; and a nudge whenever the phone takes a PDU.
final class TraceMilestones: Sendable {
  struct State {
    var shown: [Int] = []
  }

  private let state = Locked(State())
  let changes: AsyncStream<Void>
  private let continuation: AsyncStream<Void>.Continuation

  init() { (changes, continuation) = AsyncStream.makeStream() }

  /// Index, for each count from 1, of the PDU after which the watch showed that many.
  var shownAfter: [Int] { state.withLock { $0.shown } }

  /// The watch shows `count` notifications after handling the PDU `index`.
  func watchShows(_ count: Int, after index: Int?) {
    let more = state.withLock { state -> Bool in
      guard let index, count > state.shown.count else { return false }
      state.shown += Array(repeating: index, count: count - state.shown.count)
      return true
    }
    if more { continuation.yield() }
  }

  /// Something may have changed that is not kept here (the phone took a PDU).
  func poke() { continuation.yield() }

  func finish() { continuation.finish() }

  /// Waits until `condition` holds; false when the run ended first.
  func wait(_ changes: inout AsyncStream<Void>.Iterator, until condition: (State) -> Bool) async -> Bool {
    repeat {
      if state.withLock({ condition($0) }) { return true }
    } while await changes.next(isolation: nil) != nil
    return state.withLock { condition($0) }
  }
}

/// A benchmark that could not produce its figure.
struct BenchFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
