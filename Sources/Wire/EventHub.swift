/// Hands every event to each current listener: an engine's way to report without waiting
/// on whoever reads (each listener's stream buffers what it has not yet read).
public final class EventHub<Event: Sendable>: Sendable {
  private struct Listeners {
    var next = 0
    var all: [Int: AsyncStream<Event>.Continuation] = [:]
  }
  private let listeners = Locked(Listeners())

  public init() {}

  /// A stream of every event from now on; it ends with `finish()`.
  public func stream() -> AsyncStream<Event> {
    let (stream, continuation) = AsyncStream<Event>.makeStream()
    let id = listeners.withLock { listeners in
      listeners.next += 1
      listeners.all[listeners.next] = continuation
      return listeners.next
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.listeners.withLock { $0.all.removeValue(forKey: id) }
    }
    return stream
  }

  public func yield(_ event: Event) {
    for listener in listeners.withLock({ Array($0.all.values) }) { listener.yield(event) }
  }

  /// Ends every listener's stream.
  public func finish() {
    for listener in listeners.withLock({ Array($0.all.values) }) { listener.finish() }
  }
}
