import Runtime
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// A `ProgressLine` on standard error, timed on the continuous clock from the moment it is
/// made: on a terminal one line rewritten in place, otherwise a plain line at each new phase
/// and at most one per `interval` within one. Standard output (tables, TAP) is left alone.
public final class ProgressOutput: Sendable {
  private let line: Locked<ProgressLine>
  private let start = ContinuousClock.now
  public let isTerminal: Bool

  public init(interval: Duration = .seconds(15)) {
    isTerminal = isatty(2) == 1
    var size = winsize()
    let columns = isTerminal && ioctl(2, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : nil
    line = Locked(ProgressLine(form: isTerminal ? .terminal : .log, interval: interval, columns: columns))
  }

  /// Time since the progress began.
  public var elapsed: Duration { ContinuousClock.now - start }

  /// The state of the work now; written when due.
  public func update(_ text: String, phase: String) {
    let now = elapsed
    if let output = line.withLock({ $0.update(text, phase: phase, at: now) }) { write(output) }
  }

  /// A line that stays; the progress line gives way to it.
  public func print(_ text: String) { write(line.withLock { $0.line(text) }) }

  /// Clears the progress line, or ends the log with `summary`.
  public func finish(_ summary: String? = nil) { write(line.withLock { $0.finish(summary) }) }

  /// Updates with `status()` (phase, text) now and every `period` until cancelled.
  public func ticking(
    every period: Duration, _ status: @escaping @Sendable () -> (phase: String, text: String)
  ) -> Task<Void, Never> {
    Task {
      while !Task.isCancelled {
        let (phase, text) = status()
        update(text, phase: phase)
        try? await Task.sleep(for: period)
      }
    }
  }

  private func write(_ text: String) {
    if !text.isEmpty { writeAll(text, to: 2) }
  }
}
