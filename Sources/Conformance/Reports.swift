import Wire

/// The report formats: a progress line per case, a summary table, JUnit XML, TAP and JSON.
public enum ConformanceReport {
  /// `[ 3/37] PASS ANCS/NP/SVC/BV-03  Control Point takes writes with response (2 ms)`.
  public static func progressLine(_ index: Int, _ total: Int, _ result: CaseResult) -> String {
    var line =
      "\(counter(index, total)) \(result.verdict.rawValue) \(result.id)  \(result.title) (\(milliseconds(result.duration)) ms)"
    if !result.detail.isEmpty { line += "\n        \(result.detail)" }
    if let capture = result.capture { line += "\n        capture: \(capture)" }
    return line
  }

  /// `[ 3/37] RUN  ANCS/NP/SVC/BV-03  Control Point takes writes with response`: a case begins
  /// (its verdict's line follows when it ends).
  public static func startLine(_ index: Int, _ total: Int, _ testCase: ConformanceCase) -> String {
    "\(counter(index, total)) RUN  \(testCase.id)  \(testCase.title)"
  }

  /// `[ 3/37]`, the number padded to the width of the count.
  static func counter(_ index: Int, _ total: Int) -> String {
    let width = String(total).count
    return "[" + String(repeating: " ", count: max(0, width - String(index).count)) + "\(index)/\(total)]"
  }

  /// A table of every case, then the counts.
  public static func summary(_ results: [CaseResult]) -> String {
    let idWidth = max(2, results.map(\.id.count).max() ?? 0)
    var lines = ["ID".padded(to: idWidth) + "  RESULT  TIME    TITLE"]
    for result in results {
      let time = "\(milliseconds(result.duration)) ms"
      lines.append(
        result.id.padded(to: idWidth) + "  " + result.verdict.rawValue.padded(to: 6) + "  " + time.padded(to: 6) + "  "
          + result.title)
    }
    lines.append(totals(results))
    for result in results where result.verdict == .failed {
      lines.append("FAIL \(result.id): \(result.detail)" + (result.capture.map { " (capture: \($0))" } ?? ""))
    }
    return lines.joined(separator: "\n")
  }

  /// `37 cases: 35 passed, 1 failed, 1 skipped in 412 ms`.
  public static func totals(_ results: [CaseResult]) -> String {
    let count = { (verdict: Verdict) in results.filter { $0.verdict == verdict }.count }
    let time = results.reduce(Duration.zero) { $0 + $1.duration }
    return
      "\(results.count) case\(results.count == 1 ? "" : "s"): \(count(.passed)) passed, \(count(.failed)) failed, \(count(.skipped)) skipped "
      + "in \(milliseconds(time)) ms"
  }

  /// JUnit XML (the Ant schema CI systems read): one testsuite, one testcase per case, a
  /// `failure` or `skipped` element with the reason.
  public static func junit(_ results: [CaseResult], suite: String = "ancs-conformance") -> String {
    let failures = results.filter { $0.verdict == .failed }.count
    let skipped = results.filter { $0.verdict == .skipped }.count
    let time = seconds(results.reduce(Duration.zero) { $0 + $1.duration })
    var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    xml += "<testsuites name=\"\(escape(suite))\" tests=\"\(results.count)\" failures=\"\(failures)\" "
    xml += "skipped=\"\(skipped)\" time=\"\(time)\">\n"
    xml += "  <testsuite name=\"\(escape(suite))\" tests=\"\(results.count)\" failures=\"\(failures)\" errors=\"0\" "
    xml += "skipped=\"\(skipped)\" time=\"\(time)\">\n"
    for result in results {
      let group = result.id.split(separator: "/").prefix(3).joined(separator: "/")
      xml += "    <testcase classname=\"\(escape(group))\" name=\"\(escape(result.id))\" "
      xml += "time=\"\(seconds(result.duration))\""
      switch result.verdict {
      case .passed:
        xml += "/>\n"
      case .failed:
        var body = result.detail + "\nrule: " + result.rule
        if let capture = result.capture { body += "\ncapture: " + capture }
        xml += ">\n      <failure message=\"\(escape(result.detail))\">\(escape(body))</failure>\n"
        if let capture = result.capture { xml += "      <system-out>capture: \(escape(capture))</system-out>\n" }
        xml += "    </testcase>\n"
      case .skipped:
        xml += ">\n      <skipped message=\"\(escape(result.detail))\"/>\n    </testcase>\n"
      }
    }
    xml += "  </testsuite>\n</testsuites>\n"
    return xml
  }

