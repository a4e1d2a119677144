// Figures as the command and the benchmarks print them.

extension String {
  /// One decimal place, without Foundation.
  public init(format1 value: Double) {
    let tenths = Int((value * 10).rounded())
    self = "\(tenths / 10).\(tenths % 10)"
  }
}

extension Duration {
  public var seconds: Double {
    let (s, attoseconds) = components
    return Double(s) + Double(attoseconds) / 1e18
  }
}
