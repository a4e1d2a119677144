/// Connection parameters an accessory asks for in an L2CAP Connection Parameter Update
/// Request (Core Vol 3 Part A 4.20), in the request's own units.
public struct ConnectionParameterRequest: Hashable, Sendable {
  /// Interval Min and Max, in units of 1.25 ms.
  public var intervalMin: UInt16
  public var intervalMax: UInt16
  /// Peripheral (slave) latency, in connection events.
  public var latency: UInt16
  /// Supervision timeout, in units of 10 ms.
  public var timeout: UInt16

  public init(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) {
    self.intervalMin = intervalMin
    self.intervalMax = intervalMax
    self.latency = latency
    self.timeout = timeout
  }

  /// "interval 15-30 ms, latency 0, timeout 2 s".
  public var description: String {
    "interval \(Self.ms(Int(intervalMin) * 1250))-\(Self.ms(Int(intervalMax) * 1250)) ms, latency \(latency), "
      + "timeout \(Self.ms(Int(timeout) * 10_000)) ms"
  }

  /// Microseconds as milliseconds, without trailing zeros ("7.5", "15", "11.25").
  static func ms(_ microseconds: Int) -> String {
    var text = String(microseconds / 1000)
    var rest = microseconds % 1000
    if rest != 0 {
      text += "."
      while rest != 0 {
        text += String(rest / 100)
        rest = rest % 100 * 10
      }
    }
    return text
  }
}

/// The rules of Apple's Accessory Design Guidelines (section "Connection Parameters") by
/// which an iPhone may refuse an accessory's Connection Parameter Update Request
/// (Protocol/iPhone.md, Behaviour on the link). Two editions are public: one quoted on Apple's
/// bluetooth-dev mailing list in December 2013 (section 3.6), and the later one that vendors
/// quote (Silicon Labs' "Selecting Suitable Connection Parameters for Apple Devices": a
/// minimum interval of 15 ms, ADG R11 and later).
public enum ConnectionParameterRules: String, CaseIterable, Hashable, Sendable {
  /// "Interval Min ≥ 20 ms", "Interval Min + 20 ms ≤ Interval Max", "Slave Latency ≤ 4",
  /// "connSupervisionTimeout ≤ 6 seconds", "Interval Max * (Slave Latency + 1) ≤ 2 seconds",
  /// "Interval Max * (Slave Latency + 1) * 3 < connSupervisionTimeout".
  case adg2013 = "ADG 2013"
  /// Latency ≤ 30; 2 s ≤ timeout ≤ 6 s; Interval Min a multiple of 15 ms and ≥ 15 ms; Interval
  /// Min + 15 ms ≤ Interval Max, or both 15 ms; Interval Max × (latency + 1) ≤ 2 s; Interval
  /// Max × (latency + 1) × 3 < timeout.
  case adg = "ADG"

  /// Each rule `request` breaks, in words (empty: the request complies).
  public func broken(_ request: ConnectionParameterRequest) -> [String] {
    // In microseconds, so that 1.25 ms units and 10 ms units compare exactly.
    let minimum = Int(request.intervalMin) * 1250
    let maximum = Int(request.intervalMax) * 1250
    let latency = Int(request.latency)
    let timeout = Int(request.timeout) * 10_000
    let effective = maximum * (latency + 1)
    func ms(_ microseconds: Int) -> String { ConnectionParameterRequest.ms(microseconds) + " ms" }
    var broken: [String] = []
    switch self {
    case .adg2013:
      if minimum < 20_000 { broken.append("Interval Min \(ms(minimum)) is under 20 ms") }
      if minimum + 20_000 > maximum {
        broken.append("Interval Max \(ms(maximum)) is not at least Interval Min + 20 ms")
      }
      if latency > 4 { broken.append("Slave Latency \(latency) is over 4") }
      if timeout > 6_000_000 { broken.append("the supervision timeout \(ms(timeout)) is over 6 s") }
    case .adg:
      if latency > 30 { broken.append("Peripheral Latency \(latency) is over 30") }
      if timeout < 2_000_000 || timeout > 6_000_000 {
        broken.append("the supervision timeout \(ms(timeout)) is not within 2-6 s")
      }
      if minimum % 15_000 != 0 { broken.append("Interval Min \(ms(minimum)) is not a multiple of 15 ms") }
      if minimum < 15_000 { broken.append("Interval Min \(ms(minimum)) is under 15 ms") }
      if minimum + 15_000 > maximum && !(minimum == 15_000 && maximum == 15_000) {
        broken.append("Interval Max \(ms(maximum)) is neither at least Interval Min + 15 ms nor both 15 ms")
      }
    }
    if effective > 2_000_000 {
      broken.append("Interval Max × (latency + 1) is \(ms(effective)), over 2 s")
    }
    if effective * 3 >= timeout {
      broken.append(
        "Interval Max × (latency + 1) × 3 is \(ms(effective * 3)), not under the supervision timeout \(ms(timeout))")
    }
    return broken
  }
}

extension Phone {
  /// The rules this phone's accessory breaks with `request`: its iOS profile's with the iPhone
  /// layout, none with the minimal one (which takes whatever the Core specification allows).
  public nonisolated func brokenConnectionRules(_ request: ConnectionParameterRequest) -> [String] {
    settings.layout == .iPhone ? settings.profile.connectionRules.broken(request) : []
  }

  /// Tells the console and the JSON events that the accessory on the link named `link` asked
  /// for `request`, and which rules it broke (empty: accepted).
  /// Called from the Bluetooth host's loop, at once, in the order the requests came.
  public nonisolated func judgedConnectionParameters(
    link: String, _ request: ConnectionParameterRequest, broken: [String]
  ) {
    let session = linkSessions.withLock { $0[link] }
    emit(.connectionParameters(session: session, link: link, request: request, broken: broken))
  }
}
