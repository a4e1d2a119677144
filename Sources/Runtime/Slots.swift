/// At most `limit` bodies at once, in the order they came: the others wait for a slot
/// without holding a thread. One slot makes a turn: the request/answer exchanges of several
/// tasks on one line channel (a spawned phone's input and output) never interleave.
public actor Slots {
  private var free: Int
  private var waiting: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
  private var nextID: UInt64 = 0

  public init(_ limit: Int) { free = max(1, limit) }

  /// Runs `body` once a slot is free; nil, without running it, when the task is cancelled
  /// while it waits for one.
  public func run<T: Sendable, E: Error>(_ body: @Sendable () async throws(E) -> T) async throws(E) -> T? {
    guard await take() else { return nil }
    defer {
      if waiting.isEmpty { free += 1 } else { waiting.removeFirst().continuation.resume(returning: true) }
    }
    return try await body()
  }

  /// Takes a slot, waiting for one; false when the task is cancelled first.
  private func take() async -> Bool {
    if Task.isCancelled { return false }
    if free > 0 {
      free -= 1
      return true
    }
    nextID += 1
    let id = nextID
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in waiting.append((id, continuation)) }
    } onCancel: {
      Task { await self.cancel(id) }
    }
  }

  /// A waiter whose task was cancelled leaves the line (if a slot has not reached it yet).
  private func cancel(_ id: UInt64) {
    guard let index = waiting.firstIndex(where: { $0.id == id }) else { return }
    waiting.remove(at: index).continuation.resume(returning: false)
  }
}
