import Foundation
import TestSupport
import Testing

/// `ancs phone --bluetooth` and `ancs watch --bluetooth`, two processes, each with its own
/// Bumble virtual controller on one virtual radio link: the phone scans for the watch's
/// ANCS solicitation, connects, the two pair (Just Works), and ANCS runs over the air.
@Suite(
  "ancs phone and ancs watch over the air", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "needs the ancs binary: swift build first"),
  .timeLimit(scaledMinutes(2)))
struct OverTheAirTests {
  /// The watch's controller over TCP (`hci-tcp`), or as H4 on a pseudo-terminal, as a
  /// controller on a serial port is (`hci-uart`).
  @Test(
    "a long UTF-8 message arrives whole; an action from the watch reaches the phone",
    arguments: ["hci-tcp", "hci-uart"])
  func phoneAndWatchOverTheAir(watchTransport: String) async throws {
    try await withBumblePeer(role: watchTransport == "hci-uart" ? "radio uart" : "radio") { radio in
      let ready = try #require(await radio.line(startingWith: "ready "))
      let ports = ready.split(separator: " ").dropFirst().map(String.init)
      try #require(ports.count == 2)
      let watchController = watchTransport == "hci-uart" ? "hci-uart:\(ports[1])" : "hci-tcp:127.0.0.1:\(ports[1])"
      let directory = NSTemporaryDirectory() + "ancs-air-\(getpid())"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: directory) }
      let phone = try AncsProcess([
        "phone", "--bluetooth", "hci-tcp:127.0.0.1:\(ports[0])", "--bonds", "\(directory)/phone.json",
        "--commands", "jsonl",
      ])
      defer { phone.kill() }
      let watchArguments = [
        "watch", "--bluetooth", watchController, "--bonds", "\(directory)/watch.json", "--headless",
        "--name", "Air watch",
        // 3 KB in 27-byte ACL packets through instrumented builds (make sanitize) can take
        // longer than the watch's default 10 s per command.
        "--command-timeout", scaledSeconds(10),
      ]
      let watch = try AncsProcess(watchArguments)
      defer { watch.kill() }

      // Paired, discovered, subscribed.
      #expect(await watch.line(containing: #""event":"connected""#) != nil, "\(watch.stderr)")
      #expect(await phone.line(containing: #""event":"sessionStarted""#) != nil, "\(phone.stderr)")
      // 3 KB of text with 2-, 3- and 4-byte UTF-8, over ATT_MTU-3 fragments and 27-byte ACL packets.
      let message = String(repeating: "Grüße aus Köln, 京都の旅館 🚄🍜 ", count: 60)
      phone.send(
        #"{"cmd":"post","app":"com.example.chat","title":"Ünïcødé ✓","message":"\#(message)","#
          + #""positiveAction":"Reply","negativeAction":"Dismiss"}"#)
      let added = try #require(await watch.line(containing: #""event":"added""#), "\(watch.stderr)")
      let json = try #require(try JSONSerialization.jsonObject(with: Data(added.utf8)) as? [String: Any])
      #expect(json["message"] as? String == message)
      #expect(json["title"] as? String == "Ünïcødé ✓")
      let uid = try #require(json["uid"] as? Int)
      // The wearer dismisses it: the phone performs the action and the notification goes.
      watch.send("negative \(uid)")
      let action = await phone.line(containing: #""event":"action""#)
      #expect(action?.contains(#""uid":\#(uid)"#) == true, "\(phone.stderr)")
      #expect(await watch.line(containing: #""event":"removed","uid":\#(uid)"#) != nil)
      // Both keep a bond, in files only their owner may read.
      for side in ["phone", "watch"] {
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(directory)/\(side).json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(side)")
      }
      // The watch starts again: it keeps its address in its bond file, so the phone finds its
      // bond and encrypts with it instead of pairing again (which would add a second bond).
      let address = try String(contentsOfFile: "\(directory)/watch.json", encoding: .utf8)
        .firstMatch(of: /"localAddress":"([0-9A-F:]{17})"/)?.1
      #expect(address != nil)
      watch.send("quit")
      #expect(await watch.line(containing: "never printed") == nil)
      let again = try AncsProcess(watchArguments)
      defer { again.kill() }
      #expect(await again.line(containing: #""event":"connected""#) != nil, "\(again.stderr)")
      #expect(await phone.line(containing: #""event":"sessionStarted""#) != nil, "\(phone.stderr)")
      let phoneBonds = try String(contentsOfFile: "\(directory)/phone.json", encoding: .utf8)
      #expect(phoneBonds.components(separatedBy: "\"ltk\"").count == 2, "one bond: \(phoneBonds)")
      #expect(phoneBonds.contains(#""peer":"\#(address ?? "?")""#))
      again.send("quit")
      phone.send(#"{"cmd":"quit"}"#)
    }
  }
}

/// Issue #14 (4): `ancs phone --bluetooth` judges an accessory's connection parameter requests
/// by Apple's Accessory Design Guidelines, refuses those that break a rule, names the rule,
/// and applies those that keep them.
@Suite(
  "ancs phone judges connection parameters over the air",
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "needs the ancs binary: swift build first"),
  .timeLimit(scaledMinutes(1)))