  /// TAP version 13: `ok N - ID title`, `# SKIP reason`, and a YAML block for failures.
  public static func tap(_ results: [CaseResult]) -> String {
    var lines = ["TAP version 13", "1..\(results.count)"]
    for (index, result) in results.enumerated() {
      let name = "\(result.id) \(oneLine(result.title))"
      switch result.verdict {
      case .passed: lines.append("ok \(index + 1) - \(name)")
      case .skipped: lines.append("ok \(index + 1) - \(name) # SKIP \(oneLine(result.detail))")
      case .failed:
        lines.append("not ok \(index + 1) - \(name)")
        lines.append("  ---")
        lines.append("  message: \(JSON.string(result.detail).description)")
        lines.append("  rule: \(JSON.string(result.rule).description)")
        if let capture = result.capture { lines.append("  capture: \(JSON.string(capture).description)") }
        lines.append("  ...")
      }
    }
    return lines.joined(separator: "\n")
  }

  /// `{"cases":[{"id":...,"title":...,"rule":...,"result":"pass","detail":...,"ms":...,
  /// "capture":...}],"passed":N,"failed":N,"skipped":N}`.
  public static func json(_ results: [CaseResult]) -> String {
    let cases: [JSON] = results.map { result in
      var fields: [(String, JSON)] = [
        ("id", .string(result.id)), ("title", .string(result.title)), ("rule", .string(result.rule)),
        ("result", .string(result.verdict.rawValue.lowercased())), ("detail", .string(result.detail)),
        ("ms", .number(Double(milliseconds(result.duration)))),
      ]
      if let capture = result.capture { fields.append(("capture", .string(capture))) }
      return .object(fields)
    }
    let count = { (verdict: Verdict) in JSON.number(Double(results.filter { $0.verdict == verdict }.count)) }
    return JSON.object([
      ("cases", .array(cases)), ("passed", count(.passed)), ("failed", count(.failed)), ("skipped", count(.skipped)),
    ]).description
  }

  /// The catalog as `ancs conform --list` prints it: ID, whether it needs the stimulus
  /// channel, title.
  public static func list(_ cases: [ConformanceCase]) -> String {
    let idWidth = max(2, cases.map(\.id.count).max() ?? 0)
    var lines = cases.map { testCase in
      testCase.id.padded(to: idWidth) + "  " + (testCase.needsStimulus ? "stimulus" : "        ") + "  "
        + testCase.title
    }
    let np = cases.filter { $0.id.hasPrefix("ANCS/NP/") }.count
    lines.append(
      "\(cases.count) cases: \(np) NP (a phone under test), \(cases.count - np) NC (an accessory under test)")
    return lines.joined(separator: "\n")
  }

  static func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
  }

  static func seconds(_ duration: Duration) -> String {
    let ms = milliseconds(duration)
    let fraction = String(ms % 1000)
    return "\(ms / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
  }

  static func oneLine(_ text: String) -> String {
    String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
  }

  /// XML text and attribute escaping (`Markup.escape`).
  static func escape(_ text: String) -> String { Markup.escape(text) }
}

extension String {
  fileprivate func padded(to width: Int) -> String {
    count >= width ? self : self + String(repeating: " ", count: width - count)
  }
}
