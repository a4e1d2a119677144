/// At most `limit` bodies at once, in the order they came: the others wait for a slot
/// without holding a thread. One slot makes a turn: the request/answer exchanges of several
/// tasks on one line channel (a spawned phone's input and output) never interleave.
public actor Slots {
  private var free: Int
  private var waiting: [CheckedContinuation<Void, Never>] = []

  public init(_ limit: Int) { free = max(1, limit) }

  /// Runs `body` once a slot is free.
  public func run<T: Sendable, E: Error>(_ body: @Sendable () async throws(E) -> T) async throws(E) -> T {
    if free > 0 {
      free -= 1
    } else {
      await withCheckedContinuation { waiting.append($0) }
    }
    defer {
      if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
    return try await body()
  }
}
