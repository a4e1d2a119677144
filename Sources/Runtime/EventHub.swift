import Synchronization

/// Hands every event to each current listener: an engine's way to report without waiting
/// on whoever reads. A stream (`stream()`) buffers what its reader has not read yet; the
/// hub's one observer (`observe`) is called in place, in the `yield` itself, which is how a
/// reporter on the engine's executor gets its events with no lock, queue or task: a yield
/// with no stream listening takes no lock.
///
/// Each listener's buffer is an `Inbox`, read through an `EventStream`: an engine yields
/// for every notification, and the buffered `AsyncStream` continuation's yield runs
/// unspecialised generic code in the runtime (metadata look-ups, a generic queue), several
/// per cent of the end-to-end benchmark; `AsyncStream(unfolding:)` over the inbox cost
/// four task allocations an event (its closure and its cancellation handler).
public final class EventHub<Event: Sendable>: Sendable {
  private struct Listeners {
    var next = 0
    var all: [Int: Inbox<Event>] = [:]
  }
  private let listeners = Locked(Listeners())
  /// How many streams listen now (`listeners.all.count`, stored under the lock), readable
  /// without it.
  private let streams = Atomic<Int>(0)
  /// The hub's observer, once `observe` has set it.
  private let observer = AtomicLazyReference<Observer>()
  /// `observer` is set: a yield without one does not look it up.
  private let observed = Atomic<Bool>(false)

  final class Observer: Sendable {
    let call: @Sendable (Event) -> Void

    init(_ call: @escaping @Sendable (Event) -> Void) { self.call = call }
  }

  /// Owned by one stream and its iterators: when they go away, so does the listener, and
  /// the hub forgets it (as a stream's termination handler would).
  final class Subscription: Sendable {
    let inbox: Inbox<Event>
    let id: Int
    weak let hub: EventHub?

    init(inbox: Inbox<Event>, id: Int, hub: EventHub) {
      self.inbox = inbox
      self.id = id
      self.hub = hub
    }

    /// The hub forgets this listener and closes its inbox (again harmless).
    func end() { hub?.remove(id) }

    deinit { end() }
  }

  public init() {}

  /// A stream of every event from now on; it ends with `finish()`.
  public func stream() -> EventStream<Event> {
    let inbox = Inbox<Event>()
    let id = listeners.withLock { listeners -> Int in
      listeners.next += 1
      listeners.all[listeners.next] = inbox
      streams.store(listeners.all.count, ordering: .releasing)
      return listeners.next
    }
    return EventStream(subscription: Subscription(inbox: inbox, id: id, hub: self))
  }

  /// Has `body` called with every event from now on, in the `yield` that reports it: on the
  /// thread that yields (the engine's executor, where its steps run), in their order, before
  /// `yield` returns, after the streams have their copy. One observer per hub, for the hub's
  /// life: false, and nothing changes, when one is set already. `body` must not block: the
  /// engine's step waits for it (a line written to a terminal is what it is for).
  @discardableResult
  public func observe(_ body: @escaping @Sendable (Event) -> Void) -> Bool {
    let mine = Observer(body)
    guard observer.storeIfNil(mine) === mine else { return false }
    observed.store(true, ordering: .releasing)
    return true
  }

  /// The listeners now: streams neither ended nor released.
  public var listenerCount: Int { listeners.withLock { $0.all.count } }

  private func remove(_ id: Int) {
    let inbox = listeners.withLock { listeners -> Inbox<Event>? in
      defer { streams.store(listeners.all.count, ordering: .releasing) }
      return listeners.all.removeValue(forKey: id)
    }
    inbox?.close()
  }

  public func yield(_ event: consuming Event) {
    let observer = observed.load(ordering: .acquiring) ? observer.load() : nil
    if streams.load(ordering: .acquiring) > 0 {
      // Copied only when the observer needs it too.
      guard let observer else { return push(event) }
      push(copy event)
      observer.call(event)
    } else {
      observer?.call(event)
    }
  }

  /// Hands `event` to every stream listening.
  private func push(_ event: consuming Event) {
    // One listener (the usual case) is yielded to without building an array of them.
    let (only, all) = listeners.withLock { listeners -> (Inbox<Event>?, [Inbox<Event>]) in
      if listeners.all.count == 1 { return (listeners.all.first?.value, []) }
      return (nil, Array(listeners.all.values))
    }
    if let only {
      only.push(event)
      return
    }
    for listener in all { listener.push(copy event) }
  }

  /// Ends every listener's stream (each gets what it has not read yet, then the end).
  public func finish() {
    let all = listeners.withLock { listeners -> [Inbox<Event>] in
      defer {
        listeners.all = [:]
        streams.store(0, ordering: .releasing)
      }
      return Array(listeners.all.values)
    }
    for listener in all { listener.close() }
  }
}

/// One listener's events from an `EventHub`, in the order they were yielded; it ends after
/// the hub's `finish()`, or when a read waits in a task that is cancelled. Once it has
/// ended (nil), the hub no longer keeps events for it and every later read is nil. One
/// reader: iterate it once. The listener also goes when the stream and its iterator are
/// released. A read runs on the reader's executor (`nonisolated(nonsending)`): an actor
/// that reads gets its next event with no hop off and back.
public struct EventStream<Event: Sendable>: AsyncSequence, Sendable {
  public typealias Element = Event
  public typealias Failure = Never
  let subscription: EventHub<Event>.Subscription

  public struct Iterator: AsyncIteratorProtocol {
    public typealias Element = Event
    public typealias Failure = Never
    let subscription: EventHub<Event>.Subscription
    /// A read returned nil: the iteration is over.
    private var ended = false

    init(subscription: EventHub<Event>.Subscription) { self.subscription = subscription }

    public mutating func next() async -> Event? { await take() }

    public mutating func next(isolation actor: isolated (any Actor)?) async -> Event? { await take() }

    nonisolated(nonsending) private mutating func take() async -> Event? {
      if ended { return nil }
      if let event = await subscription.inbox.next() { return event }
      ended = true
      subscription.end()
      return nil
    }
  }

  public func makeAsyncIterator() -> Iterator { Iterator(subscription: subscription) }
}
