import ANCS
import Conformance
import Foundation
import Links
import Processes
import Runtime
import Sockets
import Watch
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// `ancs bench --fleet N`: one phone process serving N watch sessions over Unix sockets.
///
/// The phone is `ancs phone --commands jsonl --no-events`, a child process driven through its
/// standard input as a script would; the N watches are `WatchEngine`s in this process, each
/// on its own socket. The scenario posts `notifications` notifications and, once `window`
/// newer ones are posted, removes each but every `kept`-th. Posting runs at most `ahead`
/// notifications ahead of the slowest watch, so every watch shows every notification before
/// it is removed and the rate counts the fleet's work, not a backlog. On the quiet fleet,
/// single posts are then timed until all N watches show them. The run fails (exit code 1)
/// unless every watch ends holding exactly the phone's notifications (`{"cmd":"list"}`:
/// UIDs, titles, messages) and the phone's open descriptors return to their baseline once
/// every watch has disconnected.
public struct FleetBench {
  var sessions: Int
  var notifications: Int
  /// The loops that read the watches' links (one per core: `CLI.runsTasksOnEventLoop`).
  var loops: any EventLoopGroup
  var latencySamples = 20

  public init(sessions: Int, notifications: Int, loops: any EventLoopGroup) {
    self.sessions = sessions
    self.notifications = notifications
    self.loops = loops
  }

  /// Notifications on the phone during the scenario, before the oldest is removed.
  static let window = 50
  /// Every `kept`-th notification stays, so the final set spans the whole run.
  static let kept = 100
  /// How far posting may run ahead of the slowest watch (less than `window`).
  static let ahead = 25
  /// The longest any one step may take before the run fails as stuck, in seconds.
  static let patience = 60.0
  /// Descriptors besides the watches' sockets (standard streams, pipes, the listener).
  static let spareFiles = 64

  public func run() async throws -> Int32 {
    let needed = sessions + Self.spareFiles
    let limits = raiseOpenFileLimit(toAtLeast: needed)
    guard limits.soft >= needed else {
      throw UsageError(
        "--fleet \(sessions) needs about \(needed) open files in each process, but the hard limit is \(limits.hard) "
          + "(ulimit -Hn): raise it or run a smaller fleet")
    }
    let path = "/tmp/ancs-fleet-\(getpid()).sock"
    let phone = try SpawnedPhone(
      ancsArguments: ["phone", "--listen", "unix:\(path)", "--commands", "jsonl", "--no-events"])
    let progress = ProgressOutput()
    let run = FleetRun(self, phone: phone, path: path, output: progress)
    let shown = run.progress
    let ticker = progress.ticking(every: progress.isTerminal ? .milliseconds(500) : .seconds(1)) { shown.status() }
    var failure: String?
    do {
      try await run.measure()
    } catch {
      failure = "\(error)"
    }
    // Nothing above throws: the phone is stopped however the run went.
    await phone.stop()
    ticker.cancel()
    await ticker.value
    progress.finish("fleet \(ProgressLine.clock(progress.elapsed)) " + (failure == nil ? "done" : "failed"))
    print("| fleet: \(sessions) watches, one phone process, \(notifications) notifications | result |")
    print("|---|---|")
    for (name, value) in run.rows { print("| \(name) | \(value) |") }
    for check in run.checks { print("check: \(check)") }
    guard let failure else { return 0 }
    print("FAIL: \(failure)")
    return 1
  }

  /// The index-th notification of the scenario, from one of four apps.
  static func notification(_ index: Int) -> StimulusNotification {
    let apps: [(String, CategoryID)] = [
      ("com.example.chat", .social), ("com.apple.mobilemail", .email), ("com.apple.MobileSMS", .social),
      ("com.apple.news", .news),
    ]
    let (app, category) = apps[index % apps.count]
    return StimulusNotification(
      app: app, category: category, title: "Fleet \(index + 1)",
      message: "Message \(index + 1) to every watch of the fleet: the figures for the quarter are in.")
  }

  /// Whether the scenario removes the index-th notification once `window` newer ones exist.
  static func removes(_ index: Int) -> Bool { (index + 1) % kept != 0 }
}

