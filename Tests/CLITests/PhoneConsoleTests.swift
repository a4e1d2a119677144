import Foundation
import TestSupport
import Testing

/// The phone's console as a person uses it, in a real terminal (tmux, read back with
/// `capture-pane`): line editing, completion, history and its file. Every wait polls the
/// screen with an overall bound.
@Suite(
  .enabled(if: tmuxPath != nil, "tmux is not installed (make deps installs it)"),
  .enabled(if: ancsBuilt, "the ancs binary is not built (run swift build first)"), .timeLimit(scaledMinutes(1)))
struct PhoneConsoleTerminalTests {
  /// The last lines with anything on them, oldest first.
  static func lastLines(_ count: Int, of screen: String) -> [String] {
    let lines = screen.split(separator: "\n").map { String($0.reversed().drop { $0 == " " }.reversed()) }
    return Array(lines.filter { !$0.isEmpty }.suffix(count))
  }

  /// The last line with anything on it: at the console, the prompt and the line being typed.
  static func lastLine(_ screen: String) -> String { lastLines(1, of: screen).first ?? "" }

  static func count(_ text: String, in screen: String) -> Int { screen.components(separatedBy: text).count - 1 }

  /// Says whether the terminal was left as the shell had it (tty-cooked) or not (tty-raw).
  static let terminalState = "stty -a | grep -qw -e -icanon -e -echo && echo tty-raw || echo tty-cooked"

  @Test func completeRecallSearchAndKeepTheHistory() async throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(atPath: home) }
    let socket = temporaryPath("phone.sock")
    let phone = "\(quoted(ancsPath)) phone --listen unix:\(socket) --share-notifications allow"
    // Twice: the second run starts with the first one's history.
    let command = "\(phone); echo ancs-exit-$?; \(Self.terminalState); \(phone); echo second-exit-$?"
    let tmux = try Tmux()
    defer { tmux.kill() }
    try await tmux.startConsole(command, home: home, height: 60)

    // Tab completes the command, then the app.
    try await tmux.keys("po", "Tab")
    _ = try await tmux.waitForScreen("post completed") { Self.lastLine($0) == "phone> post" }
    try await tmux.keys("ch", "Tab")
    _ = try await tmux.waitForScreen("chat completed") { Self.lastLine($0) == "phone> post chat" }
    try await tmux.keys("\"Hello\"", "Enter")
    _ = try await tmux.waitForScreen("the post") {
      $0.contains("posted UID 1: Chat — Hello") && Self.lastLine($0) == "phone>"
    }
    try await tmux.keys("battery 42", "Enter")
    _ = try await tmux.waitForScreen("the battery") { $0.contains("battery 42%") && Self.lastLine($0) == "phone>" }

    // Up recalls the lines, newest first.
    try await tmux.keys("Up")
    _ = try await tmux.waitForScreen("battery recalled") { Self.lastLine($0) == "phone> battery 42" }
    try await tmux.keys("Up")
    _ = try await tmux.waitForScreen("the post recalled") { Self.lastLine($0) == "phone> post chat \"Hello\"" }
    try await tmux.keys("Enter")
    _ = try await tmux.waitForScreen("the second post") { $0.contains("posted UID 2: Chat — Hello") }

    // Ctrl-R searches the history backwards.
    try await tmux.keys("C-r", "batt")
    // libedit shows the match on the line and what is searched for below it.
    _ = try await tmux.waitForScreen("the search") {
      let lines = Self.lastLines(2, of: $0)
      return lines.first == "phone> battery 42" && lines.last?.hasSuffix("batt") == true
    }
    try await tmux.keys("Enter")
    _ = try await tmux.waitForScreen("the battery again") { Self.count("battery 42%", in: $0) == 2 }

    // Several candidates: listed, the line kept.
    try await tmux.keys("post c", "Tab")
    let listed = try await tmux.waitForScreen("the apps listed") {
      $0.contains("com.example.chat") && Self.lastLine($0) == "phone> post c"
    }
    #expect(listed.contains("calendar") && listed.contains("com.apple.mobilemail"), "\(listed)")
    try await tmux.keys("C-u")

    // A watch's events while a line is being typed: printed above it, the line kept.
    try await tmux.keys("lis")
    _ = try await tmux.waitForScreen("the partial line") { Self.lastLine($0) == "phone> lis" }
    let watch = try Command(["watch", "--connect", "unix:\(socket)", "--headless"])
    defer { watch.terminate() }
    let events = try await tmux.waitForScreen("the watch's events") {
      $0.contains("phone: watch 1 subscribed") && Self.lastLine($0) == "phone> lis"
    }
    #expect(!events.contains("phone> lisphone"), "\(events)")
    try await tmux.keys("Tab", "Enter")
    _ = try await tmux.waitForScreen("the list") { $0.contains("2 notifications; battery 42%, 1 watch connected") }

    try await tmux.keys("quit", "Enter")
    let ended = try await tmux.waitForScreen("the end") { $0.contains("ancs-exit-") && $0.contains("tty-") }
    #expect(ended.contains("ancs-exit-0") && ended.contains("tty-cooked"), "the terminal is given back:\n\(ended)")
    let history = try String(contentsOfFile: home + "/.ancs_phone_history", encoding: .utf8)
    #expect(history.contains("battery") && history.contains("quit"), "\(history)")
    let mode = try FileManager.default.attributesOfItem(atPath: home + "/.ancs_phone_history")[.posixPermissions]
    #expect(mode as? Int == 0o600)

    // The next run remembers.
    _ = try await tmux.waitForScreen("the second phone") {
      Self.count("phone: listening", in: $0) == 2 && Self.lastLine($0) == "phone>"
    }
    try await tmux.keys("Up")
    _ = try await tmux.waitForScreen("quit recalled") { Self.lastLine($0) == "phone> quit" }
    try await tmux.keys("Enter")
    let second = try await tmux.waitForScreen("the second end") { $0.contains("second-exit-") }
    #expect(second.contains("second-exit-0"), "\(second)")
  }

  /// The history file keeps the newest 1000 lines.
  @Test func theHistoryFileIsCapped() async throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(atPath: home) }
    // libedit's format: a header, then one line per entry with spaces as \040.
    let file = home + "/.ancs_phone_history"
    let entries = (0..<1500).map { "#\\040note\\040\($0)\n" }
    try ("_HiStOrY_V2_\n" + entries.joined()).write(toFile: file, atomically: true, encoding: .utf8)
    let command = "\(quoted(ancsPath)) phone --listen unix:\(temporaryPath("phone.sock")); echo ancs-exit-$?"
    let tmux = try Tmux()
    defer { tmux.kill() }
    try await tmux.startConsole(command, home: home, height: 30)
    try await tmux.keys("Up")
    _ = try await tmux.waitForScreen("the newest line") { Self.lastLine($0) == "phone> # note 1499" }
    try await tmux.keys("C-u", "battery 7", "Enter")
    _ = try await tmux.waitForScreen("the battery") { $0.contains("battery 7%") }
    try await tmux.keys("quit", "Enter")
    _ = try await tmux.waitForScreen("the end") { $0.contains("ancs-exit-0") }
    let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
    #expect(lines.count == 1001, "a header and 1000 lines, not \(lines.count)")
    #expect(lines.dropFirst().first == "#\\040note\\040502" && lines.suffix(2) == ["battery\\0407", "quit"])
  }

  /// Ctrl-D on an empty line ends the console's input, as end of file does: the phone goes
  /// on serving, and says so. Ctrl-C then stops it with the terminal as it was.
  @Test func endOfInputThenInterrupt() async throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(atPath: home) }
    let command =
      "\(quoted(ancsPath)) phone --listen unix:\(temporaryPath("phone.sock")); echo ancs-exit-$?; \(Self.terminalState)"
    let tmux = try Tmux()
    defer { tmux.kill() }
    try await tmux.startConsole(command, home: home, height: 30)
    try await tmux.keys("C-d")
    _ = try await tmux.waitForScreen("the end of input") {
      Self.lastLine($0) == "phone: end of console input; still serving (Ctrl-C or SIGTERM stops the phone)"
    }
    try await tmux.keys("C-c")
    let ended = try await tmux.waitForScreen("the end") { $0.contains("tty-") }
    #expect(ended.contains("ancs-exit-0") && ended.contains("tty-cooked"), "\(ended)")

    // Interrupted while a line is being typed: the terminal is given back too.
    let again = try Tmux()
    defer { again.kill() }
    try await again.startConsole(command, home: home, height: 30)
    try await again.keys("post chat \"half")
    _ = try await again.waitForScreen("the line") { Self.lastLine($0) == "phone> post chat \"half" }
    try await again.keys("C-c")
    let interrupted = try await again.waitForScreen("the end") { $0.contains("tty-") }
    #expect(interrupted.contains("ancs-exit-0") && interrupted.contains("tty-cooked"), "\(interrupted)")
  }
}

