import Conformance
import Foundation
import Phone
import TestSupport
import Testing

/// Every NP case can fail: the project's phone with one fault switch (Sources/Phone/Faults.swift)
/// breaks one rule, and exactly the cases that check that rule fail. Protocol/conformance.md,
/// "Fault switches", is the same table in prose.
@Suite(.timeLimit(scaledMinutes(2))) struct FaultSwitchTests {
  // Cases that subscribe (every case but the service shape and the unencrypted probes), and
  // cases that write the Control Point: the faults that take away a characteristic, its
  // notify or write property, or an encrypted subscription fail all of them, as they must.
  static let shape = ["SVC/BV-01", "SVC/BV-02", "SVC/BV-03", "SVC/BV-04", "SEC/BI-01", "SEC/BI-02", "SEC/BI-03"]
  /// The iPhone cases that never touch ANCS, and the bond case, which only pairs.
  static let beside = ["SEC/BV-05", "IOS/BV-01", "IOS/BV-02", "IOS/BI-03", "IOS/BV-05", "BOND/BV-01"]
  static let subscribing = all.filter { !(shape + beside).map(np).contains($0) && !$0.hasPrefix("AMS/") }
  static let controlPointWriters = all.filter { id in
    ["GNA/", "FRAG/", "GAA/", "PNA/", "CP/", "DS/", "IOS/BV-04"].contains { id.hasPrefix("ANCS/NP/" + $0) }
  }
  static let all = ConformanceCatalog.np.map(\.id)

  static func np(_ id: String) -> String { "ANCS/NP/" + id }
  static func ams(_ id: String) -> String { "AMS/NP/" + id }

  /// Fault name → the NP cases it must fail, no more, no fewer.
  static let expected: [String: [String]] = [
    "control-point-wrong-uuid": ["SVC/BV-01", "SVC/BV-03", "SEC/BI-03"].map(np) + controlPointWriters,
    "notification-source-without-notify": ["SVC/BV-02", "SEC/BI-01"].map(np) + subscribing,
    // SEC/BI-03 passes: before encryption ANCS is hidden, and its handles answer 0x0F whatever
    // the characteristic's properties.
    "control-point-without-write": ["SVC/BV-03"].map(np) + controlPointWriters,
    "data-source-without-notify": ["SVC/BV-04", "SEC/BI-02"].map(np) + subscribing,
    // A characteristic's want of encryption shows only where ANCS is published: these publish
    // it on unencrypted links too (Sources/Phone/Phone.swift, ancsDefinition).
    "notification-source-unencrypted": ["SEC/BI-01", "IOS/BV-05"].map(np),
    "data-source-unencrypted": ["SEC/BI-02", "IOS/BV-05"].map(np),
    "control-point-unencrypted": ["SEC/BI-03", "IOS/BV-05"].map(np),
    "subscriptions-need-authentication": subscribing,
    "just-works-only": ["SEC/BV-05"].map(np),
    "category-count-before-event": ["NS/BV-01", "NS/BV-05"].map(np),
    "modified-as-added": ["NS/BV-02"].map(np),
    "removed-as-modified": ["NS/BV-03", "NS/BV-05", "PNA/BV-01", "PNA/BV-02"].map(np),
    "no-importance-flags": ["NS/BV-04"].map(np),
    "no-preexisting-flag": ["PRE/BV-01", "PRE/BV-02"].map(np),
    "date-format": ["GNA/BV-01"].map(np),
    "max-length-ignored": ["GNA/BV-02", "GNA/BV-03", "GNA/BV-04", "GNA/BV-06", "DS/BI-01"].map(np),
    "utf8-split": ["GNA/BV-03"].map(np),
    "tuples-sorted": ["GNA/BV-05"].map(np),
    "message-size-of-cut": ["GNA/BV-06"].map(np),
    "answer-capped-512": ["FRAG/BV-01", "FRAG/BV-02", "FRAG/BV-03"].map(np),
    "app-name-empty": ["GAA/BV-01"].map(np),
    "unknown-app-accepted": ["GAA/BI-01"].map(np),
    "app-identifier-without-nul-accepted": ["GAA/BI-02"].map(np),
    "action-keeps-notification": ["PNA/BV-01", "PNA/BV-02"].map(np),
    "missing-action-answered-a2": ["PNA/BI-02"].map(np),
    "unknown-uid-answered-a1": ["PNA/BI-01", "CP/BI-04", "CP/BI-05", "DS/BI-01"].map(np),
    "unknown-command-answered-a1": ["CP/BI-01", "DS/BI-01"].map(np),
    "truncated-answered-a2": ["CP/BI-02", "CP/BI-06"].map(np),
    "missing-max-length-accepted": ["CP/BI-03", "DS/BI-01"].map(np),
    "no-attributes-accepted": ["CP/BI-07"].map(np),
    "data-after-error": ["DS/BI-01"].map(np),
    "reuse-uid": ["UID/BV-01"].map(np),
    "no-mtu-exchange": ["IOS/BV-01"].map(np),
    "no-device-name-read": ["IOS/BV-02"].map(np),
    "battery-unprotected": ["IOS/BI-03"].map(np),
    "sharing-ignored": ["IOS/BV-04"].map(np),
    "ancs-always-published": ["IOS/BV-05"].map(np),
    "pair-again-on-key-missing": ["BOND/BV-01"].map(np),
    "ams-remote-command-without-notify": ["SVC/BV-01", "RC/BV-01", "RC/BV-02"].map(ams),
    "ams-unencrypted": ["SEC/BI-01"].map(ams),
    "ams-no-invalid-state": ["EU/BI-01"].map(ams),
    "ams-malformed-accepted": ["EU/BI-02"].map(ams),
    // The command case waits for PlaybackInfo's current value before it sends the command.
    "ams-no-current-values": ["EU/BV-01", "EU/BV-02", "RC/BV-02"].map(ams),
    "ams-no-truncated-flag": ["EU/BV-02"].map(ams),
    "ams-entity-attribute-cut": ["EA/BV-01"].map(ams),
    "ams-commands-ignored": ["RC/BV-02"].map(ams),
  ]

  /// A phone that never reads the Device Name, or never sends the values registered for, is
  /// seen only by their absence: its cases fail by waiting out their time.
  static let silent: Set<String> = ["no-device-name-read", "ams-no-current-values"]

  /// NP cases no fault fails yet, with the reason; empty: every case is covered.
  static let uncovered: [String: String] = [:]

  static func faults(_ names: [String]) throws -> PhoneFaults {
    var faults = PhoneFaults()
    for name in names { try faults.enable(name) }
    return faults
  }

  @Test func withoutFaultsEverythingPasses() async throws {
    let (_, phone) = try ownPhone(faults: [])
    let results = await ConformanceRunner(phone: phone, timeout: npBudget).run(ConformanceCatalog.np)
    #expect(
      ids(results, .passed) == Self.all, "\(results.filter { $0.verdict != .passed }.map { "\($0.id): \($0.detail)" })")
  }

  /// One fault: the failing cases are exactly the expected ones, in catalog order, and none
  /// is skipped.
  @Test(arguments: sanitizerShare(PhoneFaults.catalog.map(\.name)))
  func faultFailsExactlyItsCases(_ name: String) async throws {
    let expected = try #require(Self.expected[name], "no expectation written down for fault \(name)")
    let (_, phone) = try ownPhone(faults: try Self.faults([name]))
    var runner = ConformanceRunner(phone: phone, timeout: npBudget)
    // The cases a silent fault fails wait for what never comes: a short time. The others
    // must fail on a rule, which they do long before any timeout, so they keep the whole.
    if Self.silent.contains(name) { runner.caseTimeouts = expectedFailureTimeouts(expected) }
    let results = await RunSlots.catalogRuns.run { [runner] in await runner.run(ConformanceCatalog.np) } ?? []
    let failed = ids(results, .failed)
    #expect(failed == Self.all.filter(expected.contains), "fault \(name): \(notPassed(results))")
    #expect(ids(results, .skipped) == [])
    for result in results where result.verdict == .failed && !Self.silent.contains(name) {
      #expect(!result.detail.contains("timed out"), "\(name): \(result.id) should fail on a rule, not time out")
    }
  }

  /// The table is complete both ways, and together the faults fail every NP case.
  @Test func everyCaseIsFailedBySomeFault() {
    #expect(Set(Self.expected.keys) == Set(PhoneFaults.catalog.map(\.name)))
    let covered = Set(Self.expected.values.joined())
    #expect(covered.isSubset(of: Set(Self.all)), "\(covered.subtracting(Self.all))")
    #expect(Self.all.filter { !covered.contains($0) } == Self.uncovered.keys.sorted())
    #expect(Set(PhoneFaults.catalog.map(\.fault.rawValue)).count == PhoneFaults.catalog.count, "distinct bits")
  }

  /// Protocol/conformance.md documents every fault.
  @Test func everyFaultIsDocumented() throws {
    let text = try repositoryText("Protocol/conformance.md")
    let section = try #require(text.range(of: "## Fault switches")).upperBound
    for definition in PhoneFaults.catalog {
      #expect(text[section...].contains("`\(definition.name)`"), "conformance.md lacks fault \(definition.name)")
    }
  }

  @Test func unknownFaultNameIsRefused() {
    #expect(throws: PhoneFaults.UnknownFault.self) { try Self.faults(["no-such-fault"]) }
  }

  /// Through the binary: `ancs phone --fault` spawned by `ancs conform phone`, exit code 1,
  /// the failing IDs in the report.
  @Test(.enabled(if: ancsBuilt, "needs the ancs binary: swift build --build-tests first"))
  func faultThroughTheBinary() async throws {
    let directory = try temporaryDirectory("fault")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let socket = "unix:\(directory)/phone.sock"
    let (status, stdout, stderr) = try await runAncs([
      "conform", "phone", "--connect", socket, "--spawn",
      "ancs phone --listen \(socket) --commands jsonl --fault unknown-uid-answered-a1", "--json",
      "\(directory)/report.json", "--capture-dir", "\(directory)/captures",
    ])
    let log = stderr + stdout
    #expect(status == 1, "\(log)")
    let expected = try #require(Self.expected["unknown-uid-answered-a1"])
    for id in expected { #expect(log.contains("FAIL \(id)"), "\(id) not reported failing: \(log)") }
    let count = Self.all.count
    #expect(
      log.contains("\(count) cases: \(count - expected.count) passed, \(expected.count) failed, 0 skipped"), "\(log)")
    let report = try String(contentsOfFile: "\(directory)/report.json", encoding: .utf8)
    for id in expected { #expect(report.contains(id)) }
    #expect(FileManager.default.fileExists(atPath: "\(directory)/captures/ANCS_NP_CP_BI-04.btsnoop"))
  }
}
