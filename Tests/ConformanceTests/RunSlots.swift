import Runtime

/// At most this many whole-catalog runs at once. Swift Testing starts every argument of a
/// parameterized test together: 45 phones (or watches) and their harnesses beginning their
/// first case at once, beside the rest of the suite on two cores, starved some first cases
/// past their time limit. Later runs wait for a slot instead; the work is the same.
enum RunSlots {
  /// Shared by the fault-switch tests of both roles.
  static let catalogRuns = Slots(8)
}
