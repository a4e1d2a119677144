/// A small, fast, seeded random number generator (SplitMix64), so fuzz tests, mutated
/// inputs and benchmark data are the same on every run.
public struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  public init(seed: UInt64) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// `count` random bytes.
  public mutating func bytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
  }

  /// A copy of `input` changed the way fuzzers do: flipped bits, replaced, inserted or
  /// removed bytes, truncated or extended.
  public mutating func mutate(_ input: [UInt8]) -> [UInt8] {
    var out = input
    for _ in 0..<(1 + Int(next() % 3)) {
      switch next() % 6 {
      case 0 where !out.isEmpty:
        let index = Int(next() % UInt64(out.count))
        out[index] ^= UInt8(1) << UInt8(next() % 8)
      case 1 where !out.isEmpty:
        out[Int(next() % UInt64(out.count))] = UInt8(truncatingIfNeeded: next())
      case 2:
        out.insert(UInt8(truncatingIfNeeded: next()), at: Int(next() % UInt64(out.count + 1)))
      case 3 where !out.isEmpty:
        out.remove(at: Int(next() % UInt64(out.count)))
      case 4 where !out.isEmpty:
        out.removeLast(Int(next() % UInt64(out.count)) + 1)
      default:
        out += bytes(Int(next() % 8) + 1)
      }
    }
    return out
  }
}
