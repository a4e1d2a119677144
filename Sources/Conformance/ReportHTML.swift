import Capture
import Wire

extension ConformanceReport {
  /// The sides of a run's charts: the harness, which took each case's capture, and what it
  /// judged.
  public struct Lanes: Sendable {
    public var harness: String
    public var judged: String
    public init(harness: String, judged: String) {
      self.harness = harness
      self.judged = judged
    }

    /// `conform accessory`: the harness is the phone.
    public static let accessory = Lanes(harness: "harness (phone)", judged: "accessory")
    /// `conform phone`: the harness is the accessory.
    public static let phone = Lanes(harness: "harness (accessory)", judged: "phone")
  }

  /// One self-contained HTML page (no file or address outside it): the totals, a table of
  /// every case, then each case with its verdict, rule and reason and a message-sequence
  /// chart drawn from its capture (`CaseResult.trace`). Failed cases come first, with their
  /// chart open. `heading` says what was judged; `generated` when.
  public static func html(_ results: [CaseResult], heading: String, lanes: Lanes, generated: String) -> String {
    let failed = results.filter { $0.verdict == .failed }.count
    var page = """
      <!DOCTYPE html>
      <html lang="en">
      <head>
      <meta charset="utf-8">
      <meta name="viewport" content="width=device-width, initial-scale=1">
      <title>\(escape("\(heading): \(failed == 0 ? "all passed" : "\(failed) failed")"))</title>
      <style>\(style)</style>
      </head>
      <body>
      <header>
      <h1>\(escape(heading))</h1>
      <p class="totals \(failed == 0 ? "ok" : "bad")">\(escape(totals(results)))</p>
      <p class="generated">\(escape(generated)) · ancs conform</p>
      <p class="controls"><label><input type="checkbox" id="only-failed"> only failed cases</label>
      <button type="button" id="open-all">open every chart</button></p>
      </header>
      <table class="cases">
      <thead><tr><th>result</th><th>case</th><th>title</th><th>time</th></tr></thead>
      <tbody>

      """
    for result in results {
      page +=
        "<tr class=\"\(verdictClass(result.verdict))\"><td><span class=\"verdict\">\(result.verdict.rawValue)</span></td>"
      page += "<td><a href=\"#\(anchor(result.id))\">\(escape(result.id))</a></td><td>\(escape(result.title))</td>"
      page += "<td class=\"time\">\(milliseconds(result.duration)) ms</td></tr>\n"
    }
    page += "</tbody>\n</table>\n"
    // The failed cases first, their charts open: what a reader opens the page for.
    for result in results where result.verdict == .failed { page += section(result, lanes) }
    for result in results where result.verdict != .failed { page += section(result, lanes) }
    page += "<script>\(script)</script>\n</body>\n</html>\n"
    return page
  }

