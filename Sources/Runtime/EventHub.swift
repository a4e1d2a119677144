/// Hands every event to each current listener: an engine's way to report without waiting
/// on whoever reads (each listener's stream buffers what it has not yet read).
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
      return listeners.next
    }
    return EventStream(subscription: Subscription(inbox: inbox, id: id, hub: self))
  }

  /// The listeners now: streams neither ended nor released.
  public var listenerCount: Int { listeners.withLock { $0.all.count } }

  private func remove(_ id: Int) {
    let inbox = listeners.withLock { $0.all.removeValue(forKey: id) }
    inbox?.close()
  }

  public func yield(_ event: consuming Event) {
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
      defer { listeners.all = [:] }
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
