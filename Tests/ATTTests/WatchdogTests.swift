import ATT
import Runtime
import Testing

/// An owner of deadlines, as the HCI host is: the watchdog tells it the time.
private final class Owner: Sendable {
  let deadlines = Locked<[Duration]>([])
  let fired = Inbox<Duration>()

  var next: Duration? { deadlines.withLock { $0.min() } }

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

    owner.deadlines.withLock { $0.append(.seconds(10)) }
    watchdog.wake(for: .seconds(10))
    await clock.waitForSleepers(1)
    owner.deadlines.withLock { $0.append(.seconds(5)) }
    watchdog.wake(for: .seconds(5))
    clock.advance(by: .seconds(5))
    #expect(await owner.fired.next() == .seconds(5))
    #expect(owner.next == .seconds(10))
    clock.advance(by: .seconds(5))
    #expect(await owner.fired.next() == .seconds(10))

    // Nothing left: the loop parks, off the clock, until a deadline is set again.
    while clock.sleeperCount > 0 { await Task.yield() }
    owner.deadlines.withLock { $0.append(.seconds(12)) }
    watchdog.wake(for: .seconds(12))
    await clock.waitForSleepers(1)
    clock.advance(by: .seconds(2))
    #expect(await owner.fired.next() == .seconds(12))

    running.cancel()
    await running.value
    #expect(owner.fired.count == 0)
  }

  @Test("a deadline set while the loop asks the owner is not lost, and cancelling ends a parked loop")
  func deadlineSetBeforeTheLoopParks() async throws {
    let clock = ManualClock()
    let watchdog = Watchdog(clock: clock)
    let owner = Owner()
    // Set before the loop runs: the wake is remembered, not dropped for want of a sleeper.
    owner.deadlines.withLock { $0.append(.seconds(1)) }
    watchdog.wake(for: .seconds(1))
    let running = Task { await watchdog.run(next: { owner.next }, fire: { owner.fire($0) }) }
    clock.advance(by: .seconds(1))
    #expect(await owner.fired.next() == .seconds(1))
    running.cancel()
    await running.value
  }
}