struct ConnectionParameterTests {
  @Test func aRequestOutsideTheRulesIsRefusedWithTheRuleNamed() async throws {
    try await withBumblePeer(role: "parameters-peripheral") { peer in
      let port = try #require(await peer.readyPort())
      let directory = NSTemporaryDirectory() + "ancs-parameters-\(getpid())"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: directory) }
      let phone = try AncsProcess([
        "phone", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", "\(directory)/phone.json",
        "--commands", "jsonl",
      ])
      defer { phone.kill() }
      let refused = try #require(await phone.line(containing: #""event":"connectionParameters""#), "\(phone.stderr)")
      #expect(refused.contains(#""intervalMin":7.5"#) && refused.contains(#""accepted":false"#), "\(refused)")
      #expect(refused.contains("Interval Min 7.5 ms is under 15 ms"), "\(refused)")
      #expect(
        await peer.line(startingWith: "update 7.5 15 ") == "update 7.5 15 rejected ConnectionParameterUpdateError")
      let accepted = try #require(await phone.line(containing: #""event":"connectionParameters""#))
      #expect(accepted.contains(#""intervalMin":30"#) && accepted.contains(#""accepted":true"#), "\(accepted)")
      #expect(await peer.line(startingWith: "update 30 45 ") == "update 30 45 accepted")
      phone.send(#"{"cmd":"quit"}"#)
    }
  }
}

/// Issue #16 (2): `ancs phone` pairs as an iPhone (KeyboardDisplay, MITM asked, SC) with an
/// accessory that shows a passkey or a number and demands MITM: the passkey given with
/// `--passkey` pairs, a wrong one fails at the accessory, `--confirm yes` pairs by Numeric
/// Comparison.
@Suite(
  "ancs phone pairs as an iPhone over the air", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "needs the ancs binary: swift build first"),
  .timeLimit(scaledMinutes(1)))
struct PhonePairingTests {
  @Test(arguments: [
    ("sc passkey", ["--passkey", "123456"], "paired ltk"),
    ("legacy passkey", ["--passkey", "123456"], "paired legacy"),
    ("sc numeric", ["--confirm", "yes"], "paired ltk"), ("sc passkey", ["--passkey", "654321"], "pairing-failed"),
  ])
  func thePhoneTypesThePasskey(mode: String, answer: [String], outcome: String) async throws {
    try await withBumblePeer(role: "mitm-accessory \(mode)") { peer in
      let port = try #require(await peer.readyPort())
      let directory =
        NSTemporaryDirectory() + "ancs-phone-pairing-\(getpid())-\(mode.replacingOccurrences(of: " ", with: "-"))-"
        + answer.joined(separator: "")
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: directory) }
      let phone = try AncsProcess(
        [
          "phone", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", "\(directory)/phone.json", "--commands",
          "jsonl",
        ]
          + answer)
      defer { phone.kill() }
      let shown = await peer.line(startingWith: mode.hasSuffix("numeric") ? "compare" : "passkey")
      #expect(shown?.split(separator: " ").last?.count == 6, "\(peer.transcript) \(phone.stderr)")
      #expect(
        await peer.line(startingWith: outcome.hasPrefix("paired") ? "paired" : outcome)?.hasPrefix(outcome) == true,
        "\(peer.transcript) \(phone.stderr)")
      if outcome.hasPrefix("paired") {
        let bonded = await phone.line(containing: #""event":"bond""#)
        #expect(bonded?.contains("bonded") == true, "\(bonded ?? "") \(phone.stderr)")
      }
      phone.send(#"{"cmd":"quit"}"#)
    }
  }
}