  /// `ANCS/NC/CP/BV-01` → `case-ANCS-NC-CP-BV-01`.
  public static func anchor(_ id: String) -> String {
    // ASCII letters, digits and "-" stand for themselves, any other character for its code
    // point between two "_" ("/" is "_2f_"): two IDs never share an anchor.
    "case-"
      + id.unicodeScalars.map { scalar in
        if scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-") {
          return String(scalar)
        }
        return "_" + String(scalar.value, radix: 16) + "_"
      }.joined()
  }

  static func verdictClass(_ verdict: Verdict) -> String {
    switch verdict {
    case .passed: "pass"
    case .failed: "fail"
    case .skipped: "skip"
    }
  }

  static func section(_ result: CaseResult, _ lanes: Lanes) -> String {
    var html = "<section class=\"case \(verdictClass(result.verdict))\" id=\"\(anchor(result.id))\">\n"
    html += "<h2><span class=\"verdict\">\(result.verdict.rawValue)</span> \(escape(result.id))"
    html += " <span class=\"title\">\(escape(result.title))</span></h2>\n"
    html += "<p class=\"rule\">Rule: \(escape(result.rule))</p>\n"
    if !result.detail.isEmpty { html += "<p class=\"detail\">\(escape(result.detail))</p>\n" }
    if let capture = result.capture { html += "<p class=\"file\">capture: \(escape(capture))</p>\n" }
    guard let trace = result.trace else {
      return html + "<p class=\"nochart\">no capture: the case ran no link</p>\n</section>\n"
    }
    let chart: SequenceChart
    do { chart = try SequenceChart(capture: trace) } catch {
      return html + "<p class=\"nochart\">the capture cannot be read: \(escape("\(error)"))</p>\n</section>\n"
    }
    let pdus = chart.rows.filter { if case .message = $0 { true } else { false } }.count
    html += "<details\(result.verdict == .failed ? " open" : "")><summary>sequence chart: \(pdus) PDUs"
    html += chart.omitted > 0 ? ", \(chart.omitted) more rows not drawn" : ""
    html += "</summary>\n<div class=\"scroll\">" + chart.svg(host: lanes.harness, peer: lanes.judged) + "</div>\n"
    return html + "</details>\n</section>\n"
  }

  static let style = """
    body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;margin:24px auto;max-width:1040px;padding:0 16px}
    h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 6px}
    .totals{font-weight:600;margin:4px 0}.totals.ok{color:#1a7f37}.totals.bad{color:#cf222e}
    .generated{color:#57606a;margin:0 0 8px}.controls{margin:8px 0 16px}button{margin-left:12px}
    table.cases{border-collapse:collapse;width:100%;margin-bottom:24px}
    table.cases th,table.cases td{text-align:left;padding:3px 8px;border-bottom:1px solid #d8dee4}
    td.time{text-align:right;white-space:nowrap;color:#57606a}
    .verdict{display:inline-block;min-width:38px;text-align:center;font-weight:700;font-size:12px;border-radius:4px;padding:0 4px}
    .pass .verdict{background:#dafbe1;color:#1a7f37}.fail .verdict{background:#ffebe9;color:#cf222e}
    .skip .verdict{background:#eaeef2;color:#57606a}
    section.case{border-left:4px solid #d8dee4;padding:8px 0 8px 12px;margin:0 0 18px}
    section.fail{border-left-color:#cf222e}section.pass{border-left-color:#1a7f37}
    .title{font-weight:400}.rule{color:#57606a;margin:2px 0}.detail{background:#fff8c5;padding:6px 8px;margin:6px 0;white-space:pre-wrap}
    .file,.nochart{color:#57606a;margin:2px 0}.scroll{overflow-x:auto}summary{cursor:pointer;color:#0550ae;margin:4px 0}
    body.only-failed section.pass,body.only-failed section.skip,body.only-failed tr.pass,body.only-failed tr.skip{display:none}
    svg.chart{font:11px system-ui,sans-serif;background:#fff}
    svg.chart .lane{stroke:#8c959f;stroke-dasharray:4 3}svg.chart .head{fill:#f6f8fa;stroke:#8c959f}
    svg.chart .h{font-weight:700;font-size:12px;text-anchor:middle}
    svg.chart .t{fill:#6e7781;font-size:10px}svg.chart .m{font-weight:700;font-size:12px;text-anchor:middle}
    svg.chart .l{font-family:ui-monospace,monospace;fill:#57606a;text-anchor:middle}
    svg.chart .note rect{fill:#f6f8fa;stroke:#d0d7de}svg.chart .note text:not(.t){text-anchor:middle}
    svg.chart .finding rect{fill:#ffebe9;stroke:#cf222e}svg.chart .finding text:not(.t){text-anchor:middle;fill:#a40e26;font-weight:700}
    """

  static let script = """
    document.getElementById("only-failed").addEventListener("change", function (event) {
      document.body.classList.toggle("only-failed", event.target.checked);
    });
    document.getElementById("open-all").addEventListener("click", function () {
      document.querySelectorAll("details").forEach(function (details) { details.open = true; });
    });
    """
}
