import ANCS
import ATT
import Conformance
import Foundation
import Links
import Phone
import Runtime
import TestSupport
import Testing
import Wire

@Suite struct CatalogTests {
  @Test func idsAreUniqueAndInTheSIGStyle() {
    let cases = ConformanceCatalog.np
    #expect(cases.count >= 25)
    #expect(Set(cases.map(\.id)).count == cases.count)
    let pattern = /(ANCS|AMS)\/NP\/[A-Z]+\/B[VI]-\d\d/
    for testCase in cases {
      #expect(testCase.id.wholeMatch(of: pattern) != nil, "\(testCase.id)")
      #expect(testCase.role == .np)
      #expect(!testCase.rule.isEmpty && !testCase.title.isEmpty)
    }
    let accessory = ConformanceCatalog.nc
    #expect(accessory.count >= 15)
    for testCase in accessory {
      #expect(testCase.id.wholeMatch(of: /(ANCS|AMS)\/NC\/[A-Z]+\/B[VI]-\d\d/) != nil, "\(testCase.id)")
      #expect(testCase.role == .nc)
    }
    #expect(Set((cases + accessory).map(\.id)).count == cases.count + accessory.count)
  }

  @Test func everyCaseIsDocumented() throws {
    let text = try repositoryText("Protocol/conformance.md")
    for testCase in ConformanceCatalog.np + ConformanceCatalog.nc {
      #expect(text.contains("### \(testCase.id)"), "Protocol/conformance.md lacks \(testCase.id)")
    }
  }

  /// Where the README and conformance.md count the cases, they count the catalog.
  @Test func theDocsCountEveryCase() throws {
    let (np, nc) = (ConformanceCatalog.np.count, ConformanceCatalog.nc.count)
    for file in ["README.md", "Protocol/conformance.md"] {
      let text = try repositoryText(file)
        .replacingOccurrences(of: "\n", with: " ")
      let matches = text.matches(of: /(\d+) (NP|NC) cases/)
      #expect(!matches.isEmpty, "\(file) counts no cases")
      for match in matches {
        #expect(Int(match.output.1) == (match.output.2 == "NP" ? np : nc), "\(file): \(match.output.0)")
      }
    }
  }

  @Test func selectionByPrefix() {
    let (cases, unmatched) = ConformanceCatalog.select(
      ConformanceCatalog.np, prefixes: ["ANCS/NP/CP/BI-0", "ANCS/NP/SVC/BV-01", "ANCS/NP/NOPE"])
    #expect(cases.first?.id == "ANCS/NP/SVC/BV-01")
    #expect(cases.dropFirst().allSatisfy { $0.id.hasPrefix("ANCS/NP/CP/BI-0") })
    #expect(unmatched == ["ANCS/NP/NOPE"])
  }
}