/// Why a fleet run failed.
struct FleetFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// One fleet run: the phone, the watches, and the figures as they are measured.
final class FleetRun {
  let bench: FleetBench
  let phone: SpawnedPhone
  let stimulus: JSONLineStimulus
  let path: String
  let tracker: FleetTracker
  var engines: [WatchEngine] = []
  var tasks: [Task<Void, Never>] = []
  /// Figures, in the order measured.
  var rows: [(String, String)] = []
  /// Checks passed, one line each.
  var checks: [String] = []
  /// Both processes before the first watch connects.
  var baseline = (phone: ProcessFigures(), own: ProcessFigures())
  let clock = ContinuousClock()
  /// How far the run has come, on standard error.
  let progress: FleetProgress

  init(_ bench: FleetBench, phone: SpawnedPhone, path: String, output: ProgressOutput) {
    self.bench = bench
    self.phone = phone
    self.stimulus = JSONLineStimulus(channel: phone)
    self.path = path
    self.tracker = FleetTracker(sessions: bench.sessions)
    self.progress = FleetProgress(bench, tracker: tracker, output: output)
  }

  var sessions: Int { bench.sessions }
  var phoneFigures: ProcessFigures { ProcessFigures(of: phone.processIdentifier) }
  var ownFigures: ProcessFigures { ProcessFigures(of: getpid()) }

  func measure() async throws {
    let stimulus = stimulus
    try await within(FleetBench.patience, "the phone's first answer") { try await stimulus.ready() }
    progress.enter(.warmUp)
    try await warmUp()
    progress.enter(.connect)
    try await connect()
    progress.enter(.scenario(began: progress.output.elapsed, posted: 0))
    try await scenario()
    progress.enter(.latency(sample: 0))
    try await latency()
    progress.enter(.verify)
    try await verify()
    progress.enter(.disconnect)
    try await disconnect()
  }

  // MARK: Phases

  /// One watch connects, subscribes and leaves; then both processes are at their baseline:
  /// a phone that has served a watch and waits for the next, its accept pending and its
  /// run time's descriptors made (right after start some are still being made).
  func warmUp() async throws {
    let tracker = FleetTracker(sessions: 1)
    var watch: (engine: WatchEngine, tasks: [Task<Void, Never>])? = try await startWatch(number: 0, tracker: tracker)
    try await tracker.reach(.connected, within: FleetBench.patience)
    let withOne = (phone: phoneFigures.openFiles, own: ownFigures.openFiles)
    tracker.expectDisconnects()
    watch?.engine.stop()
    for task in watch?.tasks ?? [] { await task.value }
    // The engine holds its socket (in its connector) until it goes.
    watch = nil
    let phoneFiles = await settle(phone.processIdentifier, to: withOne.phone - 1)
    let ownFiles = await settle(getpid(), to: withOne.own - 1)
    guard phoneFiles == withOne.phone - 1, ownFiles == withOne.own - 1 else {
      throw FleetFailure(
        "after the first watch left the phone has \(phoneFiles) open files (\(withOne.phone) with it), "
          + "this process \(ownFiles) (\(withOne.own) with it)")
    }
    baseline = (phoneFigures, ownFigures)
  }

  /// Connects a watch and starts it; its events go to `tracker`.
  func startWatch(number: Int, tracker: FleetTracker) async throws -> (WatchEngine, [Task<Void, Never>]) {
    // Each watch runs on the loop that reads its link (one per core), which hands it each
    // PDU in place.
    let loop = bench.loops.next()
    let bearer = try await UnixSeqpacketLink.connect(path: path, on: loop)
    let engine = WatchEngine(options: Bench.benchWatchOptions, executor: loop) { bearer }
    let events = engine.events()
    return (
      engine,
      [Task { for await event in events { tracker.record(event, watch: number) } }, Task { await engine.run() }]
    )
  }

