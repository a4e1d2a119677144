import Synchronization

/// An unbounded queue with one consumer that awaits: what a peer pushes (notifications on
/// the receive loop, lines from a process) is kept until a case asks for it. `next()` returns
/// nil when the inbox is closed and empty, or when the waiting task is cancelled, so a
/// timed-out case never stays suspended.
public final class Inbox<Element: Sendable>: Sendable {
  private struct State {
    var items: [Element] = []
    var head = 0
    var waiter: CheckedContinuation<Element?, Never>?
    var closed = false
  }

  private let state = Mutex(State())

  public init() {}

  public func push(_ element: Element) {
    let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
      guard !state.closed else { return nil }
      if let waiter = state.waiter {
        state.waiter = nil
        return waiter
      }
      state.items.append(element)
      return nil
    }
    waiter?.resume(returning: element)
  }

  public func close() {
    let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
      state.closed = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: nil)
  }

  /// Elements received and not yet taken.
  public var count: Int { state.withLock { $0.items.count - $0.head } }

  public func next() async -> Element? {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
        let ready = state.withLock { state -> Element?? in
          if state.head < state.items.count {
            defer {
              state.head += 1
              if state.head == state.items.count {
                state.items.removeAll(keepingCapacity: true)
                state.head = 0
              }
            }
            return .some(state.items[state.head])
          }
          if state.closed || Task.isCancelled { return .some(nil) }
          state.waiter = continuation
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    } onCancel: {
      let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume(returning: nil)
    }
  }
}
