import ATT
import Runtime
import TestSupport
import Testing

/// What the timer's tests drive: an owner that sets deadlines, hears them fire,
/// and starts and ends its timer.
private protocol DeadlineOwner: Sendable {
  func set(_ deadline: Duration) async
  /// Sets `deadline` inside the timer's next ask, after the answer is read.
  func setDuringNextAsk(_ deadline: Duration) async
  var fired: Inbox<Duration> { get }
  /// How many times the timer asked for the next deadline.
  var askedCount: Int { get async }
  /// Starts the timer in a task of its own.
  func start() -> Task<Void, Never>
  /// Ends the timer and waits for its task.
  func end(_ running: Task<Void, Never>) async
}

/// An actor that owns its deadlines and their `OwnedTimer`, as an ATT connection does; it
/// ends the timer with `stop()`.
private actor TimerOwner: DeadlineOwner {
  let timer: OwnedTimer
  var deadlines: [Duration] = []
  let fired = Inbox<Duration>()
  var askedCount = 0
  var duringAsk: Duration?

  init(clock: any EngineClock) { timer = OwnedTimer(clock: clock) }

  private func next() -> Duration? {
    let value = deadlines.min()
    askedCount += 1
    if let late = duringAsk.take() { set(late) }
    return value
  }

  func set(_ deadline: Duration) {
    deadlines.append(deadline)
    timer.wake(for: deadline)
  }

  private func fire(_ now: Duration) {
    deadlines.removeAll { $0 <= now }
    fired.push(now)
  }

  func setDuringNextAsk(_ deadline: Duration) { duringAsk = deadline }
  private func run() async { await timer.run(next: { next() }, fire: { fire($0) }) }
  nonisolated func start() -> Task<Void, Never> { Task { await self.run() } }

  func end(_ running: Task<Void, Never>) async {
    timer.stop()
    await running.value
  }
}

/// An earlier deadline cuts a later sleep short; each deadline fires at its time; with none
/// left the timer parks, off the clock and asking no more; a deadline set again starts it;
/// ended while sleeping, it ends without firing.
private func cutsParksRestartsAndEnds(_ owner: some DeadlineOwner, _ clock: ManualClock) async {
  let running = owner.start()
  await owner.set(.seconds(10))
  await clock.waitForSleepers(1)
  await owner.set(.seconds(5))
  clock.advance(by: .seconds(5))
  #expect(await owner.fired.next() == .seconds(5))
  clock.advance(by: .seconds(5))
  #expect(await owner.fired.next() == .seconds(10))

  while clock.sleeperCount > 0 { await Task.yield() }
  let asked = await owner.askedCount
  for _ in 0..<200 { await Task.yield() }
  #expect(await owner.askedCount <= asked + 1)
  #expect(clock.sleeperCount == 0)

  await owner.set(.seconds(12))
  await clock.waitForSleepers(1)
  clock.advance(by: .seconds(2))
  #expect(await owner.fired.next() == .seconds(12))

  await owner.set(.seconds(20))
  await clock.waitForSleepers(1)
  await owner.end(running)
  #expect(owner.fired.count == 0)
}

/// A deadline set while the timer asks the owner (which read none) is not lost to parking.
private func notLostWhileAsking(_ owner: some DeadlineOwner, _ clock: ManualClock) async {
  await owner.setDuringNextAsk(.seconds(1))
  let running = owner.start()
  await clock.waitForSleepers(1)
  clock.advance(by: .seconds(1))
  #expect(await owner.fired.next() == .seconds(1))
  await owner.end(running)
}

/// Ending a parked timer ends it.
private func endsParked(_ owner: some DeadlineOwner) async {
  let running = owner.start()
  while await owner.askedCount == 0 { await Task.yield() }
  await owner.end(running)
}

@Suite("OwnedTimer: the watchdog of an actor, with no lock", .timeLimit(scaledMinutes(2)))
struct OwnedTimerTests {
  @Test("an earlier deadline cuts a later sleep short; each fires at its time; none parks; stop ends it")
  func earlierDeadlineCutsTheSleep() async {
    let clock = ManualClock()
    await cutsParksRestartsAndEnds(TimerOwner(clock: clock), clock)
  }

  @Test("a deadline set while the timer asks the owner (it read none) is not lost to parking")
  func deadlineSetWhileTheTimerAsks() async {
    let clock = ManualClock()
    await notLostWhileAsking(TimerOwner(clock: clock), clock)
  }

  @Test("stop ends a parked timer")
  func stopEndsAParkedTimer() async {
    await endsParked(TimerOwner(clock: ManualClock()))
  }
}
