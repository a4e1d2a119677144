/// How long work shows that it goes on: what to write, given each new state of the work and
/// the time since it began. Pure: the caller owns the clock and the output (the `ancs`
/// command writes it to standard error, `ProgressOutput`).
///
/// On a terminal it is one line, rewritten in place (`\r`, then the text, then ESC [K to
/// clear what a longer text left), cut to the terminal's width so it never wraps, and
/// cleared at the end. Elsewhere (a CI log, a file) it is plain lines: one when a new phase
/// begins, otherwise at most one per `interval`, so a long run is visibly alive without
/// flooding the log.
public struct ProgressLine: Sendable {
  public enum Form: Sendable, Equatable {
    /// One line rewritten in place.
    case terminal
    /// Plain lines, spaced out.
    case log
  }

  public let form: Form
  /// Log form: the least time between two lines of one phase.
  public let interval: Duration
  /// Terminal form: the width the line is cut to (nil: not cut).
  public let columns: Int?
  /// Terminal form: the least time between two redraws of one phase.
  public static let redraw = Duration.milliseconds(100)

  private var phase: String?
  private var written: Duration?
  /// Terminal form: the text on the line now, if any.
  private var shown: String?

  public init(form: Form, interval: Duration = .seconds(15), columns: Int? = nil) {
    self.form = form
    self.interval = interval
    self.columns = columns
  }

  /// What to write for `text`, the state of the work `elapsed` after it began, in `phase`;
  /// nil when nothing is due (the same text, or too soon after the last).
  public mutating func update(_ text: String, phase: String, at elapsed: Duration) -> String? {
    let newPhase = phase != self.phase
    let since = written.map { elapsed - $0 }
    switch form {
    case .terminal:
      let fitted = fit(text)
      guard fitted != shown, newPhase || since.map({ $0 >= Self.redraw }) ?? true else { return nil }
      shown = fitted
      (self.phase, written) = (phase, elapsed)
      return "\r" + fitted + "\u{1B}[K"
    case .log:
      guard newPhase || since.map({ $0 >= interval }) ?? true else { return nil }
      (self.phase, written) = (phase, elapsed)
      return text + "\n"
    }
  }

  /// A line that stays (a result, a message): on a terminal the progress line gives way to
  /// it, and the next `update` draws below.
  public mutating func line(_ text: String) -> String { clear() + text + "\n" }

  /// What ends the progress: on a terminal, clearing the line; in a log, `summary` as its
  /// last line.
  public mutating func finish(_ summary: String? = nil) -> String {
    switch form {
    case .terminal: return clear()
    case .log: return summary.map { $0 + "\n" } ?? ""
    }
  }

  /// Erases the line shown on a terminal; nothing when none is.
  private mutating func clear() -> String {
    guard shown != nil else { return "" }
    shown = nil
    return "\r\u{1B}[K"
  }

  private func fit(_ text: String) -> String {
    guard let columns, text.count >= columns else { return text }
    return String(text.prefix(max(0, columns - 2))) + "…"
  }

  // MARK: Figures

  /// `done/total, rate/s, ETA m:ss` for work that counts up to `total`, `elapsed` after
  /// it began; no rate or ETA before anything is done.
  public static func count(_ done: Int, of total: Int, after elapsed: Duration, unit: String = "") -> String {
    var text = "\(done)/\(total)\(unit.isEmpty ? "" : " " + unit)"
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    guard done > 0, seconds > 0 else { return text }
    let rate = Double(done) / seconds
    text += ", \(Int(rate.rounded()))/s"
    if done < total { text += ", ETA " + clock(.seconds(Double(total - done) / rate)) }
    return text
  }

  /// A duration as `m:ss` (`h:mm:ss` from an hour), whole seconds.
  public static func clock(_ duration: Duration) -> String {
    let total = max(0, Int(duration.components.seconds))
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60)
    func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return hours > 0 ? "\(hours):\(two(minutes)):\(two(seconds))" : "\(minutes):\(two(seconds))"
  }
}
