import Runtime

/// Runs `body` until it returns or `deadline` passes on `clock`, whichever comes first; at the
/// deadline (or when the caller is cancelled) `body`'s task is cancelled, and `body` must then
/// return promptly (nil), as `Inbox.next()` does. Returns what `body` returned. The one
/// deadline helper of the project (the Bluetooth host, the harness's command line).
package func withDeadline<T: Sendable>(
  _ deadline: Duration, on clock: any EngineClock, _ body: @escaping @Sendable () async -> T?
) async -> T? {
  let work = Task { await body() }
  let timer = Task {
    do {
      try await clock.sleep(until: deadline)
      work.cancel()
    } catch {}
  }
  defer { timer.cancel() }
  return await withTaskCancellationHandler {
    await work.value
  } onCancel: {
    work.cancel()
  }
}

/// The one timer of an owner that keeps its deadlines in its own state and is an actor, or
/// runs on one (an ATT connection, the watch engine's loop, the HCI host through its
/// `HostTimer` on its loop): `run` sleeps until
/// the earliest deadline the owner reports, tells it the time, and asks again; while there
/// is none it parks, costing nothing. The owner calls `wake(for:)` whenever it sets a
/// deadline: a parked timer starts, and a sleep to a later deadline is cut short. So no
/// deadline costs a task of its own, and an owner told the time early (a cut sleep) finds
/// nothing due and loses nothing. Its state is touched only on the owner's executor, so
/// it takes no lock when the owner moves a deadline (once per ATT request). Not `Sendable`: it lives in its
/// owner's isolation; `wake(for:)`, `run` and `stop()` are called there. The owner ends it
/// with `stop()` (not by cancelling `run`'s task).
///
/// On an executor that keeps timers (`TimerExecutor`: an event loop), with the real clock,
/// it sleeps on the executor's own timer: no task per sleep, no timer thread, and the
/// wake-up comes from the loop's own wait. Elsewhere (another executor, the tests' manual
/// clock) it sleeps in a task of its own, on the clock.
package final class OwnedTimer {
  private let clock: any EngineClock
  /// The owner's executor's timers, when it keeps them.
  private let timers: (any TimerExecutor)?
  /// How `run` sleeps now.
  private enum Sleep {
    case task(Task<Void, Never>)
    /// On the executor's timer `id`, the sleep numbered `number`; `run` waits on the
    /// continuation.
    case timer(id: UInt64, number: UInt64, UnsafeContinuation<Void, Never>)
  }
  // Unchecked for exclusivity at run time, as `ATTConnection`'s machine is: `wake(for:)`
  // runs for every request, and each access would call into the runtime; only the owner's
  // executor reaches these, in plain accesses with no callback inside.
  /// A deadline was set since the loop last asked the owner.
  @exclusivity(unchecked) private var woken = false
  @exclusivity(unchecked) private var parked: CheckedContinuation<Void, Never>?
  /// The deadline slept to, and the sleep.
  @exclusivity(unchecked) private var sleeping: (until: Duration, sleep: Sleep)?
  /// Sleeps on the executor's timer so far.
  private var sleeps: UInt64 = 0
  private var ended = false

  package init(clock: any EngineClock, timers: (any TimerExecutor)? = nil) {
    self.clock = clock
    self.timers = timers
  }

  /// The owner set `deadline`: a parked loop starts; a sleep to a later deadline is cut.
  package func wake(for deadline: Duration) {
    woken = true
    parked.take()?.resume()
    if let sleeping, deadline < sleeping.until { cut() }
  }

  /// Ends `run`'s sleep now, if it sleeps.
  private func cut() {
    switch sleeping.take()?.sleep {
    case .task(let task): task.cancel()
    case .timer(let id, _, let continuation):
      // Not run yet, it never will: the sleep ends here (had it run, it ended it).
      if timers?.cancel(id) == true { continuation.resume() }
    case nil: break
    }
  }

  /// Runs until `stop()`: `next` reads the owner's earliest deadline (nil: none), and
  /// `fire` is called with the time once one has passed. Isolated to the owner (SE-0420),
  /// so nothing else the owner does runs between asking and sleeping.
  package func run(
    isolation: isolated (any Actor) = #isolation, next: () -> Duration?, fire: (Duration) -> Void
  ) async {
    while !ended {
      woken = false
      let deadline = next()
      // A deadline set while `next` ran (by `next` itself) may be earlier: ask again.
      if woken { continue }
      guard let deadline else {
        await withCheckedContinuation { continuation in
          precondition(parked == nil, "OwnedTimer.run is running twice")
          parked = continuation
        }
        continue
      }
      if !(await sleepOnTimer(until: deadline)) {
        let clock = self.clock
        let sleep = Task { _ = try? await clock.sleep(until: deadline) }
        sleeping = (deadline, .task(sleep))
        await sleep.value
        if case .task(let task)? = sleeping?.sleep, task == sleep { sleeping = nil }
      }
      let now = clock.now
      // A plain call, in the owner's isolation (an async one would leave its executor).
      if now >= deadline, !ended { fire(now) }
    }
  }

  /// Sleeps until `deadline` on the executor's timer; false at once when there is none to
  /// sleep on (no such executor, a clock it does not keep, an executor that is ending). The
  /// sleep may end early (`cut`, or the executor's end): `run` then looks at the time.
  private func sleepOnTimer(
    isolation: isolated (any Actor) = #isolation, until deadline: Duration
  ) async -> Bool {
    guard let timers, let instant = clock.instant(of: deadline) else { return false }
    sleeps += 1
    let number = sleeps
    var scheduled = false
    await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      // The call runs on the executor's thread, which is the owner's: nothing else of the
      // owner runs meanwhile.
      let id = timers.schedule(at: instant) { [self] in
        guard case .timer(_, number, let waiting)? = sleeping?.sleep else { return }
        sleeping = nil
        waiting.resume()
      }
      guard let id else { return continuation.resume() }
      scheduled = true
      sleeping = (deadline, .timer(id: id, number: number, continuation))
    }
    return scheduled
  }

  /// Ends `run`, now if it parks or sleeps.
  package func stop() {
    ended = true
    parked.take()?.resume()
    cut()
  }
}