extension PhonePairingTests {
  /// Without answers given ahead the phone asks its user, as an iPhone does, and the user
  /// answers with a command: the passkey the accessory shows, or yes to the number both show.
  @Test(arguments: ["sc passkey", "sc numeric"])
  func thePhoneAsksItsUser(mode: String) async throws {
    try await withBumblePeer(role: "mitm-accessory \(mode)") { peer in
      let port = try #require(await peer.readyPort())
      let directory =
        NSTemporaryDirectory() + "ancs-phone-asks-\(getpid())-\(mode.replacingOccurrences(of: " ", with: "-"))"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: directory) }
      let phone = try AncsProcess([
        "phone", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", "\(directory)/phone.json", "--commands",
        "jsonl",
      ])
      defer { phone.kill() }
      let prompt = try #require(await phone.line(containing: #""change":"pairing""#), "\(phone.stderr)")
      let shown = try #require(await peer.line(startingWith: mode.hasSuffix("numeric") ? "compare" : "passkey"))
      let number = shown.split(separator: " ").last.map(String.init) ?? ""
      if mode.hasSuffix("numeric") {
        // Both show the same number.
        #expect(prompt.contains(#""prompt":"compare""#) && prompt.contains(#""number":"\#(number)""#), "\(prompt)")
        phone.send(#"{"cmd":"confirm","answer":true}"#)
      } else {
        #expect(prompt.contains(#""prompt":"enterPasskey""#), "\(prompt)")
        phone.send(#"{"cmd":"passkey","passkey":"\#(number)"}"#)
      }
      #expect(await peer.line(startingWith: "paired") == "paired ltk", "\(peer.transcript) \(phone.stderr)")
      #expect(await phone.line(containing: #""change":"bonded""#) != nil)
      phone.send(#"{"cmd":"quit"}"#)
    }
  }
}

/// Issue #16 (3): `ancs watch` pairs as an accessory can be built, against a Bumble phone
/// that shows a passkey (DisplayOnly) or a number (DisplayYesNo) and asks for MITM: the watch
/// types the passkey given ahead or on its standard input after its `pairing` event, confirms
/// the number, and with `--security mitm` but no way to show or type refuses Just Works.
@Suite(
  "ancs watch pairs as an accessory with a keyboard or a display", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "needs the ancs binary: swift build first"),
  .timeLimit(scaledMinutes(1)))
