import ANCS
import ATT

/// Plays a scenario against a phone, on an injected clock: registers the apps, then waits
/// for each step's time (relative to the start) and performs it.
///
/// Posting a template again makes another notification; `modify` and `remove` act on the
/// latest notification posted under that id that is still on the phone (the watch may have
/// removed it with an action meanwhile: the step then reports that and does nothing).
public struct ScenarioPlayer: Sendable {
  /// One thing the player did.
  public struct Report: Hashable, Sendable, CustomStringConvertible {
    /// The round, from 1 (only a looping player has more than one).
    public var round: Int
    /// Seconds since the start of the round.
    public var at: Double
    /// The step's index in the file's "steps" array; nil for registering apps and cleaning up.
    public var step: Int?
    public var text: String

    /// `[  12.5s] posted n1 as UID 3: Chat — Hello`, with `round 2 ` before the time after
    /// the first round.
    public var description: String {
      let time = ScenarioReader.format(tenths: at)
      let padded = String(repeating: " ", count: max(0, 7 - time.count)) + time
      return (round > 1 ? "[round \(round) " : "[") + padded + "] " + text
    }
  }

  public var scenario: Scenario
  /// Starts again after `scenario.duration` (at least 1 s per round), first removing what
  /// the round posted, until the task is cancelled.
  public var loop: Bool

  public init(_ scenario: Scenario, loop: Bool = false) {
    self.scenario = scenario
    self.loop = loop
  }

  /// Length of one round when looping.
  public var roundLength: Duration {
    max(.seconds(1), .milliseconds(Int64((scenario.duration * 1000).rounded())))
  }

  /// Plays the scenario once (or forever with `loop`). Returns after the last step (and,
  /// when the scenario has a longer "duration", once that has passed); throws
  /// CancellationError when the task is cancelled.
  public func play(on phone: Phone, clock: any EngineClock, report: (Report) -> Void = { _ in })
    async throws(CancellationError)
  {
    for app in scenario.apps { await phone.register(app: app.id, name: app.name) }
    if !scenario.apps.isEmpty {
      let names = scenario.apps.map { "\($0.name) (\($0.id))" }.joined(separator: ", ")
      report(Report(round: 1, at: 0, step: nil, text: "apps: " + names))
    }
    var start = clock.now
    var round = 1
    while true {
      var posted: [String: [UInt32]] = [:]
      var own: [UInt32] = []
      for step in scenario.steps {
        try await clock.sleep(until: start + step.time)
        let text = await perform(step.action, on: phone, posted: &posted, own: &own)
        report(Report(round: round, at: step.at, step: step.index, text: text))
      }
      let end = start + (loop ? roundLength : .milliseconds(Int64((scenario.duration * 1000).rounded())))
      try await clock.sleep(until: end)
      guard loop else { return }
      let left = Set(await phone.notifications.map(\.uid))
      var removed = 0
      for uid in own where left.contains(uid) {
        if await phone.remove(uid) { removed += 1 }
      }
      if removed > 0 {
        let ending = removed == 1 ? "" : "s"
        report(
          Report(
            round: round, at: scenario.duration, step: nil, text: "round over: removed \(removed) notification\(ending)"
          ))
      }
      start = end
      round += 1
    }
  }

  /// Performs one step now and says what happened.
  func perform(_ action: ScenarioAction, on phone: Phone, posted: inout [String: [UInt32]], own: inout [UInt32]) async
    -> String
  {
    switch action {
    case .post(let id):
      guard let template = scenario.notifications[id] else { return "post \(id): no such notification" }
      let notification = await phone.post(template.notification(date: template.date.value(on: phone)))
      posted[id, default: []].append(notification.uid)
      own.append(notification.uid)
      return "posted \(id) as UID \(notification.uid): " + (await PhoneConsole.summary(of: notification, on: phone))
    case .call(let caller, let id):
      let template = NotificationTemplate.incomingCall(from: caller)
      let notification = await phone.post(template.notification(date: template.date.value(on: phone)))
      if let id { posted[id, default: []].append(notification.uid) }
      own.append(notification.uid)
      return "incoming call from \(caller): UID \(notification.uid)" + (id.map { " (\($0))" } ?? "")
    case .modify(let id, let change):
      guard let uid = await latest(id, posted: posted, on: phone) else {
        return "modify \(id): not on the phone any more (the watch may have removed it)"
      }
      let now = phone.dateNow()
      guard let changed = await phone.modify(uid, { change.apply(to: &$0, now: now) }) else {
        return "modify \(id): UID \(uid) is gone"
      }
      return "modified \(id) (UID \(uid), \(change.fieldNames.joined(separator: ", "))): "
        + (await PhoneConsole.summary(of: changed, on: phone))
    case .remove(let id):
      guard let uid = await latest(id, posted: posted, on: phone) else {
        return "remove \(id): not on the phone any more (the watch may have removed it)"
      }
      posted[id]?.removeAll { $0 == uid }
      _ = await phone.remove(uid)
      return "removed \(id) (UID \(uid))"
    case .battery(let level):
      await phone.setBattery(level)
      return "battery \(level)%"
    case .time(let date):
      await phone.setTime(localSecondsSinceEpoch: date.secondsSinceEpoch)
      return "clock set to " + PhoneConsole.readable(date)
    case .disconnect:
      let count = await phone.connectionCount
      phone.disconnectAll()
      return "disconnected \(count) watch" + (count == 1 ? "" : "es")
    case .media(let command):
      switch await phone.media(command) {
      case .success(let line): return line
      case .failure(let error): return "\(command.word): \(error.message)"
      }
    }
  }

  /// The latest UID posted under `id` that is still on the phone.
  func latest(_ id: String, posted: [String: [UInt32]], on phone: Phone) async -> UInt32? {
    let present = Set(await phone.notifications.map(\.uid))
    return posted[id]?.last { present.contains($0) }
  }
}
