import ATT
import Glibc
import Runtime
import TestSupport
import Testing

@testable import Sockets

/// The event loop's own timers (`TimerExecutor`), and an owner's timer (`OwnedTimer`) that
/// sleeps on them. Times here are a few milliseconds; only order and thread are checked.
@Suite("Event loop timers", .timeLimit(scaledMinutes(1)))
struct LoopTimerTests {
  @Test("timers run on the loop's thread in deadline order, a cancelled one never, the loop waiting for nothing else")
  func timersRunInOrder() async throws {
    let loop = EventLoop()
    let ran = Locked<[String]>([])
    let done = Inbox<Void>()
    let scheduled = await loop.submit { () -> Bool in
      let now = ContinuousClock.now
      let ids = [("third", 30), ("first", 5), ("cancelled", 10), ("second", 15)].map { name, ms in
        loop.schedule(at: now + .milliseconds(ms)) {
          ran.withLock { $0.append(name + (loop.inEventLoop ? "" : " off the loop")) }
          if name == "third" { done.push(()) }
        }
      }
      guard ids.allSatisfy({ $0 != nil }) else { return false }
      return loop.cancel(ids[2]!) && !loop.cancel(ids[2]!) && loop.pendingTimers == 3
    }
    #expect(scheduled)
    _ = await done.next()
    #expect(ran.withLock { $0 } == ["first", "second", "third"])
    #expect(await loop.submit { loop.pendingTimers } == 0)
    // Off the loop's thread there is no scheduling.
    #expect(loop.schedule(at: .now) {} == nil)
    try await loop.shutdown()
  }

  @Test("a loop that ends runs its timers early, and schedules none after")
  func endRunsTimersEarly() async throws {
    let loop = EventLoop()
    let ran = Locked(0)
    #expect(await loop.submit { loop.schedule(at: .now + .seconds(3600)) { ran.withLock { $0 += 1 } } != nil })
    try await loop.shutdown()
    #expect(ran.withLock { $0 } == 1)
    #expect(await loop.submit { loop.schedule(at: .now) {} } == nil)
  }

  /// An owner on the loop, with the real clock: its timer sleeps on the loop's timers.
  actor Owner: HomedActor {
    let home: ExecutorHome
    let timer: OwnedTimer
    var fired: [Duration] = []
    let firings = Inbox<Duration>()
    nonisolated var unownedExecutor: UnownedSerialExecutor { home.executor }
    nonisolated var executorHome: ExecutorHome { home }
    var deadline: Duration?

    init(loop: EventLoop, clock: SystemClock) {
      home = ExecutorHome(loop)
      timer = OwnedTimer(clock: clock, timers: home.timers)
    }

    func run() async {
      await timer.run(
        next: { deadline },
        fire: { now in
          deadline = nil
          firings.push(now)
        })
    }

    func set(_ new: Duration) {
      deadline = new
      timer.wake(for: new)
    }

    func stop() { timer.stop() }
  }

  @Test("an owner's timer on a loop sleeps on the loop's timer, is cut short by an earlier deadline, and stops")
  func ownedTimerSleepsOnTheLoop() async throws {
    let loop = EventLoop()
    let clock = SystemClock()
    let owner = Owner(loop: loop, clock: clock)
    let running = Task { await owner.run() }
    // An hour away: a timer of the loop's waits for it (no task sleeps).
    await owner.set(clock.now + .seconds(3600))
    // Once the owner's timer has asked for the deadline and gone to sleep.
    while !Task.isCancelled, await loop.submit({ loop.pendingTimers }) == 0 { await Task.yield() }
    #expect(await loop.submit { loop.pendingTimers } == 1)
    // An earlier deadline cuts that sleep: it fires at the earlier one.
    let soon = clock.now + .milliseconds(5)
    await owner.set(soon)
    let fired = await owner.firings.next()
    #expect(fired.map { $0 >= soon } == true)
    #expect(await loop.submit { loop.pendingTimers } == 0)
    // Stopped while it sleeps: `run` returns, and the loop's timer is cancelled.
    await owner.set(clock.now + .seconds(3600))
    await owner.stop()
    await running.value
    #expect(await loop.submit { loop.pendingTimers } == 0)
    try await loop.shutdown()
  }
}
