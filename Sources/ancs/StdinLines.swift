import Foundation
import Processes

/// Standard input as an asynchronous stream of lines, read on a thread of its own so no
/// Swift concurrency thread ever blocks on the terminal. Ends at end of file.
func standardInputLines() -> AsyncStream<String> {
  let (stream, continuation) = AsyncStream<String>.makeStream()
  detachThread {
    while let line = readLine(strippingNewline: true) { continuation.yield(line) }
    continuation.finish()
  }
  return stream
}
