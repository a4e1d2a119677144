import Dispatch
import Runtime
import Wire

/// Runs `body` to its end on the calling thread (libFuzzer calls targets synchronously):
/// its task, and every child task, prefers an executor that this thread drains. So the async
/// code under test runs in one deterministic order, and all it allocated for its tasks has
/// been freed when this returns, which keeps libFuzzer's per-input leak check quiet unless
/// something really leaked. While the body waits on work that runs elsewhere (an
/// unstructured `Task`, a timer), this thread waits with it.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
  let executor = DrainingExecutor()
  let result = Locked<T?>(nil)
  let task = Task(executorPreference: executor) {
    let value = await body()
    result.withLock { $0 = value }
    executor.finish()
  }
  executor.drain()
  _ = consume task
  return result.withLock { $0! }
}

private final class DrainingExecutor: TaskExecutor {
  private struct Queue {
    var jobs: [UnownedJob] = []
    var finished = false
  }
  private let queue = Locked(Queue())
  private let ready = DispatchSemaphore(value: 0)

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.withLock { $0.jobs.append(job) }
    ready.signal()
  }

  func finish() {
    queue.withLock { $0.finished = true }
    ready.signal()
  }

  /// Runs jobs as they come until `finish()`.
  func drain() {
    while true {
      ready.wait()
      while let job = queue.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) {
        job.runSynchronously(on: asUnownedTaskExecutor())
      }
      if queue.withLock({ $0.finished && $0.jobs.isEmpty }) { return }
    }
  }
}