  /// Connects the watches one after another; they set up concurrently.
  func connect() async throws {
    let before = baseline
    let start = clock.now
    for index in 0..<sessions {
      let (engine, started) = try await startWatch(number: index + 1, tracker: tracker)
      engines.append(engine)
      tasks += started
    }
    try await tracker.reach(.connected, within: FleetBench.patience)
    let took = clock.now - start
    let watches = try await list()["watches"]?.integer ?? -1
    guard watches == sessions else { throw FleetFailure("the phone counts \(watches) watches, not \(sessions)") }
    let after = (phone: phoneFigures, own: ownFigures)
    rows += [
      ("connect and subscribe \(sessions) watches", milliseconds(took)),
      ("phone memory per session (RSS growth, sessions subscribed)", perSession(after.phone, before.phone)),
      ("watch side memory per session (this process, RSS growth)", perSession(after.own, before.own)),
      ("phone threads: before / with \(sessions) sessions", "\(before.phone.threads) / \(after.phone.threads)"),
      ("phone open files: before / with \(sessions) sessions", "\(before.phone.openFiles) / \(after.phone.openFiles)"),
    ]
  }

  /// Posts and removes through the phone's standard input, paced by the slowest watch.
  func scenario() async throws {
    let window = FleetBench.window
    let ahead = FleetBench.ahead
    let before = (phone: phoneFigures, own: ownFigures)
    let shownBefore = tracker.added
    let start = clock.now
    var uids: [UInt32] = []
    var removed: [UInt32] = []
    for index in 0..<bench.notifications {
      if index >= ahead { try await tracker.reach(.shown(uids[index - ahead]), within: FleetBench.patience) }
      uids.append(try await stimulus.post(FleetBench.notification(index)))
      progress.posted(index + 1)
      if index >= window && FleetBench.removes(index - window) {
        try await stimulus.remove(uid: uids[index - window])
        removed.append(uids[index - window])
      }
    }
    for uid in uids { try await tracker.reach(.shown(uid), within: FleetBench.patience) }
    for uid in removed { try await tracker.reach(.removed(uid), within: FleetBench.patience) }
    let shown = tracker.added - shownBefore
    let lastShown = tracker.lastAdded ?? clock.now
    let after = (phone: phoneFigures, own: ownFigures)
    guard shown == sessions * bench.notifications else {
      throw FleetFailure("\(shown) notifications shown, not \(sessions) × \(bench.notifications)")
    }
    checks.append(
      "\(sessions) × \(bench.notifications) notifications shown, each by every watch; \(removed.count) removed")
    rows += [
      (
        "notifications shown per second across all sessions (\(shown) in all)",
        Bench(loops: bench.loops).format(Double(shown) / (lastShown - start).seconds) + " notifications/s"
      ),
      ("scenario, first post until every removal is shown", milliseconds(clock.now - start)),
      ("phone CPU time in the scenario", seconds(after.phone.cpuSeconds - before.phone.cpuSeconds)),
      ("watch side CPU time in the scenario (this process)", seconds(after.own.cpuSeconds - before.own.cpuSeconds)),
      ("phone memory per session after the scenario (RSS growth)", perSession(after.phone, baseline.phone)),
    ]
  }

  /// Single posts on the quiet fleet, each timed until every watch shows it.
  func latency() async throws {
    var all: [Double] = []
    var first: [Double] = []
    for index in 0..<bench.latencySamples {
      progress.set(.latency(sample: index + 1))
      let start = clock.now
      var notification = FleetBench.notification(index)
      notification.title = "Latency \(index + 1)"
      let uid = try await stimulus.post(notification)
      try await tracker.reach(.shown(uid), within: FleetBench.patience)
      let tally = tracker.tally(uid)
      all.append(((tally.allShown ?? start) - start).seconds * 1000)
      first.append(((tally.firstShown ?? start) - start).seconds * 1000)
      try await stimulus.remove(uid: uid)
      try await tracker.reach(.removed(uid), within: FleetBench.patience)
    }
    all.sort()
    first.sort()
    let count = all.count
    rows += [
      (
        "one notification posted on the quiet fleet until all \(sessions) show it, median of \(count)",
        String(format1: Bench.percentile(all, 0.5)) + " ms"
      ),
      ("the same, slowest of \(count)", String(format1: all.last ?? .nan) + " ms"),
      ("the same until the first watch shows it, median", String(format1: Bench.percentile(first, 0.5)) + " ms"),
    ]
  }

