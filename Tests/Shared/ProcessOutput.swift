import Foundation

/// The lines `handle` yields until its end (a child's stdout), read on a thread of their own;
/// a last line without a newline is yielded too.
package func lines(of handle: FileHandle) -> AsyncStream<String> {
  let (stream, continuation) = AsyncStream<String>.makeStream()
  Thread.detachNewThread {
    var pending = Data()
    while true {
      let chunk = handle.availableData
      if chunk.isEmpty { break }
      pending.append(chunk)
      while let newline = pending.firstIndex(of: 0x0A) {
        continuation.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
        pending.removeSubrange(pending.startIndex...newline)
      }
    }
    if !pending.isEmpty { continuation.yield(String(decoding: pending, as: UTF8.self)) }
    continuation.finish()
  }
  return stream
}

/// Everything `handle` yields until its end (a child's stderr), gathered on a thread of its
/// own; NSLock (a pthread mutex) so ThreadSanitizer sees the locking.
package final class CollectedText: @unchecked Sendable {
  private let lock = NSLock()
  private var text = ""
  private let ended = DispatchSemaphore(value: 0)

  package init(reading handle: FileHandle) {
    Thread.detachNewThread { [self] in
      while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        let more = String(decoding: chunk, as: UTF8.self)
        lock.withLock { text += more }
      }
      ended.signal()
    }
  }

  package var value: String { lock.withLock { text } }

  /// All of it, once the writer has closed its end (the process exited).
  package func whole() async -> String {
    let ended = self.ended
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      Thread.detachNewThread {
        ended.wait()
        ended.signal()
        done.resume()
      }
    }
    return value
  }
}