@Suite(.timeLimit(scaledMinutes(2))) struct OwnPhoneTests {
  /// The whole NP suite against the project's phone over memory links: every case passes.
  /// (Its running time is a benchmark figure, in BENCHMARKS.md, not a test.)
  @Test func wholeSuitePassesOverMemory() async throws {
    let (_, phone) = try ownPhone()
    let results = await ConformanceRunner(phone: phone, timeout: npBudget).run(ConformanceCatalog.np)
    #expect(ids(results, .failed) == [], notPassed(results))
    #expect(ids(results, .skipped) == [])
    #expect(results.count == ConformanceCatalog.np.count)
  }

  /// A phone that does not share its notifications with the harness (an iPhone whose user
  /// has not allowed it): the Control Point cases fail saying so and what to do, instead of
  /// naming an unexpected error code.
  @Test func aPhoneThatDoesNotShareIsNamedAsSuch() async throws {
    let (_, phone) = try ownPhone(settings: PhoneSettings(sharing: .deny))
    let cases = ConformanceCatalog.np.filter { $0.id == "ANCS/NP/CP/BI-01" }
    let results = await ConformanceRunner(phone: phone, timeout: npBudget).run(cases)
    #expect(ids(results, .failed) == ["ANCS/NP/CP/BI-01"], notPassed(results))
    #expect(
      results.first?.detail.contains("Write Not Permitted (0x03): it does not share its notifications") == true,
      notPassed(results))
  }

  /// Without a control channel the stimulus cases are skipped, never passed.
  @Test func withoutStimulusCasesAreSkipped() async throws {
    let (_, own) = try ownPhone()
    let phone = PhoneUnderTest(connect: own.connect, stimulus: nil)
    let results = await ConformanceRunner(phone: phone, timeout: npBudget).run(ConformanceCatalog.np)
    let needing = ConformanceCatalog.np.filter(\.needsStimulus).map(\.id)
    #expect(ids(results, .skipped) == needing)
    #expect(ids(results, .failed) == [], notPassed(results))
    #expect(ids(results, .passed) == ConformanceCatalog.np.filter { !$0.needsStimulus }.map(\.id))
  }

  /// The binary end to end: `ancs conform phone --spawn "ancs phone ..."` over a Unix socket,
  /// with every report format.
  @Test(.enabled(if: ancsBuilt, "needs the ancs binary: swift build --build-tests first"))
  func wholeSuitePassesOverUnixSocketWithTheBinary() async throws {
    let directory = try temporaryDirectory("unix")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let socket = "unix:\(directory)/phone.sock"
    let started = ContinuousClock.now
    let (status, tap, log) = try await runAncs([
      "conform", "phone", "--connect", socket, "--spawn", "ancs phone --listen \(socket) --commands jsonl", "--tap",
      "--junit", "\(directory)/report.xml", "--json", "\(directory)/report.json", "--capture-dir",
      "\(directory)/captures",
    ])
    let elapsed = ContinuousClock.now - started
    #expect(status == 0, "\(log.split(separator: "\n").filter { $0.hasPrefix("FAIL") })")
    let count = ConformanceCatalog.np.count
    #expect(tap.hasPrefix("TAP version 13\n1..\(count)\n"))
    #expect(tap.split(separator: "\n").filter { $0.hasPrefix("ok ") }.count == count, "\(tap)")
    #expect(log.contains("\(count) cases: \(count) passed, 0 failed, 0 skipped"), "\(log)")
    #expect(log.contains("[\(count)/\(count)] PASS"))
    #expect(!FileManager.default.fileExists(atPath: "\(directory)/captures"), "no capture is kept for passes")

    let xml = try String(contentsOfFile: "\(directory)/report.xml", encoding: .utf8)
    let (reader, parsed, problem) = JUnitReader.read(xml)
    #expect(parsed, "\(problem ?? "")")
    #expect(reader.testcases.count == count)
    #expect(reader.failedNames == [])

    let json = try JSON(parsing: String(contentsOfFile: "\(directory)/report.json", encoding: .utf8))
    #expect(json["passed"]?.integer == count)
    #expect(json["cases"]?.array?.count == count)
    print("conformance: \(count) NP cases through the binary over a Unix socket in \(elapsed) (process start included)")
  }
}