  /// Every watch's list against the phone's: the same UIDs, titles and messages.
  func verify() async throws {
    var expected: [UInt32: (title: String, message: String)] = [:]
    for item in try await list()["notifications"]?.array ?? [] {
      guard let uid = item["uid"]?.integer.flatMap(UInt32.init(exactly:)) else {
        throw FleetFailure("the phone's list has an entry without a UID: \(item)")
      }
      expected[uid] = (item["title"]?.string ?? "", item["message"]?.string ?? "")
    }
    var differences: [String] = []
    for (index, engine) in engines.enumerated() {
      if let difference = Self.difference(await engine.state, expected) {
        differences.append("watch \(index + 1) \(difference)")
      }
    }
    if let first = differences.first {
      throw FleetFailure("\(differences.count) of \(sessions) watches differ from the phone; \(first)")
    }
    let problems = tracker.problems
    if let first = problems.first {
      throw FleetFailure("\(problems.count) watch error(s); the first: \(first)")
    }
    checks.append(
      "every one of the \(sessions) watches holds exactly the phone's \(expected.count) notifications "
        + "(UIDs, titles, messages); no watch reported an error")
  }

  /// How a watch's list differs from the phone's; nil when it does not.
  static func difference(_ state: WatchState, _ expected: [UInt32: (title: String, message: String)]) -> String? {
    var missing = Set(expected.keys)
    for notification in state.notifications {
      guard let want = expected[notification.uid] else {
        return "holds UID \(notification.uid) \"\(notification.title)\", which the phone does not"
      }
      guard missing.remove(notification.uid) != nil else { return "lists UID \(notification.uid) twice" }
      if notification.title != want.title || notification.message != want.message || !notification.fetched {
        return "shows UID \(notification.uid) as \"\(notification.title)\": \"\(notification.message)\" "
          + "where the phone has \"\(want.title)\": \"\(want.message)\""
      }
    }
    guard let uid = missing.min() else { return nil }
    return "lacks UID \(uid) \"\(expected[uid]?.title ?? "")\" (\(missing.count) missing)"
  }

  /// Stops every watch; the descriptors of both processes must return to their baselines.
  func disconnect() async throws {
    let (phoneBase, ownBase) = baseline
    tracker.expectDisconnects()
    let start = clock.now
    for engine in engines { engine.stop() }
    for task in tasks { await task.value }
    // The engines hold their sockets (in their connectors) until they go.
    engines = []
    tasks = []
    let phoneFiles = await settle(phone.processIdentifier, to: phoneBase.openFiles)
    let ownFiles = await settle(getpid(), to: ownBase.openFiles)
    let took = clock.now - start
    let watches = try await list()["watches"]?.integer ?? -1
    rows.append(("phone open files after all disconnect", "\(phoneFiles) (\(milliseconds(took)) after the first stop)"))
    guard phoneFiles <= phoneBase.openFiles, ownFiles <= ownBase.openFiles, watches == 0 else {
      throw FleetFailure(
        "after all disconnected the phone has \(phoneFiles) open files (\(phoneBase.openFiles) before) and counts "
          + "\(watches) watches; this process has \(ownFiles) (\(ownBase.openFiles) before)")
    }
    checks.append(
      "open files back to baseline after all disconnect: phone \(phoneFiles) (\(phoneBase.openFiles) before), "
        + "this process \(ownFiles) (\(ownBase.openFiles) before)")
  }

  // MARK: Helpers

