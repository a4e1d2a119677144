import Synchronization

/// An unbounded queue of PDUs with one asynchronous reader: what a link has received and
/// its engine has not yet taken. Pushing never blocks, so two ends that both send a lot
/// cannot deadlock each other.
public final class PDUQueue: Sendable {
  private struct State {
    var items: [[UInt8]] = []
    var head = 0
    var waiter: CheckedContinuation<[UInt8]?, Never>?
    var closed = false
  }
  private let state = Mutex(State())

  public init() {}

  /// Adds a PDU; false (and dropped) once the queue is closed.
  @discardableResult
  public func push(_ pdu: [UInt8]) -> Bool {
    let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
      if state.closed { return nil }
      if let waiter = state.waiter {
        state.waiter = nil
        return waiter
      }
      state.items.append(pdu)
      return nil
    }
    waiter?.resume(returning: pdu)
    return waiter != nil || !isClosed
  }

  public var isClosed: Bool { state.withLock { $0.closed } }

  /// PDUs waiting to be read.
  public var count: Int { state.withLock { $0.items.count - $0.head } }

  /// Ends the queue: the reader gets what is left, then nil.
  public func close() {
    let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
      state.closed = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: nil)
  }

  /// The next PDU, waiting if there is none; nil once closed and drained. One reader only.
  public func pop() async -> [UInt8]? {
    if let ready = state.withLock({ Self.take(&$0) }) { return ready }
    return await withCheckedContinuation { continuation in
      let ready = state.withLock { state -> [UInt8]?? in
        if let item = Self.take(&state) { return .some(item) }
        if state.closed { return .some(nil) }
        state.waiter = continuation
        return .none
      }
      if let ready { continuation.resume(returning: ready) }
    }
  }

  private static func take(_ state: inout State) -> [UInt8]? {
    guard state.head < state.items.count else { return nil }
    let item = state.items[state.head]
    state.head += 1
    if state.head >= 64 && state.head * 2 >= state.items.count {
      state.items.removeFirst(state.head)
      state.head = 0
    }
    return item
  }
}
