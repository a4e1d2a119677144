import Conformance
import Foundation
import TestSupport
import Testing
import Watch
import Wire

/// Every NC case can fail: the project's watch with one fault switch (Sources/Watch/Faults.swift)
/// breaks one rule, and exactly the cases that check that rule fail. Protocol/conformance.md,
/// "Fault switches", is the same table in prose. A run's time counts from when it waits for
/// its slot; the expected failures that wait for what the watch never does (commands-overlap's
/// 13 cases wait for a notification it never shows) get a short time each: 4 minutes.
@Suite(.timeLimit(scaledMinutes(4))) struct WatchFaultTests {
  static let all = ConformanceCatalog.nc.map(\.id)
  static func nc(_ id: String) -> String { "ANCS/NC/" + id }
  static func ams(_ id: String) -> String { "AMS/NC/" + id }
  /// Cases that wait for a fetch of a notification the harness posted.
  static let fetching = all.filter { $0.hasPrefix("ANCS/") }.filter {
    ![
      "DISC/BV-01", "DISC/BV-02", "DISC/BV-07", "DISC/BV-08", "SEC/BV-01", "SEC/BV-02", "SEC/BI-01", "SEC/BI-02",
      "BOND/BV-01", "BOND/BV-02",
    ].map(nc)
      .contains($0)
  }
  /// Cases that check what the accessory shows (observe), and the action case, which waits
  /// for the call to be shown first.
  static let showing = [
    "NS/BV-03", "NS/BV-04", "NS/BV-06", "NS/BV-07", "NS/BV-08", "CP/BV-03", "DS/BV-01", "DS/BV-02", "DS/BV-03",
    "DS/BI-01", "DS/BI-02",
    "DS/BV-04", "DS/BV-05",
  ].map(nc)

  /// Fault name → the NC cases it must fail, no more, no fewer.
  static let expected: [String: [String]] = [
    "skip-pairing": all,
    "discover-whole-database": ["DISC/BV-02"].map(nc),
    "no-service-changed": ["DISC/BV-03", "DISC/BV-04"].map(nc) + [ams("DISC/BV-02")],
    "ignore-service-changed": ["DISC/BV-04"].map(nc) + [ams("DISC/BV-02")],
    "uid-byte-order": fetching,
    "flood-fatal": ["NS/BV-02"].map(nc),
    "malformed-event-fatal": ["NS/BI-01"].map(nc),
    "ignore-removed": ["NS/BV-03", "NS/BV-04"].map(nc),
    "late-answer-kept": ["NS/BV-04"].map(nc),
    "commands-overlap": all.filter { showing.contains($0) || $0 == nc("CP/BV-01") },
    "no-app-name-cache": ["CP/BV-02"].map(nc),
    "flush-on-a2": ["CP/BI-01"].map(nc),
    "no-command-timeout": ["CP/BI-02"].map(nc),
    "swapped-actions": ["CP/BV-03"].map(nc),
    "no-reassembly": ["DS/BV-01", "DS/BV-02", "DS/BV-04"].map(nc),
    "tuples-in-request-order": ["DS/BV-03"].map(nc),
    "unrequested-tuple-fatal": ["DS/BI-01"].map(nc),
    "over-long-fatal": ["DS/BI-02"].map(nc),
    "empty-packet-starts-answer": ["DS/BV-04"].map(nc),
    "omitted-tuple-fatal": ["DS/BV-05"].map(nc),
    "preexisting-always-listed": ["NS/BV-05"].map(nc),
    "no-liveness-probe": ["DISC/BV-05"].map(nc),
    "no-call-recheck": ["NS/BV-06"].map(nc),
    "no-silence-resubscribe": ["DISC/BV-06"].map(nc),
    "preexisting-call-queued": ["NS/BV-07"].map(nc),
    "ignore-not-shared": ["CP/BV-04"].map(nc),
    "reserved-flags-rejected": ["NS/BV-08"].map(nc),
    "discover-before-pairing": ["DISC/BV-07"].map(nc),
    "no-device-name": ["DISC/BV-08"].map(nc),
    // The case where the accessory lost its bond ends in pairing afresh too: from the
    // accessory's side, a phone it still has a (different) bond with.
    // Encrypted is not authenticated: SEC/BI-02's recovered link is one level short too.
    "mitm-not-required": ["SEC/BV-02", "SEC/BI-01", "SEC/BI-02"].map(nc),
    "wrong-passkey-misreported": ["SEC/BI-02"].map(nc),
    // SEC/BI-02 pairs afresh with an accessory that still holds its bond, as BOND/BV-01 does.
    "refuse-repairing": ["SEC/BI-02", "BOND/BV-01", "BOND/BV-02"].map(nc),
    // It also stops for good when SEC/BI-01 offers no MITM protection: the cases after it
    // find no accessory.
    "pairing-failure-fatal": ["SEC/BI-02", "BOND/BV-01", "BOND/BV-02"].map(nc),
    // It registers again once subscribed, so only the cases that judge its order fail.
    "media-register-before-subscribe": ["DISC/BV-01", "DISC/BV-02"].map(ams),
    "entity-update-flags-as-value": ["EU/BV-01"].map(ams),
    "no-whole-read": ["EA/BV-01"].map(ams),
    "remote-command-padded": ["RC/BV-01", "RC/BV-02"].map(ams),
    "commands-unchecked": ["RC/BV-02"].map(ams),
  ]

  /// The whole NC suite against the in-process watch with `names` switched on. The watch
  /// gives up on an unanswered command after 0.3 s, so each case fits in 3 s; the limit is 6 s
  /// because the 23 runs start at once, beside the interop suites' Bumble processes, and the
  /// first case of each also waits for its watch to start on a loaded machine.
  /// The cases `failing` are expected to fail: they get a short time (`expectedFailureTimeouts`).
  static func run(_ names: [String], failing: [String] = []) async throws -> [CaseResult] {
    var faults = WatchFaults()
    for name in names { try faults.enable(name) }
    let chosen = faults
    // The watch starts once the run has its slot: one started before would back off
    // further at each failed try while it waits, past the first case's wait.
    return await RunSlots.catalogRuns.run {
      let (engine, accessory) = ownWatch { $0.faults = chosen }
      defer { engine.stop() }
      // The first case also waits for its watch to connect and subscribe, beside the
      // others doing the same (under ThreadSanitizer that has taken over 20 s): it gets 20 s more.
      var runner = ConformanceRunner(
        accessory: accessory, timeout: scaled(.seconds(6)), contactWait: scaled(.seconds(20)))
      runner.caseTimeouts = expectedFailureTimeouts(failing)
      return await runner.run(ConformanceCatalog.nc)
    } ?? []
  }

  /// One fault: the failing cases are exactly the expected ones, in catalog order, and none
  /// is skipped.
  @Test(arguments: sanitizerShare(WatchFaults.catalog.map(\.name)))
  func faultFailsExactlyItsCases(_ name: String) async throws {
    let expected = try #require(Self.expected[name], "no expectation written down for fault \(name)")
    let results = try await Self.run([name], failing: expected)
    #expect(
      ids(results, .failed) == Self.all.filter(expected.contains),
      "fault \(name): \(results.filter { $0.verdict == .failed }.map { "\($0.id): \($0.detail)" })")
    #expect(ids(results, .skipped) == [])
  }

  /// Issue #13 (6, 7): a case that waits on one of the accessory's own timers says which,
  /// with the value stated for it, what it expected and what the accessory last did.
  @Test(arguments: [
    ("no-liveness-probe", "DISC/BV-05", "again (its liveness check, after the phone dropped them silently, --liveness"),
    ("no-call-recheck", "NS/BV-06", "(its check that the ringing call still exists, --call-recheck"),
    ("no-silence-resubscribe", "DISC/BV-06", "again (its rewrite after a silence, the CCCD still reading enabled"),
    ("ignore-not-shared", "CP/BV-04", "expected the accessory's event line reporting that the phone does not share"),
    ("no-command-timeout", "CP/BI-02", "(once it gives up on UID"),
  ])
  func aTimedOutCaseSaysWhatItWaitedFor(_ fault: String, _ id: String, _ reason: String) async throws {
    var faults = WatchFaults()
    try faults.enable(fault)
    let testCase = try #require(ConformanceCatalog.nc.first { $0.id == Self.nc(id) })
    let (engine, accessory) = ownWatch {
      $0.faults = faults
      // With 20 s to start, a case would last longer than the watch's silence before it
      // writes its subscriptions again, which cures a dropped subscription too: off, unless
      // the case waits on it.
      if !testCase.waitsOn.contains(.resubscribe) { $0.resubscribeAfterSilence = nil }
    }
    defer { engine.stop() }
    // 6 s as the sweep above: it runs beside it, and the watch must first get as far as the wait.
    // Its watch's start-up is not the wait the case is about: it gets 20 s of its own.
    let runner = ConformanceRunner(
      accessory: accessory, timeout: scaled(.seconds(6)), contactWait: scaled(.seconds(20)))
    let result = try #require(await runner.run([testCase]).first)
    #expect(result.verdict == .failed)
    #expect(result.detail.hasPrefix("timed out after "), "\(result.detail)")
    #expect(result.detail.contains(reason), "\(result.detail)")
    #expect(result.detail.contains("; the accessory last "), "\(result.detail)")
  }

  /// The table is complete both ways, and together the faults fail every NC case.
  @Test func everyCaseIsFailedBySomeFault() {
    #expect(Set(Self.expected.keys) == Set(WatchFaults.catalog.map(\.name)))
    let covered = Set(Self.expected.values.joined())
    #expect(covered == Set(Self.all))
    // Beyond the two broad faults (no pairing: nothing works; UIDs in the wrong byte order:
    // no fetch works), every case is failed by a fault of its own.
    let narrow = Self.expected.filter { !["skip-pairing", "uid-byte-order"].contains($0.key) }
    let narrowlyCovered = Set(narrow.values.joined())
    #expect(Self.all.filter { !narrowlyCovered.contains($0) } == ["DISC/BV-01", "SEC/BV-01", "NS/BV-01"].map(Self.nc))
    #expect(Set(WatchFaults.catalog.map(\.fault.rawValue)).count == WatchFaults.catalog.count, "distinct bits")
  }

  /// Protocol/conformance.md documents every watch fault.
  @Test func everyFaultIsDocumented() throws {
    let text = try repositoryText("Protocol/conformance.md")
    let section = try #require(text.range(of: "### Watch fault switches")).upperBound
    for definition in WatchFaults.catalog {
      #expect(text[section...].contains("`\(definition.name)`"), "conformance.md lacks watch fault \(definition.name)")
    }
  }

  /// Through the binary: `ancs watch --fault` spawned by `ancs conform accessory`, exit code
  /// 1, exactly the failing IDs in the report, the capture kept.
  @Test(.enabled(if: ancsBuilt, "needs the ancs binary: swift build --build-tests first"))
  func faultThroughTheBinary() async throws {
    let directory = try temporaryDirectory("watch-fault")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let socket = "unix:\(directory)/harness.sock"
    let (status, stdout, stderr) = try await runAncs(
      [
        "conform", "accessory", "--listen", socket, "--spawn",
        "\(AccessoryBinaryTests.watch) --connect \(socket) --fault swapped-actions", "--capture-dir",
        "\(directory)/captures",
      ] + AccessoryBinaryTests.stated.split(separator: " ").map(String.init))
    let log = stderr + stdout
    #expect(status == 1, "\(log)")
    #expect(log.contains("FAIL ANCS/NC/CP/BV-03"), "\(log)")
    let count = Self.all.count
    #expect(log.contains("\(count) cases: \(count - 1) passed, 1 failed, 0 skipped"), "\(log)")
    #expect(FileManager.default.fileExists(atPath: "\(directory)/captures/ANCS_NC_CP_BV-03.btsnoop"))
  }

  @Test func unknownFaultNameIsRefused() async throws {
    var faults = WatchFaults()
    #expect(throws: UnknownFault.self) { try faults.enable("no-such-fault") }
    let (status, _, err) = try await runAncs(["watch", "--connect", "unix:/tmp/x.sock", "--fault", "nope"])
    #expect(status == 2 && err.contains("unknown fault 'nope'") && err.contains("swapped-actions"), "\(err)")
  }
}
