import Conformance
import Foundation
import TestSupport
import Testing
import Watch
import Wire

/// `ancs conform --html`: every case's capture is kept and drawn; failed cases come first,
/// their charts open.
@Suite(.timeLimit(scaledMinutes(2))) struct HTMLReportTests {
  @Test func aRunKeepsEveryCaptureAndThePageDrawsThem() async throws {
    var faults = WatchFaults()
    try faults.enable("swapped-actions")
    let (engine, accessory) = ownWatch { $0.faults = faults }
    defer { engine.stop() }
    // The failing case fails on the action it sees, not by waiting: a long timeout costs
    // nothing, and under AddressSanitizer with the whole suite beside it 24 s was too short
    // to reach the action.
    var runner = ConformanceRunner(
      accessory: accessory, timeout: scaled(.seconds(20)), contactWait: scaled(.seconds(20)))
    runner.keepsCaptures = true
    let cases = ConformanceCatalog.nc.filter { ["ANCS/NC/CP/BV-02", "ANCS/NC/CP/BV-03"].contains($0.id) }
    let results = await runner.run(cases)
    #expect(results.map(\.verdict) == [.passed, .failed], "\(results.map(\.detail))")
    // Kept in memory, passed or failed: no capture directory was given.
    #expect(results.allSatisfy { ($0.trace?.count ?? 0) > 16 } && results.allSatisfy { $0.capture == nil })

    let page = ConformanceReport.html(results, heading: "ancs conform accessory", lanes: .accessory, generated: "now")
    let failed = try #require(page.range(of: "id=\"\(ConformanceReport.anchor("ANCS/NC/CP/BV-03"))\""))
    let passed = try #require(page.range(of: "id=\"\(ConformanceReport.anchor("ANCS/NC/CP/BV-02"))\""))
    #expect(failed.lowerBound < passed.lowerBound, "the failed case comes first")
    #expect(page.components(separatedBy: "<svg class=\"chart\"").count == 3)
    #expect(page.components(separatedBy: "<details open>").count == 2, "only the failed case's chart is open")
    // The failed case's chart shows the action it sent, decoded.
    let chart = try #require(String(page[failed.lowerBound...]).components(separatedBy: "</section>").first)
    #expect(chart.contains(" action on UID ") && chart.contains("harness (phone)"))
    #expect(page.contains("1 failed") && page.contains(Markup.escape(results[1].detail)))
    #expect(page.components(separatedBy: "<script>").count == 2, "one script: the page's own")
  }

  /// Case IDs that differ only in their punctuation keep anchors of their own.
  @Test func everyCaseHasItsOwnAnchor() {
    let ids = ["ANCS/NC/CP/BV-03", "ANCS-NC-CP-BV-03", "ANCS.NC.CP.BV.03", "ANCS_NC_CP_BV_03", "ANCS/NC/CP/BV-03 é"]
    let anchors = ids.map(ConformanceReport.anchor)
    #expect(Set(anchors).count == ids.count, "\(anchors)")
    #expect(anchors.allSatisfy { $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) } })
  }

  /// A reason holding markup is shown as text.
  @Test func reasonsAreText() {
    let result = CaseResult(
      id: "ANCS/NC/X/BV-01", title: "<b>t</b>", rule: "r & s", verdict: .failed,
      detail: "<script>alert(1)</script>", duration: .milliseconds(3))
    let page = ConformanceReport.html([result], heading: "h", lanes: .phone, generated: "g")
    #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && page.contains("&lt;b&gt;t&lt;/b&gt;"))
    #expect(page.components(separatedBy: "<script>").count == 2)
    #expect(page.contains("no capture: the case ran no link"))
  }
}