  /// The phone's answer to `{"cmd":"list"}`.
  func list() async throws -> JSON {
    let phone = phone
    let line = try await within(FleetBench.patience, "the phone's list") {
      try await phone.exchange(#"{"cmd":"list"}"#)
    }
    guard let answer = try? JSON(parsing: line), answer["ok"]?.bool == true else {
      throw FleetFailure("the phone's answer to list: \(line)")
    }
    return answer
  }

  /// Open files of `pid` once at most `target`, or after 10 s. The last socket of a link
  /// closes on its reader thread, after the session has ended, so there is no event to wait
  /// for: this polls /proc every 5 ms, for at most 10 s.
  func settle(_ pid: Int32, to target: Int) async -> Int {
    let deadline = clock.now + .seconds(10)
    while true {
      let count = ProcessFigures.openFiles(of: pid)
      if count <= target || clock.now >= deadline { return count }
      try? await Task.sleep(for: .milliseconds(5))
    }
  }

  func milliseconds(_ duration: Duration) -> String { String(format1: duration.seconds * 1000) + " ms" }
  func seconds(_ value: Double) -> String { String(format1: value) + " s" }
  /// Resident memory grown per session.
  func perSession(_ after: ProcessFigures, _ before: ProcessFigures) -> String {
    String(format1: Double(after.residentKiB - before.residentKiB) / Double(sessions)) + " KiB"
  }
}

/// Runs `body`, failing when it takes longer than `seconds` (it is cancelled then).
func within<T: Sendable>(
  _ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
  try await withThrowingTaskGroup(of: T?.self) { group in
    group.addTask { try await body() }
    group.addTask {
      try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
      return nil
    }
    defer { group.cancelAll() }
    guard let result = try await group.next(), let value = result else {
      throw FleetFailure("no \(what) within \(Int(seconds)) s")
    }
    return value
  }
}

/// What a fleet run shows while it goes (`ProgressOutput`): the phase, and its counts.
final class FleetProgress: Sendable {
  enum Phase: Sendable {
    case warmUp
    case connect
    /// Since `began` (on the output's time); `posted` so far.
    case scenario(began: Duration, posted: Int)
    case latency(sample: Int)
    case verify
    case disconnect
  }

  let output: ProgressOutput
  private let tracker: FleetTracker
  private let sessions: Int
  private let notifications: Int
  private let samples: Int
  private let phase = Locked(Phase.warmUp)

  init(_ bench: FleetBench, tracker: FleetTracker, output: ProgressOutput) {
    self.output = output
    self.tracker = tracker
    (sessions, notifications, samples) = (bench.sessions, bench.notifications, bench.latencySamples)
  }

  /// Starts a phase and shows it at once.
  func enter(_ next: Phase) {
    set(next)
    let (name, text) = status()
    output.update(text, phase: name)
  }

  /// The phase's counts move on; shown at the next tick.
  func set(_ next: Phase) { phase.withLock { $0 = next } }

  /// In the scenario: `count` notifications posted so far.
  func posted(_ count: Int) {
    phase.withLock { if case .scenario(let began, _) = $0 { $0 = .scenario(began: began, posted: count) } }
  }

  /// The phase's name, and the line for now, e.g. `fleet 1:12 scenario: 3200/10000 posted,
  /// 3150/10000 on every watch, 44/s, ETA 1:25`.
  func status() -> (phase: String, text: String) {
    let elapsed = output.elapsed
    let (name, detail): (String, String)
    switch phase.withLock({ $0 }) {
    case .warmUp: (name, detail) = ("warm-up", "one watch connects and leaves")
    case .connect: (name, detail) = ("connect", "\(tracker.connected)/\(sessions) watches subscribed")
    case .scenario(let began, let posted):
      let everywhere = min(tracker.shownByAll, notifications)
      (name, detail) = (
        "scenario",
        "\(posted)/\(notifications) posted, "
          + ProgressLine.count(everywhere, of: notifications, after: elapsed - began, unit: "on every watch")
      )
    case .latency(let sample): (name, detail) = ("latency", "sample \(sample)/\(samples)")
    case .verify: (name, detail) = ("verify", "every watch's list against the phone's")
    case .disconnect: (name, detail) = ("disconnect", "\(sessions) watches leave")
    }
    return (name, "fleet \(ProgressLine.clock(elapsed)) \(name): \(detail)")
  }
}

/// What the fleet's watches report, tallied for the bench to await: how many are connected,
/// and per UID how many watches show it and how many have removed it.
final class FleetTracker: Sendable {
  enum Goal: Sendable {
    /// Every watch connected and subscribed.
    case connected
    /// Every watch shows the UID.
    case shown(UInt32)
    /// Every watch has removed the UID.
    case removed(UInt32)
  }

  struct Tally: Sendable {
    var shown = 0
    var removed = 0
    var firstShown: ContinuousClock.Instant?
    var allShown: ContinuousClock.Instant?
  }

