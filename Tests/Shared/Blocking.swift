import Foundation

/// Runs blocking work (waiting for a process, reading a pipe to its end, polling a file) on
/// a thread of its own, so it never holds one of Swift concurrency's few shared threads:
/// tests run in parallel, and a blocked shared thread starves every other test's tasks.
package func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread {
      do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
    }
  }
}

/// Runs `body`, which waits for `process` off the shared threads, and kills the process if
/// the test is cancelled (its time limit ran out): a wait for a process always ends, so a
/// stuck child fails its test instead of hanging the whole run. A process that leads its
/// own process group (started through `setsid`) is killed with its whole group, so no
/// grandchild keeps a pipe open.
package func killingOnCancel<T: Sendable>(
  _ process: Process, _ body: @escaping @Sendable () throws -> T
) async throws -> T {
  try await withTaskCancellationHandler {
    try await offThread(body)
  } onCancel: {
    if process.isRunning {
      kill(-process.processIdentifier, SIGKILL)
      kill(process.processIdentifier, SIGKILL)
    }
  }
}