@Suite(.timeLimit(scaledMinutes(2))) struct BrokenPhoneTests {
  /// A phone that answers 0xA1 where 0xA2 is due: exactly the cases that check 0xA2 fail.
  @Test func invalidParameterAnsweredAsInvalidCommand() async throws {
    let phone = try faultyPhone { _ in
      { pdu in pdu.count == 5 && pdu[0] == 0x01 && pdu[4] == 0xA2 ? Array(pdu[0..<4]) + [0xA1] : pdu }
    }
    let results = await ConformanceRunner(phone: phone, timeout: npBudget).run(ConformanceCatalog.np)
    #expect(
      ids(results, .failed) == [
        "ANCS/NP/GAA/BI-01", "ANCS/NP/PNA/BI-01", "ANCS/NP/CP/BI-04", "ANCS/NP/CP/BI-05", "ANCS/NP/DS/BI-01",
      ], notPassed(results))
    #expect(ids(results, .skipped) == [])
    let failure = try #require(results.first { $0.id == "ANCS/NP/CP/BI-04" })
    #expect(failure.detail.contains("error 0xA1, expected error 0xA2"), "\(failure.detail)")

    // The JUnit report of failures is still well-formed XML and names each one.
    let (reader, parsed, problem) = JUnitReader.read(ConformanceReport.junit(results))
    #expect(parsed, "\(problem ?? "")")
    #expect(reader.failedNames == ids(results, .failed))
    #expect(reader.counts["skipped"] == nil)
  }

  /// A phone that never sets PreExisting: exactly the PreExisting cases fail.
  @Test func preExistingFlagMissing() async throws {
    let phone = try faultyPhone { phone in
      let source = BluetoothUUID(ANCSUUID.notificationSource)!
      let handle = phone.server.database.attributes.first { $0.type == source }!.handle
      return { pdu in
        // A Notification Source notification (opcode, handle, 8-byte event): clear bit 2.
        guard pdu.count == 11, pdu[0] == 0x1B, UInt16(pdu[1]) | UInt16(pdu[2]) << 8 == handle else { return pdu }
        var copy = pdu
        copy[4] &= ~0x04
        return copy
      }
    }
    let results = await ConformanceRunner(phone: phone, timeout: npBudget).run(ConformanceCatalog.np)
    #expect(ids(results, .failed) == ["ANCS/NP/PRE/BV-01", "ANCS/NP/PRE/BV-02"], notPassed(results))
  }

  /// A phone that cuts text inside a UTF-8 character: only the case about that fails.
  @Test func utf8SplitInsideACharacter() async throws {
    // "Ééééé" cut at 5 bytes should be "Éé" (4 bytes); this phone sends 5 bytes, the last one
    // half of an "é". The tuple is Title (1), length 4 -> 5, within the Data Source answer.
    let phone = try faultyPhone { _ in
      { pdu in
        let cut: [UInt8] = [0x01, 0x04, 0x00, 0xC3, 0x89, 0xC3, 0xA9]
        guard pdu.first == 0x1B, let start = pdu.firstRange(of: cut) else { return pdu }
        var copy = pdu
        copy.replaceSubrange(start, with: [0x01, 0x05, 0x00, 0xC3, 0x89, 0xC3, 0xA9, 0xC3])
        return copy
      }
    }
    let results = await ConformanceRunner(phone: phone, timeout: npBudget).run(ConformanceCatalog.np)
    #expect(ids(results, .failed) == ["ANCS/NP/GNA/BV-03"], notPassed(results))
    #expect(results.first { $0.id == "ANCS/NP/GNA/BV-03" }?.detail.contains("UTF-8") == true)
  }

  /// A minimal phone made from the GATT server that lets an unencrypted link write the
  /// Control Point: SEC/BI-03 fails, and so do the iPhone cases it can be judged on (it
  /// starts nothing on the link and has no Battery service); it has no control channel, so
  /// the stimulus cases skip, as do the AMS cases (it publishes no AMS).
  @Test func minimalPhoneWithoutEncryptionOnTheControlPoint() async throws {
    let failing = [
      "ANCS/NP/SEC/BI-03", "ANCS/NP/IOS/BV-01", "ANCS/NP/IOS/BV-02", "ANCS/NP/IOS/BI-03", "ANCS/NP/IOS/BV-05",
    ]
    var runner = ConformanceRunner(phone: try minimalPhone(), timeout: npBudget)
    // Those that wait for the phone to start something on the link wait for ever.
    runner.caseTimeouts = expectedFailureTimeouts(failing)
    let results = await runner.run(ConformanceCatalog.np)
    #expect(ids(results, .failed) == failing, notPassed(results))
    #expect(
      ids(results, .skipped)
        == ConformanceCatalog.np.filter { $0.needsStimulus || $0.id.hasPrefix("AMS/") }.map(\.id))
  }

  /// A phone that never answers: the case times out on the injected clock, fails, and leaves
  /// a capture named after its ID; the run goes on.
  @Test func silentPhoneTimesOutWithACapture() async throws {
    let directory = try temporaryDirectory("silent")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let clock = ManualClock()
    let phone = PhoneUnderTest(connect: { SilentBearer() }, stimulus: nil)
    let runner = ConformanceRunner(phone: phone, clock: clock, timeout: .seconds(5), captureDirectory: directory)
    let cases = ConformanceCatalog.select(ConformanceCatalog.np, prefixes: ["ANCS/NP/SVC/BV-01", "ANCS/NP/CP/BI-01"])
      .cases
    let run = Task { await runner.run(cases) }
    // Time moves only while something sleeps on the clock, a second at a time, until the run
    // is over (each case then hits its 5-second deadline).
    let driver = Task {
      while !Task.isCancelled {
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        await Task.yield()
      }
    }
    let results = await run.value
    driver.cancel()
    // One last sleeper lets the driver see its cancellation instead of waiting for ever.
    try? await clock.sleep(until: clock.now + .seconds(1))
    #expect(results.map(\.verdict) == [.failed, .failed])
    let first = try #require(results.first)
    #expect(first.detail.contains("timed out") || first.detail.contains("timeout"), "\(first.detail)")
    #expect(first.capture == "\(directory)/ANCS_NP_SVC_BV-01.btsnoop")
    #expect(FileManager.default.fileExists(atPath: "\(directory)/ANCS_NP_SVC_BV-01.btsnoop"))
  }
}

