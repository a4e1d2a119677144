import Runtime
import Wire

/// The time source of every engine. Tests inject a `ManualClock` and move time themselves;
/// nothing waits on the wall clock in a test.
public protocol EngineClock: Sendable {
  /// Monotonic time since an arbitrary origin.
  var now: Duration { get }
  /// Returns once `now >= deadline`; throws CancellationError if the task is cancelled.
  func sleep(until deadline: Duration) async throws(CancellationError)
  /// `deadline` on the continuous clock, for an executor that keeps timers of its own
  /// (`TimerExecutor`); nil for a clock that is not the real one (a test's manual clock).
  func instant(of deadline: Duration) -> ContinuousClock.Instant?
}

extension EngineClock {
  public func instant(of deadline: Duration) -> ContinuousClock.Instant? { nil }
}

/// The real monotonic clock.
public struct SystemClock: EngineClock {
  private let origin = ContinuousClock.now
  public init() {}
  public var now: Duration { ContinuousClock.now - origin }
  public func instant(of deadline: Duration) -> ContinuousClock.Instant? { origin + deadline }
  public func sleep(until deadline: Duration) async throws(CancellationError) {
    // Cancellation is the only error the clock's sleep throws.
    do { try await ContinuousClock().sleep(until: origin + deadline, tolerance: nil) } catch {
      throw CancellationError()
    }
  }
}

/// A clock that only moves when told to. Sleepers whose deadline has passed are woken by
/// `advance(by:)`; a sleep whose deadline has already passed returns at once.
public final class ManualClock: EngineClock {
  private struct Sleeper {
    var id: UInt64
    var deadline: Duration
    var continuation: CheckedContinuation<Void, any Error>
  }
  private struct State {
    var now: Duration = .zero
    var nextID: UInt64 = 0
    var sleepers: [Sleeper] = []
    var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }
  private let state = Locked(State())

  public init() {}

  public var now: Duration { state.withLock { $0.now } }

  /// How many tasks are sleeping on this clock now.
  public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

  /// The times the tasks sleeping on this clock now wake at, earliest first.
  public var wakeTimes: [Duration] { state.withLock { $0.sleepers.map(\.deadline).sorted() } }

  public func sleep(until deadline: Duration) async throws(CancellationError) {
    do { try await sleepOrThrow(until: deadline) } catch { throw CancellationError() }
  }

  /// The sleep, with the continuation's untyped throws; only CancellationError is thrown.
  private func sleepOrThrow(until deadline: Duration) async throws {
    let id = state.withLock { state -> UInt64 in
      state.nextID += 1
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let resume: Bool = state.withLock { state in
          if state.now >= deadline || Task.isCancelled { return true }
          state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
          let count = state.sleepers.count
          let ready = state.sleeperWaiters.filter { $0.count <= count }
          state.sleeperWaiters.removeAll { $0.count <= count }
          for waiter in ready { waiter.continuation.resume() }
          return false
        }
        if resume { continuation.resume() }
      }
    } onCancel: {
      let sleeper = state.withLock { state -> Sleeper? in
        guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
        return state.sleepers.remove(at: index)
      }
      sleeper?.continuation.resume(throwing: CancellationError())
    }
    try Task.checkCancellation()
  }

  /// Moves time forward and wakes every sleeper whose deadline has come.
  public func advance(by duration: Duration) {
    let due = state.withLock { state -> [Sleeper] in
      state.now += duration
      let now = state.now
      let due = state.sleepers.filter { $0.deadline <= now }
      state.sleepers.removeAll { $0.deadline <= now }
      return due
    }
    for sleeper in due { sleeper.continuation.resume() }
  }

  /// Returns once at least `count` tasks sleep on this clock: lets a test advance time only
  /// after the engine has armed its timer, without polling or sleeping.
  public func waitForSleepers(_ count: Int = 1) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let ready = state.withLock { state -> Bool in
        if state.sleepers.count >= count { return true }
        state.sleeperWaiters.append((count, continuation))
        return false
      }
      if ready { continuation.resume() }
    }
  }
}
