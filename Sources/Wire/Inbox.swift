import Synchronization

/// An unbounded queue with one consumer that awaits: what a link has received and its
/// engine has not yet taken, notifications a conformance case has not yet asked for, lines
/// from a process. Pushing never blocks, so two ends that both send a lot cannot deadlock
/// each other.
///
/// `next()` returns nil when the inbox is closed and drained, or when the waiting task is
/// cancelled (what is queued stays for a later `next()`): a cancelled or timed-out waiter
/// never stays suspended.
public final class Inbox<Element: Sendable>: Sendable {
  private typealias Waiter = CheckedContinuation<Element?, Never>
  private struct State {
    var items: [Element] = []
    var head = 0
    var waiter: Waiter?
    var closed = false
  }

  private let state = Mutex(State())

  public init() {}

  /// Adds an element; false (and dropped) once the inbox is closed.
  @discardableResult
  public func push(_ element: Element) -> Bool {
    let (accepted, waiter) = state.withLock { state -> (Bool, Waiter?) in
      if state.closed { return (false, nil) }
      if let waiter = state.waiter {
        state.waiter = nil
        return (true, waiter)
      }
      state.items.append(element)
      return (true, nil)
    }
    waiter?.resume(returning: element)
    return accepted
  }

  public var isClosed: Bool { state.withLock { $0.closed } }

  /// Elements received and not yet taken.
  public var count: Int { state.withLock { $0.items.count - $0.head } }

  /// Ends the inbox: the consumer gets what is left, then nil.
  public func close() {
    let waiter = state.withLock { state -> Waiter? in
      state.closed = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: nil)
  }

  /// The next element, waiting if there is none; nil once closed and drained, or when the
  /// waiting task is cancelled. One consumer only.
  public func next() async -> Element? {
    if let ready = state.withLock({ Self.take(&$0) }) { return ready }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: Waiter) in
        let ready = state.withLock { state -> Element?? in
          if let item = Self.take(&state) { return .some(item) }
          if state.closed || Task.isCancelled { return .some(nil) }
          state.waiter = continuation
          return .none
        }
        if let ready { continuation.resume(returning: ready) }
      }
    } onCancel: {
      let waiter = state.withLock { state -> Waiter? in
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume(returning: nil)
    }
  }

  private static func take(_ state: inout State) -> Element? {
    guard state.head < state.items.count else { return nil }
    let item = state.items[state.head]
    state.head += 1
    if state.head == state.items.count {
      state.items.removeAll(keepingCapacity: true)
      state.head = 0
    } else if state.head >= 64 && state.head * 2 >= state.items.count {
      state.items.removeFirst(state.head)
      state.head = 0
    }
    return item
  }
}
