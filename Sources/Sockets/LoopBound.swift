import ATT

/// A value that only its event loop's thread touches, as swift-nio's `NIOLoopBound`: no
/// lock, and every access checks that it is on the loop (stopping the program when it is
/// not, which is a bug of the program).
package final class LoopBound<Value>: @unchecked Sendable {
  package let loop: EventLoop
  private var stored: Value

  package init(_ value: Value, on loop: EventLoop) {
    self.loop = loop
    stored = value
  }

  /// The value; on the loop's thread only.
  package var value: Value {
    get {
      precondition(loop.inEventLoop, "a loop-bound value was read off its event loop's thread")
      return stored
    }
    set {
      precondition(loop.inEventLoop, "a loop-bound value was written off its event loop's thread")
      stored = newValue
    }
  }

  /// Changes the value in place; on the loop's thread only.
  package func modify<T>(_ body: (inout Value) -> T) -> T {
    precondition(loop.inEventLoop, "a loop-bound value was changed off its event loop's thread")
    return body(&stored)
  }
}

extension LoopBound where Value == (any PDUReceiver)? {
  /// Sets who a link read on this loop hands its PDUs to in place (nil: nobody, they are
  /// queued), as `ATTBearer.handOver(to:)` asks: only on the loop's thread, where the reads
  /// are, so no read runs meanwhile and what was queued before stays first, and only for a
  /// receiver that runs on the loop. False, and nothing changes, otherwise.
  package func handOver(to receiver: (any PDUReceiver)?) -> Bool {
    guard loop.inEventLoop else { return false }
    if let receiver, !receiver.runs(on: loop) { return false }
    value = receiver
    return true
  }
}
