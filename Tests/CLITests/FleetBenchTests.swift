import Foundation
import TestSupport
import Testing

/// `ancs bench --fleet`: one phone process (a child of the bench) serving a fleet of watches
/// over Unix sockets, through the scenario of posts and removals of BENCHMARKS.md, smaller.
/// The bench itself checks that every watch ends with the phone's exact notifications and
/// that the open files of both processes return to their baselines (a bounded poll of
/// /proc: the last descriptor of a link closes on its reader thread, with no event to
/// await), and exits 1 otherwise. No timing is checked here; the figures live in
/// BENCHMARKS.md.
@Suite(.enabled(if: ancsBuilt, "the ancs binary is not built (run swift build first)"), .timeLimit(scaledMinutes(5)))
struct FleetBenchTests {
  @Test func fiftyWatchesEndWithThePhonesSet() async throws {
    let (status, out, err) = try await runAncs(["bench", "--fleet", "50", "--notifications", "500"])
    #expect(status == 0, "exit \(status)\n\(out)\n\(err)")
    #expect(out.contains("check: 50 × 500 notifications shown, each by every watch; 446 removed"), "\(out)")
    #expect(out.contains("check: every one of the 50 watches holds exactly the phone's 54 notifications"), "\(out)")
    #expect(out.contains("check: open files back to baseline after all disconnect"), "\(out)")
    #expect(!out.contains("FAIL"), "\(out)")
  }

  /// The two-process end-to-end bench runs to its figure: its phone child shares without
  /// asking anybody (it once waited forever at a console nobody typed into). 2,000
  /// notifications, a tenth of the figure's: these are debug and sanitizer builds.
  @Test func endToEndAcrossProcessesRunsToItsFigure() async throws {
    let (status, out, err) = try await runAncs(["bench", "--filter", "e2e-unix", "--notifications", "2000"])
    #expect(status == 0, "exit \(status)\n\(out)\n\(err)")
    #expect(out.contains("| end to end, two processes over a Unix socket, 2000 notifications (MTU 185) |"), "\(out)")
  }

  /// Issue #13 (10): stopped by a signal (a timeout, Ctrl-C), the bench leaves no phone
  /// process behind.
  @Test func aSignalLeavesNoPhoneBehind() async throws {
    let bench = Process()
    bench.executableURL = URL(fileURLWithPath: ancsPath)
    bench.arguments = ["bench", "--fleet", "5", "--notifications", "1000000"]
    bench.standardOutput = FileHandle.nullDevice
    bench.standardError = FileHandle.nullDevice
    try bench.run()
    defer { if bench.isRunning { kill(bench.processIdentifier, SIGKILL) } }
    let socket = "ancs-fleet-\(bench.processIdentifier).sock"
    /// The process IDs whose command line names the fleet's socket (its phone).
    @Sendable func phones() -> [Int32] {
      let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
      return entries.compactMap(Int32.init).filter { pid in
        let line = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        let text = String(decoding: line, as: UTF8.self)
        let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return text.contains(socket) && !state.contains(") Z ")
      }
    }
    let started = try await offThread { () -> [Int32] in
      for _ in 0..<1000 {
        let found = phones()
        if !found.isEmpty && FileManager.default.fileExists(atPath: "/tmp/\(socket)") { return found }
        usleep(10_000)
      }
      return []
    }
    try #require(!started.isEmpty, "the fleet's phone never started")
    kill(bench.processIdentifier, SIGTERM)
    try await offThread { bench.waitUntilExit() }
    let left = try await offThread { () -> [Int32] in
      for _ in 0..<500 {
        if phones().isEmpty { return [] }
        usleep(10_000)
      }
      return phones()
    }
    for pid in left { kill(pid, SIGKILL) }
    #expect(left.isEmpty, "the phone outlived the bench: \(left)")
  }

  /// Standard error is a pipe here, not a terminal: the progress is plain lines, one as
  /// each phase begins (the run is too short for the periodic ones) and one at the end, with
  /// no carriage return or escape; standard output keeps only the table and the checks.
  @Test func progressOnStandardErrorAsPlainLines() async throws {
    let (status, out, err) = try await runAncs(["bench", "--fleet", "2", "--notifications", "60"])
    #expect(status == 0, "exit \(status)\n\(out)\n\(err)")
    #expect(!err.contains("\r") && !err.contains("\u{1B}"), "\(err.debugDescription)")
    let lines = err.split(separator: "\n").map(String.init)
    let phases = lines.compactMap { $0.wholeMatch(of: /fleet \d+:\d\d ([a-z-]+)(: .*)?/)?.output.1 }.map(String.init)
    #expect(phases.count == lines.count, "every line is progress: \(lines)")
    #expect(phases == ["warm-up", "connect", "scenario", "latency", "verify", "disconnect", "done"], "\(lines)")
    #expect(lines.contains { $0.hasSuffix("connect: 0/2 watches subscribed") }, "\(lines)")
    #expect(lines.contains { $0.contains("scenario: 0/60 posted, 0/60 on every watch") }, "\(lines)")
    #expect(!out.contains("fleet 0:") && out.contains("check: 2 × 60 notifications shown"), "\(out)")
  }

  /// A fleet that needs more descriptors than the hard limit allows is refused in one line.
  @Test func hardLimitTooLow() async throws {
    let (status, out, err) = try await runAncs(["bench", "--fleet", "200"], openFiles: 100)
    #expect(status == 2, "exit \(status): \(err)")
    #expect(err.contains("--fleet 200 needs about 264 open files") && err.contains("hard limit is 100"), "\(err)")
    #expect(err.split(separator: "\n").count == 1, "one line: \(err)")
    #expect(out.isEmpty)
  }
}