extension Tmux {
  /// Starts `command` at 100 columns with HOME at `home`, and waits for the console's prompt.
  func startConsole(_ command: String, home: String, height: Int) async throws {
    try await start(command, width: 100, height: height, environment: ["HOME": home])
    _ = try await waitForScreen("the prompt") { PhoneConsoleTerminalTests.lastLine($0) == "phone>" }
  }
}

/// A new, empty directory to be HOME (where the history file goes); the caller removes it.
func temporaryHome() throws -> String {
  let home = temporaryPath("home")
  try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
  return home
}

/// Piped input is read as it always was: no prompt, no escape sequences, no history.
@Suite(.enabled(if: ancsBuilt, "the ancs binary is not built (run swift build first)"), .timeLimit(scaledMinutes(1)))
struct PhoneConsolePipeTests {
  @Test func pipedCommandsAreReadPlain() async throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(atPath: home) }
    let socket = temporaryPath("phone.sock")
    let (status, out, err) = try await runAncs(
      ["phone", "--listen", "unix:\(socket)", "--share-notifications", "allow"],
      input: "po\t\npost chat \"Hi\"\n\nbattery 42\nquit\n",
      environment: ["HOME": home])
    #expect(status == 0 && err.isEmpty, "\(err)")
    #expect(
      out.split(separator: "\n", omittingEmptySubsequences: false) == [
        "phone: listening on unix:\(socket); type help for commands",
        #"unknown command "po"; did you mean "post"? (type "help" for the syntax)"#,
        "posted UID 1: Chat — Hi", "battery 42%", "bye", "",
      ])
    #expect(!out.contains("\u{1B}") && !out.contains("phone>"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: home).isEmpty, "no history file")
  }
}
