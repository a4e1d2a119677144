import Foundation
import TestSupport
import Testing

/// Issue #13 (9): a controller is left as it was found. Bumble's virtual controller keeps
/// scanning across HCI Reset, so a phone that quit (or was killed) while scanning made the
/// next host's LE Set Scan Parameters fail with Command Disallowed. The next phone on the same
/// controller must find the watch and run ANCS, both after a quit (the host stops scanning on
/// its way out) and after SIGKILL (the next host stops it on its way in).
@Suite(
  "a controller used again after the phone quits", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "needs the ancs binary: swift build first"),
  .timeLimit(scaledMinutes(2)))
struct ControllerReuseTests {
  @Test(arguments: ["quit", "kill"])
  func theNextPhoneOnTheControllerWorks(ending: String) async throws {
    try await withRadio { controller, watchController, directory in
      // A phone that scans for a device that is not there, until it ends.
      let first = try AncsProcess([
        "phone", "--bluetooth", controller, "--bonds", "\(directory)/first.json", "--commands", "jsonl",
        "--peer", "C0:11:22:33:44:55", "-v",
      ])
      defer { first.kill() }
      let scanning = try await offThread { () -> Bool in
        for _ in 0..<1000 {
          if first.stderr.contains("scanning for device C0:11:22:33:44:55") { return true }
          usleep(10_000)
        }
        return false
      }
      try #require(scanning, "the first phone never scanned: \(first.stderr)")
      if ending == "quit" {
        first.send(#"{"cmd":"quit"}"#)
      } else {
        first.kill()
      }
      first.process.waitUntilExit()
      if ending == "quit" { #expect(first.process.terminationStatus == 0, "\(first.stderr)") }

      let phone = try AncsProcess([
        "phone", "--bluetooth", controller, "--bonds", "\(directory)/phone.json", "--commands", "jsonl",
      ])
      defer { phone.kill() }
      let watch = try AncsProcess([
        "watch", "--bluetooth", watchController, "--bonds", "\(directory)/watch.json", "--headless",
      ])
      defer { watch.kill() }
      #expect(await watch.line(containing: #""event":"connected""#) != nil, "\(watch.stderr)\n\(phone.stderr)")
      #expect(await phone.line(containing: #""event":"sessionStarted""#) != nil, "\(phone.stderr)")
      #expect(!phone.stderr.contains("commandDisallowed"), "\(phone.stderr)")
      watch.send("quit")
      phone.send(#"{"cmd":"quit"}"#)
    }
  }
}