struct WatchPairingTests {
  @Test(arguments: [
    ("sc passkey", ["--io", "keyboard-only", "--passkey", "123456"], "paired ltk"),
    ("legacy passkey", ["--io", "keyboard-only", "--passkey", "123456"], "paired legacy"),
    ("sc passkey", ["--io", "keyboard-only"], "paired ltk"),
    ("sc numeric", ["--io", "display-yesno", "--confirm", "yes"], "paired ltk"),
    ("sc numeric", ["--io", "no-input-no-output"], "pairing-failed"),
  ])
  func theWatchPairsWithMITM(mode: String, flags: [String], outcome: String) async throws {
    try await withBumblePeer(role: "mitm-phone \(mode)") { peer in
      let port = try #require(await peer.readyPort())
      let directory =
        NSTemporaryDirectory() + "ancs-watch-pairing-\(getpid())-" + (mode + flags.joined()).filter(\.isLetter)
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: directory) }
      let watch = try AncsProcess(
        [
          "watch", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", "\(directory)/watch.json", "--headless",
          "--security", "mitm",
        ] + flags)
      defer { watch.kill() }
      if !flags.contains("--passkey") && mode.hasSuffix("passkey") {
        // Asked on its standard input, as a wearer would be.
        let prompt = try #require(await watch.line(containing: #""change":"pairing""#), "\(watch.stderr)")
        #expect(prompt.contains(#""prompt":"enterPasskey""#), "\(prompt)")
        watch.send("passkey 123456")
      }
      let result = await peer.line(startingWith: outcome.hasPrefix("paired") ? "paired" : "pairing-failed")
      #expect(result?.hasPrefix(outcome) == true, "\(peer.transcript) \(watch.stderr)")
      if outcome == "pairing-failed" {
        // Authentication Requirements (0x03): the watch demands MITM, and it can neither
        // show nor type.
        #expect(result == "pairing-failed 3", "\(result ?? "")")
      } else {
        // The key was made with MITM protection: the watch's bond says so.
        let bonded = await watch.line(containing: #""change":"bonded""#)
        #expect(bonded?.contains(#""level":"authenticated""#) == true, "\(bonded ?? "") \(watch.stderr)")
      }
      watch.send("quit")
    }
  }

  /// Issue #16 (3), as a person would: the watch face in tmux (80x24, UTF-8) asks for the
  /// passkey a Bumble phone shows, the keys type it, and the two pair; then a watch with a
  /// display shows its passkey in large digits and Bumble, typing it, pairs too.
  @Test(.enabled(if: tmuxPath != nil, "tmux is not installed (make deps installs it)"))
  func theFaceTypesAndShowsPasskeys() async throws {
    for (role, io) in [("mitm-phone sc passkey", "keyboard-only"), ("mitm-phone sc keyboard-display", "display-only")] {
      try await withBumblePeer(role: role) { peer in
        let port = try #require(await peer.readyPort())
        let directory = NSTemporaryDirectory() + "ancs-face-pairing-\(getpid())-\(io)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tmux = try Tmux()
        defer { tmux.kill() }
        try await tmux.start(
          "\(quoted(ancsPath)) watch --bluetooth hci-tcp:127.0.0.1:\(port) --bonds \(quoted(directory + "/watch.json")) "
            + "--io \(io) --security mitm; echo ancs-exit-$?", width: 80, height: 24)
        if io == "keyboard-only" {
          let shown = try #require(await peer.line(startingWith: "passkey "), "\(peer.transcript)")
          #expect(shown == "passkey 123456")
          let asked = try await tmux.waitForScreen("the face to ask for the passkey") {
            $0.contains("Type the passkey the phone shows")
          }
          #expect(asked.contains("_ _ _ _ _ _"), "\(asked)")
          try await tmux.keys("1", "2", "3", "4", "5", "6")
          _ = try await tmux.waitForScreen("the digits typed") { $0.contains("1 2 3 4 5 6") }
          try await tmux.keys("Enter")
        } else {
          let shown = try await tmux.waitForScreen("the face to show its passkey") {
            $0.contains("Type this passkey on the phone")
          }
          #expect(shown.split(separator: "\n").filter { $0.contains("█") }.count >= 5, "\(shown)")
          // Under the large digits, the same in plain text.
          let digits = try #require(
            shown.split(separator: "\n").lazy.compactMap { line -> String? in
              line.split(separator: " ").first { $0.count == 6 && $0.allSatisfy(\.isNumber) }.map(String.init)
            }.first, "\(shown)")
          #expect(await peer.line(startingWith: "enter-passkey") != nil, "\(peer.transcript)")
          peer.send("passkey \(digits)")
        }
        #expect(await peer.line(startingWith: "paired") == "paired ltk", "\(peer.transcript)")
        _ = try await tmux.waitForScreen("the question to leave the face") {
          !$0.contains("Pairing with the phone") && $0.contains("Paired with the phone")
        }
        try await tmux.keys("q")
        let exited = try await tmux.waitForScreen("quit") { $0.contains("ancs-exit-") }
        #expect(exited.contains("ancs-exit-0"), "\(exited)")
      }
    }
  }

  /// Issue #16 (6): each `--io` against a Bumble central built as an iPhone is
  /// (KeyboardDisplay, MITM asked). The watch's passkey is read from its event line and typed
  /// on Bumble (one digit off for the wrong passkey), Bumble's is typed on the watch, numbers
  /// are confirmed; without a display, Just Works.
  @Test(arguments: [
    ("sc", "display-only", "bumble-types"),
    ("legacy", "display-only", "bumble-types"),
    ("sc", "display-only", "bumble-types-wrong"),
    ("sc", "keyboard-only", "watch-types"),
    ("legacy", "keyboard-display", "watch-types"),
    ("sc", "display-yesno", "compare"),
    ("sc", "keyboard-display", "compare"),
    ("sc", "no-input-no-output", "just-works"),
  ])
  func theWatchPairsWithAnIPhoneLikeCentral(mode: String, io: String, how: String) async throws {
    try await withBumblePeer(role: "mitm-phone \(mode) keyboard-display") { peer in
      let port = try #require(await peer.readyPort())
      let directory = NSTemporaryDirectory() + "ancs-watch-kd-\(getpid())-\(mode)-\(io)-\(how)"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: directory) }
      let security = how == "just-works" ? [] : ["--security", "mitm"]
      let watch = try AncsProcess(
        [
          "watch", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", "\(directory)/watch.json", "--headless",
          "--io", io,
        ] + security + (how == "compare" ? ["--confirm", "yes"] : []))
      defer { watch.kill() }
      switch how {
      case "bumble-types", "bumble-types-wrong":
        // The watch shows its passkey (on its face, and as this event line).
        let shown = try #require(await watch.line(containing: #""prompt":"showPasskey""#), "\(watch.stderr)")
        let digits = shown.components(separatedBy: #""number":""#).last?.prefix(6)
        let passkey = try #require(digits.flatMap { Int($0) }, "\(shown)")
        #expect(await peer.line(startingWith: "enter-passkey") != nil, "\(peer.transcript)")
        let typed = how == "bumble-types" ? passkey : (passkey + 1) % 1_000_000
        peer.send("passkey " + String(format: "%06d", typed))
      case "watch-types":
        let shown = try #require(await peer.line(startingWith: "passkey "), "\(peer.transcript)")
        let prompt = try #require(await watch.line(containing: #""change":"pairing""#), "\(watch.stderr)")
        #expect(prompt.contains(#""prompt":"enterPasskey""#), "\(prompt)")
        watch.send(String(shown))
      default: break
      }
      let result = await peer.line(startingWith: how == "bumble-types-wrong" ? "pairing-failed" : "paired")
      if how == "bumble-types-wrong" {
        // The watch, checking Bumble's confirm values against its own passkey, refuses:
        // Confirm Value Failed (0x04).
        #expect(result == "pairing-failed 4", "\(peer.transcript) \(watch.stderr)")
      } else {
        #expect(result == (mode == "sc" ? "paired ltk" : "paired legacy"), "\(peer.transcript) \(watch.stderr)")
        let bonded = await watch.line(containing: #""change":"bonded""#)
        let level = how == "just-works" ? "encrypted" : "authenticated"
        #expect(bonded?.contains(#""level":"\#(level)""#) == true, "\(bonded ?? "") \(watch.stderr)")
      }
      watch.send("quit")
    }
  }
}

/// A running `ancs` process: lines to its stdin, its stdout line by line, its stderr kept.
final class AncsProcess: @unchecked Sendable {
  let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private let errors = Pipe()
  private var lines: AsyncStream<String>.Iterator
  private let stderrText: CollectedText

  init(_ arguments: [String]) throws {
    process.executableURL = URL(fileURLWithPath: ancsPath)
    process.arguments = arguments
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    lines = TestSupport.lines(of: output.fileHandleForReading).makeAsyncIterator()
    stderrText = CollectedText(reading: errors.fileHandleForReading)
    try process.run()
  }

  var stderr: String { stderrText.value }

  func send(_ line: String) {
    input.fileHandleForWriting.write(Data((line + "\n").utf8))
  }

  /// The next line containing `text`; nil when the output ends first.
  func line(containing text: String) async -> String? {
    while let line = await lines.next(isolation: nil) {
      if line.contains(text) { return line }
    }
    return nil
  }

  func kill() {
    if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
  }
}
