/// A serial executor that keeps timers of its own: an event loop, which waits for its
/// earliest timer in the same call that waits for its descriptors, so a timer costs no task,
/// no thread of a timer service and no wake-up from another thread. Both calls are for the
/// executor's own thread only: an actor that runs on the executor (`ExecutorHome`) makes
/// them where it runs.
public protocol TimerExecutor: SerialExecutor, AnyObject {
  /// Runs `call` on the executor's thread once `deadline` has come, or sooner when the
  /// executor ends (its timers all run then, early, so nothing waits on them for ever).
  /// Nil, and nothing scheduled, when it cannot: called off its thread, or once it is ending.
  func schedule(at deadline: ContinuousClock.Instant, _ call: @escaping () -> Void) -> UInt64?
  /// Cancels a call `schedule` returned, unless it has run: true when it had not (it never
  /// will). On the executor's thread.
  func cancel(_ timer: UInt64) -> Bool
}

/// An actor that says where it runs (`ExecutorHome`): an actor that shares its executor
/// (`ExecutorHome(sharing:)`) shares its timers too.
public protocol HomedActor: Actor {
  nonisolated var executorHome: ExecutorHome { get }
}
