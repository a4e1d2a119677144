import ATT
import Runtime
import Testing

/// An owner of deadlines, as the HCI host is: the watchdog tells it the time.
private final class Owner: Sendable {
  let deadlines = Locked<[Duration]>([])
  let fired = Inbox<Duration>()
  /// How many times the watchdog asked for the next deadline.
  let asked = Locked(0)
  /// Runs once, inside the next ask, after the answer is read: a deadline set just then.
  let duringAsk = Locked<(@Sendable () -> Void)?>(nil)

  var next: Duration? {
    let value = deadlines.withLock { $0.min() }
    asked.withLock { $0 += 1 }
    duringAsk.withLock { $0.take() }?()
    return value
  }

  func set(_ deadline: Duration, on watchdog: Watchdog) {
    deadlines.withLock { $0.append(deadline) }
    watchdog.wake(for: deadline)
  }

  func fire(_ now: Duration) {
    deadlines.withLock { $0.removeAll { $0 <= now } }
    fired.push(now)
  }
}

@Suite("Watchdog: one timer for an owner's deadlines", .timeLimit(.minutes(2)))
struct WatchdogTests {
  @Test("an earlier deadline cuts a later sleep short; each deadline fires at its time; none parks")
  func earlierDeadlineCutsTheSleep() async throws {
    let clock = ManualClock()
    let watchdog = Watchdog(clock: clock)
    let owner = Owner()
    let running = Task { await watchdog.run(next: { owner.next }, fire: { owner.fire($0) }) }

    owner.set(.seconds(10), on: watchdog)
    await clock.waitForSleepers(1)
    owner.set(.seconds(5), on: watchdog)
    clock.advance(by: .seconds(5))
    #expect(await owner.fired.next() == .seconds(5))
    #expect(owner.next == .seconds(10))
    clock.advance(by: .seconds(5))
    #expect(await owner.fired.next() == .seconds(10))

    // Nothing left: the loop parks, off the clock and asking no more.
    while clock.sleeperCount > 0 { await Task.yield() }
    let asked = owner.asked.withLock { $0 }
    for _ in 0..<200 { await Task.yield() }
    #expect(owner.asked.withLock { $0 } <= asked + 1)
    #expect(clock.sleeperCount == 0)

    // A deadline set again starts it.
    owner.set(.seconds(12), on: watchdog)
    await clock.waitForSleepers(1)
    clock.advance(by: .seconds(2))
    #expect(await owner.fired.next() == .seconds(12))

    running.cancel()
    await running.value
    #expect(owner.fired.count == 0)
  }

  @Test("a deadline set while the loop asks the owner (it read none) is not lost to parking")
  func deadlineSetWhileTheLoopAsks() async throws {
    let clock = ManualClock()
    let watchdog = Watchdog(clock: clock)
    let owner = Owner()
    owner.duringAsk.withLock { $0 = { owner.set(.seconds(1), on: watchdog) } }
    let running = Task { await watchdog.run(next: { owner.next }, fire: { owner.fire($0) }) }
    clock.advance(by: .seconds(1))
    #expect(await owner.fired.next() == .seconds(1))
    running.cancel()
    await running.value
  }

  @Test("cancelling ends a parked loop")
  func cancellingEndsAParkedLoop() async throws {
    let watchdog = Watchdog(clock: ManualClock())
    let owner = Owner()
    let running = Task { await watchdog.run(next: { owner.next }, fire: { owner.fire($0) }) }
    while owner.asked.withLock({ $0 }) == 0 { await Task.yield() }
    running.cancel()
    await running.value
  }
}

/// An actor that owns its deadlines and their timer, as an ATT connection does.
private actor TimerOwner {
  let timer: OwnedTimer
  var deadlines: [Duration] = []
  let fired = Inbox<Duration>()
  /// How many times the timer asked for the next deadline.
  var asked = 0
  /// Set, once, inside the next ask, after the answer is read.
  var setDuringAsk: Duration?

  init(clock: any EngineClock) { timer = OwnedTimer(clock: clock) }

  func run() async {
    await timer.run(next: { next() }, fire: { fire($0) })
  }

  private func next() -> Duration? {
    let value = deadlines.min()
    asked += 1
    if let late = setDuringAsk.take() { set(late) }
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

  func setLate(_ deadline: Duration) { setDuringAsk = deadline }
  func stop() { timer.stop() }
}

@Suite("OwnedTimer: the watchdog of an actor, with no lock", .timeLimit(.minutes(2)))
struct OwnedTimerTests {
  @Test("an earlier deadline cuts a later sleep short; each fires at its time; none parks; stop ends it")
  func earlierDeadlineCutsTheSleep() async throws {
    let clock = ManualClock()
    let owner = TimerOwner(clock: clock)
    let running = Task { await owner.run() }
    await owner.set(.seconds(10))
    await clock.waitForSleepers(1)
    await owner.set(.seconds(5))
    clock.advance(by: .seconds(5))
    #expect(await owner.fired.next() == .seconds(5))
    clock.advance(by: .seconds(5))
    #expect(await owner.fired.next() == .seconds(10))

    // Nothing left: it parks, off the clock and asking no more.
    while clock.sleeperCount > 0 { await Task.yield() }
    let asked = await owner.asked
    for _ in 0..<200 { await Task.yield() }
    #expect(await owner.asked <= asked + 1)
    #expect(clock.sleeperCount == 0)

    // A deadline set again starts it.
    await owner.set(.seconds(12))
    await clock.waitForSleepers(1)
    clock.advance(by: .seconds(2))
    #expect(await owner.fired.next() == .seconds(12))

    // Stopped while sleeping: it ends without firing.
    await owner.set(.seconds(20))
    await clock.waitForSleepers(1)
    await owner.stop()
    await running.value
    #expect(owner.fired.count == 0)
  }

  @Test("a deadline set while the timer asks the owner (it read none) is not lost to parking")
  func deadlineSetWhileTheTimerAsks() async throws {
    let clock = ManualClock()
    let owner = TimerOwner(clock: clock)
    await owner.setLate(.seconds(1))
    let running = Task { await owner.run() }
    await clock.waitForSleepers(1)
    clock.advance(by: .seconds(1))
    #expect(await owner.fired.next() == .seconds(1))
    await owner.stop()
    await running.value
  }

  @Test("stop ends a parked timer")
  func stopEndsAParkedTimer() async throws {
    let owner = TimerOwner(clock: ManualClock())
    let running = Task { await owner.run() }
    while await owner.asked == 0 { await Task.yield() }
    await owner.stop()
    await running.value
  }
}
