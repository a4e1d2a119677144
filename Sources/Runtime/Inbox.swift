/// An unbounded queue with one consumer that awaits: what a link has received and its
/// engine has not yet taken, notifications a conformance case has not yet asked for, lines
/// from a process. Pushing never blocks, so two ends that both send a lot cannot deadlock
/// each other.
///
/// `next()` returns nil when the inbox is closed and drained, or when the waiting task is
/// cancelled (what is queued stays for a later `next()`): a cancelled or timed-out waiter
/// never stays suspended.
public final class Inbox<Element: Sendable>: Sendable {
  /// The consumer's wait: resumed when something was pushed, the inbox closed, or the
  /// waiting task cancelled. The element itself is always taken under the lock (never
  /// handed over through the continuation), so every hand-off is ordered by the lock, which
  /// ThreadSanitizer sees.
  ///
  /// Unchecked: it is resumed exactly once by construction (whoever takes it out of
  /// `waiter` under the lock resumes it, or `next` when it never stored it), and a checked
  /// one costs an allocation and its checks per wait, on every link's receive path: about
  /// 7 % of the in-memory end-to-end benchmark. Builds for ThreadSanitizer (`make
  /// sanitize-thread` defines ANCS_THREAD_SANITIZER) use the checked one: the unchecked
  /// one's resume is inlined into instrumented code and writes to the waiting task's frame,
  /// ordered before the task runs again only by the runtime's own atomics, which
  /// ThreadSanitizer cannot see, so it reports a race there (about once per whole-suite
  /// run). The logic around the continuation, which the sanitizer is there to check, is the
  /// same in both.
  #if ANCS_THREAD_SANITIZER
    private typealias Waiter = CheckedContinuation<Void, Never>
  #else
    private typealias Waiter = UnsafeContinuation<Void, Never>
  #endif
  private struct State {
    /// Elements are moved in and out (`FIFO`), not copied, for every PDU and every event.
    var items = FIFO<Element>()
    var waiter: Waiter?
    var closed = false
  }

  private let state = Locked(State())

  public init() {}

  /// Adds an element; false (and dropped) once the inbox is closed.
  @discardableResult
  public func push(_ element: consuming Element) -> Bool {
    var element = Optional(element)
    let (accepted, waiter) = state.withLock { state -> (Bool, Waiter?) in
      if state.closed { return (false, nil) }
      state.items.append(element.take()!)
      defer { state.waiter = nil }
      return (true, state.waiter)
    }
    waiter?.resume()
    return accepted
  }

  public var isClosed: Bool { state.withLock { $0.closed } }

  /// Elements received and not yet taken.
  public var count: Int { state.withLock { $0.items.count } }

  /// Ends the inbox: the consumer gets what is left, then nil.
  public func close() {
    let waiter = state.withLock { state -> Waiter? in
      state.closed = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }

  /// The next element if one is queued, without waiting; nil when none is (closed or not).
  /// For the one consumer, which then awaits `next()`.
  public func nextIfReady() -> Element? {
    state.withLock { $0.items.popFirst() }
  }

  /// The next element, waiting if there is none; nil once closed and drained, or when the
  /// waiting task is cancelled. One consumer only. It runs on the caller's executor
  /// (`nonisolated(nonsending)`, SE-0461): an actor that waits here is resumed where it
  /// runs, with no hop off and back.
  nonisolated(nonsending) public func next() async -> Element? {
    while true {
      if let ready = state.withLock({ $0.items.popFirst() }) { return ready }
      let ended = await withTaskCancellationHandler {
        await Self.suspend { (continuation: Waiter) in
          let wakeNow = state.withLock { state -> Bool in
            if !state.items.isEmpty || state.closed || Task.isCancelled { return true }
            state.waiter = continuation
            return false
          }
          if wakeNow { continuation.resume() }
        }
        return Task.isCancelled
      } onCancel: {
        let waiter = state.withLock { state -> Waiter? in
          defer { state.waiter = nil }
          return state.waiter
        }
        waiter?.resume()
      }
      let (item, closed) = state.withLock { state in (state.items.popFirst(), state.closed) }
      if let item { return item }
      if closed || ended { return nil }
    }
  }

  /// Suspends the task with a `Waiter`, as `body` stores or resumes it; on the caller's
  /// executor, as `next()` runs.
  @inline(__always)
  nonisolated(nonsending) private static func suspend(_ body: (Waiter) -> Void) async {
    #if ANCS_THREAD_SANITIZER
      await withCheckedContinuation(body)
    #else
      await withUnsafeContinuation(body)
    #endif
  }
}