@Suite(.timeLimit(scaledMinutes(2))) struct ReportTests {
  /// The runner tells each case as it begins, and then its result: what `ancs conform`
  /// shows on standard error as a run goes.
  @Test func eachCaseIsAnnouncedBeforeItsResult() async {
    let cases = Array(ConformanceCatalog.np.prefix(3))
    let lines = Locked<[String]>([])
    // No phone: every NP case is skipped at once.
    _ = await ConformanceRunner().run(cases) { index, total, testCase in
      lines.withLock { $0.append(ConformanceReport.startLine(index, total, testCase)) }
    } progress: { index, total, result in
      let number = ConformanceReport.progressLine(index, total, result).prefix { $0 != " " }
      lines.withLock { $0.append("\(number) done") }
    }
    let expected = cases.enumerated().flatMap { index, testCase in
      ["[\(index + 1)/3] RUN  \(testCase.id)  \(testCase.title)", "[\(index + 1)/3] done"]
    }
    #expect(lines.withLock { $0 } == expected)
  }

  let results = [
    CaseResult(id: "ANCS/NP/A/BV-01", title: "ok", rule: "r", verdict: .passed, detail: "", duration: .milliseconds(3)),
    CaseResult(
      id: "ANCS/NP/A/BI-02", title: "bad <&>", rule: "\"quoted\"", verdict: .failed,
      detail: "expected 0xA2 & got \u{01}", duration: .milliseconds(1500), capture: "c/ANCS_NP_A_BI-02.btsnoop"),
    CaseResult(
      id: "ANCS/NP/A/BV-03", title: "skip", rule: "r", verdict: .skipped, detail: "no channel", duration: .zero),
  ]

  @Test func junitParsesWithEscapes() {
    let xml = ConformanceReport.junit(results)
    let (reader, parsed, problem) = JUnitReader.read(xml)
    #expect(parsed, "\(problem ?? "")")
    #expect(reader.counts["testcase"] == 3)
    #expect(reader.counts["failure"] == 1)
    #expect(reader.counts["skipped"] == 1)
    #expect(reader.testcases[1]["time"] == "1.500")
    #expect(reader.testcases[1]["classname"] == "ANCS/NP/A")
  }

  @Test func tapAndJSON() throws {
    let tap = ConformanceReport.tap(results).split(separator: "\n").map(String.init)
    #expect(tap[0...2] == ["TAP version 13", "1..3", "ok 1 - ANCS/NP/A/BV-01 ok"])
    #expect(tap.contains("not ok 2 - ANCS/NP/A/BI-02 bad <&>"))
    #expect(tap.last == "ok 3 - ANCS/NP/A/BV-03 skip # SKIP no channel")
    let json = try JSON(parsing: ConformanceReport.json(results))
    #expect(json["failed"]?.integer == 1)
    #expect(json["cases"]?.array?[1]["capture"]?.string == "c/ANCS_NP_A_BI-02.btsnoop")
  }

  @Test func summaryCounts() {
    let summary = ConformanceReport.summary(results)
    #expect(summary.contains("3 cases: 1 passed, 1 failed, 1 skipped in 1503 ms"))
    #expect(summary.contains("FAIL ANCS/NP/A/BI-02: expected 0xA2"))
  }
}

@Suite(.timeLimit(scaledMinutes(2))) struct HostilePhoneTests {
  /// Whatever the phone sends (PDUs cut short, bytes flipped, garbage), the harness does not
  /// trap: every case ends with a verdict.
  @Test func garbleEveryPDU() async throws {
    let seed = Locked(SplitMix64(seed: 5))
    let phone = try faultyPhone { _ in
      { pdu in
        seed.withLock { random in
          var copy = pdu
          switch random.next() % 4 {
          case 0: copy = Array(copy.prefix(Int(random.next() % UInt64(copy.count + 1))))
          case 1: if !copy.isEmpty { copy[Int(random.next() % UInt64(copy.count))] ^= 0xFF }
          case 2: copy += (0..<Int(random.next() % 8)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
          default: break
          }
          return copy
        }
      }
    }
    let results = await ConformanceRunner(phone: phone, timeout: .milliseconds(300)).run(ConformanceCatalog.np)
    #expect(results.count == ConformanceCatalog.np.count)
    #expect(!ids(results, .failed).isEmpty)
  }
}
