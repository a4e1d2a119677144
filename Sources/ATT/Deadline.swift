/// Runs `body` until it returns or `deadline` passes on `clock`, whichever comes first; at the
/// deadline (or when the caller is cancelled) `body`'s task is cancelled, and `body` must then
/// return promptly (nil), as `Inbox.next()` does. Returns what `body` returned. The one
/// deadline helper of the project (the Bluetooth host, the harness's command line).
package func withDeadline<T: Sendable>(
  _ deadline: Duration, on clock: any EngineClock, _ body: @escaping @Sendable () async -> T?
) async -> T? {
  let work = Task { await body() }
  let timer = Task {
    do {
      try await clock.sleep(until: deadline)
      work.cancel()
    } catch {}
  }
  defer { timer.cancel() }
  return await withTaskCancellationHandler {
    await work.value
  } onCancel: {
    work.cancel()
  }
}
