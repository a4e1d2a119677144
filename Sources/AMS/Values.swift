/// PlaybackInfo, the player's second attribute: "PlaybackState,PlaybackRate,ElapsedTime",
/// an integer and two decimal numbers, the elapsed time in seconds as it was when sent.
public struct PlaybackInfo: Hashable, Sendable, CustomStringConvertible {
  public var state: PlaybackState
  /// 1 playing at normal speed, 0 paused, negative while rewinding.
  public var rate: Double
  /// Seconds into the track when the value was sent.
  public var elapsed: Double

  public init(state: PlaybackState, rate: Double, elapsed: Double) {
    self.state = state
    self.rate = rate
    self.elapsed = elapsed
  }

  /// Parses the attribute's text; `invalidValue` says which of the three fields is wrong
  /// and at which byte it starts.
  public init(text: String) throws(AMSError) {
    let parts = text.split(separator: ",", omittingEmptySubsequences: false)
    guard parts.count == 3 else {
      throw AMSError(
        field: "PlaybackInfo", offset: 0,
        reason: .invalidValue("\(parts.count) comma-separated field(s), not 3 (state,rate,elapsed)"))
    }
    let rateStart = parts[0].utf8.count + 1
    let elapsedStart = rateStart + parts[1].utf8.count + 1
    guard let state = UInt8(parts[0]) else {
      throw AMSError(field: "PlaybackState", offset: 0, reason: .invalidValue("'\(parts[0])' is not an integer 0-255"))
    }
    self.state = PlaybackState(rawValue: state)
    rate = try AMSNumber.parse(parts[1], field: "PlaybackRate", offset: rateStart)
    elapsed = try AMSNumber.parse(parts[2], field: "ElapsedTime", offset: elapsedStart)
  }

  /// The attribute's text: "1,1.0,71.147".
  public var text: String { "\(state.rawValue),\(AMSNumber.text(rate)),\(AMSNumber.text(elapsed))" }
  public var description: String { text }

  /// How far into the track playback is `seconds` after the value was received, as the
  /// specification tells an accessory to work it out: ElapsedTime + seconds × PlaybackRate.
  public func elapsed(after seconds: Double) -> Double { elapsed + seconds * rate }
}

/// The decimal numbers of AMS values (rate, elapsed time, volume, duration): written with at
/// most three decimals and at least one ("1.0", "71.147"), read as any finite decimal.
public enum AMSNumber {
  /// `value` rounded to three decimals, trailing zeros dropped down to one.
  public static func text(_ value: Double) -> String {
    guard value.isFinite else { return "0.0" }
    let thousandths = (value * 1000).rounded()
    guard abs(thousandths) < 9e15 else { return "0.0" }
    let scaled = Int64(thousandths)
    let sign = scaled < 0 ? "-" : ""
    let magnitude = scaled.magnitude
    var fraction = String(magnitude % 1000)
    fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
    while fraction.count > 1 && fraction.hasSuffix("0") { fraction.removeLast() }
    return "\(sign)\(magnitude / 1000).\(fraction)"
  }

  /// A finite decimal number; `field` and `offset` name it in the error.
  public static func parse(_ text: Substring, field: String, offset: Int) throws(AMSError) -> Double {
    guard let value = Double(text), value.isFinite,
      text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") })
    else { throw AMSError(field: field, offset: offset, reason: .invalidValue("'\(text)' is not a decimal number")) }
    return value
  }
}

/// Times within a track, as players show them.
public enum TrackTime {
  /// "3:35", "1:02:03": whole seconds, rounded down; negative and non-finite times are 0:00.
  public static func text(_ seconds: Double) -> String {
    let whole = seconds.isFinite ? Int(max(0, min(seconds, 1e9))) : 0
    let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
    let two = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
    return hours > 0 ? "\(hours):\(two(minutes)):\(two(rest))" : "\(minutes):\(two(rest))"
  }
}
