import Testing
import Wire

/// The progress line's two forms, driven by elapsed times the test gives (no clock, no sleep).
struct ProgressLineTests {
  /// Updates every 250 ms for a minute, with the text changing at each one.
  static let ticks = (0...240).map { Duration.milliseconds(250 * $0) }

  @Test func onATerminalOneLineIsRewrittenAndClearedAtTheEnd() {
    var progress = ProgressLine(form: .terminal)
    var output = ""
    for (index, at) in Self.ticks.enumerated() {
      output += progress.update("scenario: \(index) posted", phase: "scenario", at: at) ?? ""
    }
    output += progress.finish("never in a terminal")
    #expect(!output.contains("\n"), "never a new line")
    let writes = output.split(separator: "\r", omittingEmptySubsequences: true)
    #expect(writes.count == Self.ticks.count + 1, "each update rewrites the line, then it is cleared")
    #expect(writes.dropLast().allSatisfy { $0.hasSuffix("\u{1B}[K") }, "each clears what a longer text left")
    #expect(writes.first == "scenario: 0 posted\u{1B}[K")
    #expect(output.hasSuffix("\r\u{1B}[K"), "cleared at the end")
    #expect(!output.contains("never"))
  }

  @Test func onATerminalRedrawsAreSpacedAndTheSameTextIsNotRedrawn() {
    var progress = ProgressLine(form: .terminal)
    #expect(progress.update("a", phase: "p", at: .zero) == "\ra\u{1B}[K")
    #expect(progress.update("b", phase: "p", at: .milliseconds(50)) == nil, "too soon")
    #expect(progress.update("a", phase: "p", at: .seconds(1)) == nil, "unchanged")
    #expect(progress.update("c", phase: "q", at: .milliseconds(1010)) == "\rc\u{1B}[K", "a new phase at once")
  }

  @Test func onATerminalTheLineIsCutToTheWidth() {
    var progress = ProgressLine(form: .terminal, columns: 10)
    #expect(progress.update("0123456789abc", phase: "p", at: .zero) == "\r01234567…\u{1B}[K")
    #expect(progress.update("012345678", phase: "p", at: .seconds(1)) == "\r012345678\u{1B}[K")
  }

  /// A line of its own (a result) takes the progress line's place, and the next update
  /// draws again.
  @Test func aLineReplacesTheProgressLine() {
    var progress = ProgressLine(form: .terminal)
    _ = progress.update("[1/2] RUN  A", phase: "A", at: .zero)
    #expect(progress.line("[1/2] PASS A") == "\r\u{1B}[K[1/2] PASS A\n")
    #expect(progress.line("no progress shown") == "no progress shown\n")
    #expect(progress.update("[2/2] RUN  B", phase: "B", at: .milliseconds(1)) == "\r[2/2] RUN  B\u{1B}[K")
    #expect(progress.finish() == "\r\u{1B}[K")
    #expect(progress.finish() == "", "nothing left to clear")
  }

  @Test func inALogAtMostOneLinePerIntervalAndOneAtEachNewPhase() {
    var progress = ProgressLine(form: .log, interval: .seconds(15))
    var printed: [Duration] = []
    for (index, at) in Self.ticks.enumerated() {
      let phase = index < 100 ? "connect" : "scenario"
      if let line = progress.update("\(phase) \(index)", phase: phase, at: at) {
        #expect(line == "\(phase) \(index)\n", "a plain line")
        printed.append(at)
      }
    }
    // 0, 15 s; the scenario at 25 s, then 40 s and 55 s.
    #expect(printed == [.zero, .seconds(15), .seconds(25), .seconds(40), .seconds(55)])
    #expect(progress.finish("done") == "done\n")
    #expect(progress.line("a result") == "a result\n")
  }

  @Test func countsRateAndTimeLeft() {
    #expect(ProgressLine.count(0, of: 100, after: .seconds(3)) == "0/100")
    #expect(ProgressLine.count(30, of: 100, after: .seconds(3), unit: "shown") == "30/100 shown, 10/s, ETA 0:07")
    #expect(ProgressLine.count(100, of: 100, after: .seconds(4)) == "100/100, 25/s")
    #expect(ProgressLine.count(1, of: 10_000, after: .seconds(1)) == "1/10000, 1/s, ETA 2:46:39")
    #expect(ProgressLine.clock(.milliseconds(59_999)) == "0:59")
    #expect(ProgressLine.clock(.seconds(3600)) == "1:00:00")
  }
}
