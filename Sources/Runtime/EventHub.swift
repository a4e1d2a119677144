/// Hands every event to each current listener: an engine's way to report without waiting
/// on whoever reads (each listener's stream buffers what it has not yet read).
///
/// Each listener's buffer is an `Inbox`, read through `AsyncStream(unfolding:)`: an
/// engine yields for every notification, and the buffered `AsyncStream` continuation's
/// yield runs unspecialised generic code in the runtime (metadata look-ups, a generic
/// queue), several per cent of the end-to-end benchmark.
public final class EventHub<Event: Sendable>: Sendable {
  private struct Listeners {
    var next = 0
    var all: [Int: Inbox<Event>] = [:]
  }
  private let listeners = Locked(Listeners())

  /// Owned by one stream's reading closure: when the stream goes away, so does the
  /// listener, and the hub forgets it (as a stream's termination handler would).
  private final class Subscription: Sendable {
    let inbox: Inbox<Event>
    let id: Int
    weak let hub: EventHub?

    init(inbox: Inbox<Event>, id: Int, hub: EventHub) {
      self.inbox = inbox
      self.id = id
      self.hub = hub
    }

    deinit { hub?.remove(id) }
  }

  public init() {}

  /// A stream of every event from now on; it ends with `finish()`.
  public func stream() -> AsyncStream<Event> {
    let inbox = Inbox<Event>()
    let id = listeners.withLock { listeners -> Int in
      listeners.next += 1
      listeners.all[listeners.next] = inbox
      return listeners.next
    }
    let subscription = Subscription(inbox: inbox, id: id, hub: self)
    return AsyncStream(
      unfolding: { await subscription.inbox.next() },
      onCancel: { [weak self] in self?.remove(id) })
  }

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
