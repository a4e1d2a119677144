import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

private final class ThreadBody {
  let run: @Sendable () -> Void
  init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Starts a detached OS thread, for work that blocks (a socket's accept or connect, the
/// terminal, a child's output, an event loop's wait) and must hold neither a thread of Swift's
/// cooperative pool nor an event loop. The project's one thread starter. Its stack is small
/// by default: most of these threads run no deep code; false when no thread could be made.
package func spawnThread(stackSize: Int = 512 * 1024, _ body: @escaping @Sendable () -> Void) -> Bool {
  let box = Unmanaged.passRetained(ThreadBody(body))
  var attributes = pthread_attr_t()
  pthread_attr_init(&attributes)
  defer { pthread_attr_destroy(&attributes) }
  pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
  pthread_attr_setstacksize(&attributes, stackSize)
  var thread = pthread_t()
  let result = pthread_create(
    &thread, &attributes,
    { raw in
      let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
      body.run()
      return nil
    }, box.toOpaque())
  if result != 0 {
    box.release()
    return false
  }
  return true
}

/// Runs a blocking call on its own thread and awaits its result.
package func runBlocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    if !spawnThread({ continuation.resume(returning: body()) }) {
      continuation.resume(returning: body())
    }
  }
}

/// Runs async work and blocks this thread until it returns: for a thread of the project's
/// own (`spawnThread`: a terminal's, a line editor's) that must answer a synchronous call
/// with what an actor holds. Never on a thread of Swift's cooperative pool, which it would
/// hold while the work waits for one.
package func waitOnThread<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
  let result = Locked<T?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task {
    let value = await body()
    result.withLock { $0 = value }
    done.signal()
  }
  done.wait()
  return result.withLock { $0 }!
}
