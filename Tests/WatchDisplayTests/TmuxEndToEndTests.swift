import Foundation
import Testing

/// The real binary in a real terminal, used as a person would: `ancs demo` in tmux at 80x24
/// with a UTF-8 locale, read back with `capture-pane`. Every wait polls the screen (or the
/// phone's log) with an overall bound; nothing sleeps in the hope that something happened.
@Suite(
  .enabled(if: tmuxPath != nil, "tmux is not installed (make deps installs it)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsBinary), "\(ancsBinary) is not built (swift build)"),
  .timeLimit(.minutes(1)))
struct TmuxEndToEndTests {
  @Test func openActResizeQuit() async throws {
    let tmux = try Tmux()
    defer { tmux.kill() }
    let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    let scenario = directory.appendingPathComponent("scenario.json").path
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-phone-\(UUID().uuidString).jsonl")
      .path
    defer { try? FileManager.default.removeItem(atPath: log) }
    // --duration: a bound in case this test dies before pressing q.
    let command =
      "\(quoted(ancsBinary)) demo --duration 120 --scenario \(quoted(scenario)) --phone-log \(quoted(log)); echo ancs-exit-$?"
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
    let after = try await tmux.waitForScreen("the notification to leave the list") {
      !$0.contains("Lunch with Ada") && $0.contains("Harbour fireworks")
    }
    #expect(after.contains("✓ Accept"), "the face confirms the action:\n\(after)")

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

  @Test func interruptRestoresTheTerminal() async throws {
    let tmux = try Tmux()
    defer { tmux.kill() }
    try await tmux.start("\(quoted(ancsBinary)) demo --duration 120; echo ancs-exit-$?", width: 80, height: 24)
    _ = try await tmux.waitForScreen("the face") { $0.contains("╭") }
    try await tmux.keys("C-c")
    let exited = try await tmux.waitForScreen("the end after Ctrl-C") { $0.contains("ancs-exit-") }
    #expect(exited.contains("ancs-exit-0"), "\(exited)")
    #expect(!exited.contains("╭"), "the terminal is given back:\n\(exited)")
  }
}

/// The `ancs` binary: $ANCS_BINARY, or the one `swift build` puts in .build/debug.
let ancsBinary: String = {
  if let path = ProcessInfo.processInfo.environment["ANCS_BINARY"] { return path }
  let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
  return root.appendingPathComponent(".build/debug/ancs").path
}()

let tmuxPath: String? = {
  let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
  return directories.map { "\($0)/tmux" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

/// Polls `probe` every 50 ms for up to `seconds`; fails with `what` when time runs out.
/// (The pause between polls is a poll interval, not a wait for an event.)
func waitFor<T>(_ what: String, seconds: Double = 20, _ probe: () async throws -> T?) async throws -> T {
  let deadline = Date().addingTimeInterval(seconds)
  while true {
    if let value = try await probe() { return value }
    guard Date() < deadline else { throw Timeout(description: "timed out waiting for \(what)") }
    try await Task.sleep(for: .milliseconds(50))
  }
}

struct Timeout: Error, CustomStringConvertible { var description: String }

/// A private tmux server (its own socket) with one session.
final class Tmux: Sendable {
  let socket = "ancs-test-\(getpid())-\(UUID().uuidString.prefix(8))"
  let session = "watch"

  init() throws {}

  /// Runs a tmux client and waits for it. Not with Foundation's Process: the server the
  /// first command starts inherits the descriptor Process watches for the child's exit, so
  /// Process would wait for the server. posix_spawn and waitpid wait for the client alone.
  /// Runs a tmux client off the shared threads (it blocks in waitpid).
  @discardableResult
  func run(_ arguments: [String]) async throws -> String {
    try await offThread { [self] in try runBlocking(arguments) }
  }

  @discardableResult
  func runBlocking(_ arguments: [String]) throws -> String {
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-tmux-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: output) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let path = tmuxPath ?? "/usr/bin/tmux"
    let argv = ([path, "-L", socket, "-f", "/dev/null"] + arguments).map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    // The test runner's threads block most signals; tmux and its panes get a clean slate
    // (a server that cannot see SIGCHLD never notices its panes ending).
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for number in [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGCHLD, SIGPIPE, SIGWINCH] { sigaddset(&defaults, number) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
    guard spawned == 0 else { throw Timeout(description: "cannot run tmux: \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    // Exited normally with status 0.
    guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
      throw Timeout(description: "tmux \(arguments.joined(separator: " ")) failed: \(text)")
    }
    return text
  }

  func start(_ command: String, width: Int, height: Int) async throws {
    try await run([
      "new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)", "-e", "LANG=C.UTF-8", "-e",
      "LC_ALL=C.UTF-8", "-e", "TERM=screen", command + "; sleep 60",
    ])
  }

  func screen() async throws -> String { try await run(["capture-pane", "-p", "-t", session]) }

  /// Polls the screen until `done` holds; fails with the last screen.
  func waitForScreen(_ what: String, _ done: (String) -> Bool) async throws -> String {
    var last = ""
    do {
      return try await waitFor(what) {
        last = try await screen()
        return done(last) ? last : nil
      }
    } catch {
      throw Timeout(description: "\(error); the screen was:\n\(last)")
    }
  }

  func keys(_ keys: String...) async throws { try await run(["send-keys", "-t", session] + keys) }

  func resize(width: Int, height: Int) async throws {
    try await run(["resize-window", "-t", session, "-x", "\(width)", "-y", "\(height)"])
  }

  /// For `defer`: blocks briefly, once per test.
  func kill() { _ = try? runBlocking(["kill-server"]) }
}
