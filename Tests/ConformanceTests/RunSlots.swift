/// At most `limit` whole-catalog runs at once. Swift Testing starts every argument of a
/// parameterized test together: 45 phones (or watches) and their harnesses beginning their
/// first case at once, beside the rest of the suite on two cores, starved some first cases
/// past their time limit. Later runs wait for a slot instead; the work is the same.
actor RunSlots {
  private var free: Int
  private var waiting: [CheckedContinuation<Void, Never>] = []

  init(_ limit: Int) { free = limit }

  /// Runs `body` once a slot is free.
  func run<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
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

  /// Shared by the fault-switch tests of both roles.
  static let catalogRuns = RunSlots(8)
}
