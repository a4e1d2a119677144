import Foundation

// Driving a real terminal: tmux with a private server, read back with `capture-pane`.

package let tmuxPath: String? = {
  let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
  return directories.map { "\($0)/tmux" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

package func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

/// Polls `probe` every 50 ms for up to `seconds`; fails with `what` when time runs out.
/// (The pause between polls is a poll interval, not a wait for an event.)
package func waitFor<T>(_ what: String, seconds: Double = 20 * testTimeScale, _ probe: () async throws -> T?)
  async throws -> T
{
  let deadline = Date().addingTimeInterval(seconds)
  while true {
    if let value = try await probe() { return value }
    guard Date() < deadline else { throw Timeout(description: "timed out waiting for \(what)") }
    try await Task.sleep(for: .milliseconds(50))
  }
}

package struct Timeout: Error, CustomStringConvertible { package var description: String }

/// A private tmux server (its own socket) with one session.
package final class Tmux: Sendable {
  package let socket = "ancs-test-\(getpid())-\(UUID().uuidString.prefix(8))"
  package let session = "watch"

  package init() throws {}

  /// Runs a tmux client and waits for it. Not with Foundation's Process: the server the
  /// first command starts inherits the descriptor Process watches for the child's exit, so
  /// Process would wait for the server. posix_spawn and waitpid wait for the client alone.
  /// Runs a tmux client off the shared threads (it blocks in waitpid).
  @discardableResult
  package func run(_ arguments: [String]) async throws -> String {
    try await offThread { [self] in try runBlocking(arguments) }
  }

  @discardableResult
  package func runBlocking(_ arguments: [String]) throws -> String {
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

  /// Runs `command` in a new session at `width` x `height`, UTF-8, with `environment` added.
  package func start(_ command: String, width: Int, height: Int, environment: [String: String] = [:]) async throws {
    let variables = ["LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "screen"].merging(environment) { $1 }
    try await run(
      ["new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)"]
        + variables.sorted { $0.key < $1.key }.flatMap { ["-e", "\($0.key)=\($0.value)"] } + [command + "; sleep 60"])
  }

  package func screen() async throws -> String { try await run(["capture-pane", "-p", "-t", session]) }

  /// Polls the screen until `done` holds; fails with the last screen.
  package func waitForScreen(_ what: String, _ done: (String) -> Bool) async throws -> String {
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

  package func keys(_ keys: String...) async throws { try await run(["send-keys", "-t", session] + keys) }

  package func resize(width: Int, height: Int) async throws {
    try await run(["resize-window", "-t", session, "-x", "\(width)", "-y", "\(height)"])
  }

  /// For `defer`: blocks briefly, once per test.
  package func kill() { _ = try? runBlocking(["kill-server"]) }
}
