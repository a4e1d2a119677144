import Foundation
import Testing

/// How much longer the tests' own time bounds are in this run: `ANCS_TEST_TIME_SCALE`
/// (a number, 1 when unset). The sanitizer runs of `.ci/run` set it, since ThreadSanitizer
/// and AddressSanitizer slow everything down several times while the deadlines a test gives
/// a watch or a conformance case stay fixed. Bounds only: no test measures time.
package let testTimeScale: Double = {
  guard let text = ProcessInfo.processInfo.environment["ANCS_TEST_TIME_SCALE"], let scale = Double(text),
    scale >= 1, scale <= 100
  else { return 1 }
  return scale
}()

/// `duration` times the run's time scale.
package func scaled(_ duration: Duration) -> Duration { duration * testTimeScale }

/// `seconds` times the run's time scale, as a command-line argument.
package func scaledSeconds(_ seconds: Double) -> String { String(seconds * testTimeScale) }

/// A suite's time limit of `minutes`, times the run's time scale (rounded up).
package func scaledMinutes(_ minutes: Int) -> TimeLimitTrait.Duration {
  .minutes(minutes * Int(testTimeScale.rounded(.up)))
}
