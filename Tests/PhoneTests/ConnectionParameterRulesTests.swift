import Phone
import Testing

/// Protocol/iPhone.md, Behaviour on the link: an accessory's connection parameter request
/// against the two published editions of the Accessory Design Guidelines' rules.
@Suite struct ConnectionParameterRulesTests {
  /// Interval Min and Max in ms, latency, timeout in ms, as the request's units.
  static func request(_ minimum: Double, _ maximum: Double, latency: UInt16 = 0, timeout: Double)
    -> ConnectionParameterRequest
  {
    ConnectionParameterRequest(
      intervalMin: UInt16(minimum / 1.25), intervalMax: UInt16(maximum / 1.25), latency: latency,
      timeout: UInt16(timeout / 10))
  }

  @Test func aRequestWithinEveryRuleIsAccepted() {
    // 30-50 ms, latency 0, 5 s: within both editions.
    let fine = Self.request(30, 50, timeout: 5000)
    #expect(ConnectionParameterRules.adg.broken(fine) == [])
    #expect(ConnectionParameterRules.adg2013.broken(fine) == [])
  }

  @Test func theCurrentRules() {
    let rules = ConnectionParameterRules.adg
    // 15 ms both ways is the one exception to "Interval Min + 15 ms ≤ Interval Max".
    #expect(rules.broken(Self.request(15, 15, timeout: 2000)) == [])
    #expect(
      rules.broken(Self.request(7.5, 15, timeout: 2000)) == [
        "Interval Min 7.5 ms is not a multiple of 15 ms", "Interval Min 7.5 ms is under 15 ms",
        "Interval Max 15 ms is neither at least Interval Min + 15 ms nor both 15 ms",
      ])
    #expect(rules.broken(Self.request(30, 45, latency: 31, timeout: 6000)) == ["Peripheral Latency 31 is over 30"])
    #expect(
      rules.broken(Self.request(30, 45, timeout: 1000)) == ["the supervision timeout 1000 ms is not within 2-6 s"])
    // 45 ms × 45 = 2.025 s: over 2 s, and × 3 over the 6 s timeout.
    #expect(
      rules.broken(Self.request(30, 45, latency: 44, timeout: 6000)) == [
        "Peripheral Latency 44 is over 30", "Interval Max × (latency + 1) is 2025 ms, over 2 s",
        "Interval Max × (latency + 1) × 3 is 6075 ms, not under the supervision timeout 6000 ms",
      ])
  }

  @Test func theRulesOf2013() {
    let rules = ConnectionParameterRules.adg2013
    #expect(
      rules.broken(Self.request(15, 15, timeout: 2000)) == [
        "Interval Min 15 ms is under 20 ms", "Interval Max 15 ms is not at least Interval Min + 20 ms",
      ])
    #expect(rules.broken(Self.request(20, 40, latency: 5, timeout: 2000)) == ["Slave Latency 5 is over 4"])
    #expect(rules.broken(Self.request(20, 40, timeout: 6500)) == ["the supervision timeout 6500 ms is over 6 s"])
  }

  /// The iOS 8 and 9 profiles judge by the 2013 edition, the later ones by the current one;
  /// the minimal layout by none (the Core specification's ranges only, in the HCI host).
  @Test func profilesAndLayoutsChooseTheRules() throws {
    #expect(try IOSProfile.named("9").connectionRules == .adg2013)
    #expect(try IOSProfile.named("12").connectionRules == .adg)
    #expect(IOSProfile.current.connectionRules == .adg)
    let request = Self.request(7.5, 15, timeout: 2000)
    #expect(try Phone().brokenConnectionRules(request).count == 3)
    #expect(try Phone(settings: PhoneSettings(layout: .minimal)).brokenConnectionRules(request) == [])
  }

  @Test func theRequestReadsInMilliseconds() {
    #expect(
      Self.request(11.25, 30, latency: 2, timeout: 4000).description
        == "interval 11.25-30 ms, latency 2, timeout 4000 ms")
  }
}
