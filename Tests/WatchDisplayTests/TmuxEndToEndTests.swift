import Foundation
import TestSupport
import Testing

/// The real binary in a real terminal, used as a person would: `ancs demo` in tmux at 80x24
/// with a UTF-8 locale, read back with `capture-pane`. Every wait polls the screen (or the
/// phone's log) with an overall bound; nothing sleeps in the hope that something happened.
@Suite(
  .enabled(if: tmuxPath != nil, "tmux is not installed (make deps installs it)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "\(ancsPath) is not built (swift build)"),
  .timeLimit(scaledMinutes(1)))
struct TmuxEndToEndTests {
  @Test func openActResizeQuit() async throws {
    let tmux = try Tmux()
    defer { tmux.kill() }
    let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    let scenario = directory.appendingPathComponent("scenario.json").path
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-phone-\(UUID().uuidString).jsonl")
      .path
    defer { try? FileManager.default.removeItem(atPath: log) }
    // Messages stay for the whole test: a loaded machine (a sanitizer run beside the other
    // tests) draws the face seconds apart, and the 3 s of the default could pass unseen.
    let config = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-face-\(UUID().uuidString).conf")
      .path
    try "message-seconds = 600\n".write(toFile: config, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: config) }
    // --duration: a bound in case this test dies before pressing q.
    let command =
      "\(quoted(ancsPath)) demo --duration 600 --config \(quoted(config)) --scenario \(quoted(scenario))"
      + " --phone-log \(quoted(log)); echo ancs-exit-$?"
    try await tmux.start(command, width: 80, height: 24)

    // The invitation arrives, newest first, so the cursor is on it.
    let list = try await tmux.waitForScreen("wait for the notification") { $0.contains("Lunch with Ada 🍜") }
    #expect(list.contains("Chat") && list.contains("Daily Planet"), "\(list)")
    #expect(list.contains("╭") && list.contains("╯"), "the case is drawn with Unicode lines:\n\(list)")

    try await tmux.keys("Enter")
    let detail = try await tmux.waitForScreen("open it") { $0.contains("Shall we meet at the café at one?") }
    #expect(detail.contains("Accept") && detail.contains("Decline"), "\(detail)")

    try await tmux.keys("a")
    let action = try await waitFor("the phone to receive the positive action") { () -> String? in
      let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
      return text.split(separator: "\n").first { $0.contains(#""event":"action""#) }.map(String.init)
    }
    #expect(action.contains(#""action":"positive""#) && action.contains("Lunch with Ada"), "\(action)")
    // The confirmation names the action: the phone's answer comes before the Removed event.
    _ = try await tmux.waitForScreen("the face to confirm the action") { $0.contains("✓ Accept") }
    _ = try await tmux.waitForScreen("the notification to leave the list") {
      !$0.contains("Lunch with Ada") && $0.contains("Harbour fireworks")
    }

    try await tmux.resize(width: 30, height: 10)
    let small = try await tmux.waitForScreen("the too-small message") { $0.contains("Too small: 30x10") }
    #expect(small.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.count == 1)
    try await tmux.resize(width: 80, height: 24)
    _ = try await tmux.waitForScreen("the face again") { $0.contains("Harbour fireworks") }

    try await tmux.keys("q")
    let exited = try await tmux.waitForScreen("quit") { $0.contains("ancs-exit-") }
    #expect(exited.contains("ancs-exit-0"), "\(exited)")
    #expect(!exited.contains("Harbour fireworks"), "the terminal is given back:\n\(exited)")
  }

  /// Issue #17: the now-playing screen shows what the phone plays; space pauses it and `>`
  /// skips it on the phone.
  @Test func nowPlayingPausesAndSkips() async throws {
    let tmux = try Tmux()
    defer { tmux.kill() }
    let scenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("scenario.json")
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-phone-\(UUID().uuidString).jsonl")
      .path
    defer { try? FileManager.default.removeItem(atPath: log) }
    let command =
      "\(quoted(ancsPath)) demo --duration 600 --scenario \(quoted(scenario.path)) --phone-log \(quoted(log)); echo ancs-exit-$?"
    try await tmux.start(command, width: 80, height: 24)
    _ = try await tmux.waitForScreen("the notification") { $0.contains("Lunch with Ada 🍜") }
    try await tmux.keys("p")
    let playing = try await tmux.waitForScreen("the track playing") {
      $0.contains("Tall Bird") && $0.contains("Bartlebeats") && $0.contains("▶ Playing")
    }
    #expect(playing.contains("3:35") && playing.contains("1/2"), "\(playing)")
    try await tmux.keys("Space")
    _ = try await tmux.waitForScreen("paused") { $0.contains("❚❚ Paused") }
    let told = try await waitFor("the phone to take the command") { () -> String? in
      let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
      return text.split(separator: "\n").first { $0.contains(#""event":"remoteCommand""#) }.map(String.init)
    }
    #expect(told.contains(#""command":"togglePlayPause""#), "\(told)")
    try await tmux.keys(">")
    _ = try await tmux.waitForScreen("the next track") { $0.contains("Second Song") && $0.contains("2/2") }
    try await tmux.keys("Escape")
    _ = try await tmux.waitForScreen("the list again") { $0.contains("Lunch with Ada") }
    try await tmux.keys("q")
    let exited = try await tmux.waitForScreen("quit") { $0.contains("ancs-exit-") }
    #expect(exited.contains("ancs-exit-0"), "\(exited)")
  }

  @Test func interruptRestoresTheTerminal() async throws {
    let tmux = try Tmux()
    defer { tmux.kill() }
    try await tmux.start("\(quoted(ancsPath)) demo --duration 600; echo ancs-exit-$?", width: 80, height: 24)
    _ = try await tmux.waitForScreen("the face") { $0.contains("╭") }
    try await tmux.keys("C-c")
    let exited = try await tmux.waitForScreen("the end after Ctrl-C") { $0.contains("ancs-exit-") }
    #expect(exited.contains("ancs-exit-0"), "\(exited)")
    #expect(!exited.contains("╭"), "the terminal is given back:\n\(exited)")
  }
}
