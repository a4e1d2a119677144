/// One answer, handed from whoever produces it (a receive loop, a timer) to the one caller
/// that awaits it. The wait cannot be cancelled: it is for an answer that always comes (a
/// callback every path calls exactly once), so a caller that stops waiting early cannot lose
/// one that was already on its way.
package final class Answered<Value: Sendable>: Sendable {
  private struct State {
    var value: Value?
    var waiter: CheckedContinuation<Value, Never>?
  }
  private let state = Locked(State())

  package init() {}

  /// The answer; call once.
  package func take(_ value: Value) {
    let waiter = state.withLock { state in
      state.value = value
      return state.waiter.take()
    }
    waiter?.resume(returning: value)
  }

  /// Waits for the answer; one caller only.
  package var value: Value {
    get async {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> Value? in
          if let value = state.value { return value }
          state.waiter = continuation
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    }
  }
}