  private typealias Waiter = CheckedContinuation<Void, Never>
  private struct State {
    var tallies: [UInt32: Tally] = [:]
    var connected = 0
    var added = 0
    /// UIDs every watch shows (or showed).
    var shownByAll = 0
    var lastAdded: ContinuousClock.Instant?
    var problems: [String] = []
    var stopping = false
    var waiter: (goal: Goal, continuation: Waiter)?
  }

  let sessions: Int
  private let state = Locked(State())

  init(sessions: Int) { self.sessions = sessions }

  /// Takes one event of watch number `watch`.
  func record(_ event: WatchEvent, watch: Int) {
    let now = ContinuousClock.now
    let woken = state.withLock { state -> Waiter? in
      switch event {
      case .connected: state.connected += 1
      case .added(let notification):
        state.added += 1
        state.lastAdded = now
        var tally = state.tallies[notification.uid, default: Tally()]
        tally.shown += 1
        if tally.shown == 1 { tally.firstShown = now }
        if tally.shown == sessions {
          tally.allShown = now
          state.shownByAll += 1
        }
        state.tallies[notification.uid] = tally
      case .removed(let uid): state.tallies[uid, default: Tally()].removed += 1
      case .error(let message): state.problems.append("watch \(watch): \(message)")
      case .disconnected(let reason) where !state.stopping:
        state.problems.append("watch \(watch) disconnected: \(reason)")
      default: break
      }
      guard let waiter = state.waiter, reached(waiter.goal, state) else { return nil }
      state.waiter = nil
      return waiter.continuation
    }
    woken?.resume()
  }

  /// From now on a watch's disconnection is expected, not a problem.
  func expectDisconnects() { state.withLock { $0.stopping = true } }

  var added: Int { state.withLock { $0.added } }
  var connected: Int { state.withLock { $0.connected } }
  /// How many UIDs every watch has shown.
  var shownByAll: Int { state.withLock { $0.shownByAll } }
  var lastAdded: ContinuousClock.Instant? { state.withLock { $0.lastAdded } }
  var problems: [String] { state.withLock { $0.problems } }
  func tally(_ uid: UInt32) -> Tally { state.withLock { $0.tallies[uid] ?? Tally() } }

  private func reached(_ goal: Goal, _ state: State) -> Bool {
    switch goal {
    case .connected: return state.connected >= sessions
    case .shown(let uid): return state.tallies[uid]?.shown ?? 0 >= sessions
    case .removed(let uid): return state.tallies[uid]?.removed ?? 0 >= sessions
    }
  }

  /// Waits for `goal`; fails after `seconds`, saying how far the fleet got.
  func reach(_ goal: Goal, within seconds: Double) async throws {
    if state.withLock({ reached(goal, $0) }) { return }
    let met = await withTaskGroup(of: Bool.self) { group in
      group.addTask {
        await self.wait(for: goal)
        return self.state.withLock { self.reached(goal, $0) }
      }
      group.addTask {
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        return false
      }
      let first = await group.next() ?? false
      group.cancelAll()
      return first
    }
    if met { return }
    let (tally, connected, problem) = state.withLock { state in
      (state.tallies[goalUID(goal)] ?? Tally(), state.connected, state.problems.first)
    }
    let progress: String
    switch goal {
    case .connected: progress = "only \(connected) of \(sessions) watches subscribed"
    case .shown(let uid): progress = "UID \(uid) shown by \(tally.shown) of \(sessions) watches"
    case .removed(let uid): progress = "UID \(uid) removed by \(tally.removed) of \(sessions) watches"
    }
    throw FleetFailure(
      "\(progress) after \(Int(seconds)) s" + (problem.map { "; the first watch error: \($0)" } ?? ""))
  }

  private func goalUID(_ goal: Goal) -> UInt32 {
    switch goal {
    case .connected: return 0
    case .shown(let uid), .removed(let uid): return uid
    }
  }

  /// Returns once `goal` is reached or the task is cancelled. One waiter at a time.
  private func wait(for goal: Goal) async {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: Waiter) in
        let now = state.withLock { state -> Bool in
          if reached(goal, state) || Task.isCancelled { return true }
          state.waiter = (goal, continuation)
          return false
        }
        if now { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state -> Waiter? in
        defer { state.waiter = nil }
        return state.waiter?.continuation
      }
      waiter?.resume()
    }
  }
}
