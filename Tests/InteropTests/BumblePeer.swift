import Foundation
import TestSupport
import Testing

/// The repository's root, from this file's path.

/// The Python of the Bumble venv that scripts/bumble-venv.sh creates (.build/bumble-venv, once;
/// about 10 s from PyPI). Nil when it cannot be made (no python3-venv, no network): the interop
/// tests are then skipped, never failed.
let bumblePython: String? = {
  let process = Process()
  process.executableURL = repositoryFile("scripts/bumble-venv.sh")
  let output = Pipe()
  process.standardOutput = output
  process.standardError = FileHandle.nullDevice
  do { try process.run() } catch { return nil }
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  guard process.terminationStatus == 0 else { return nil }
  let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
  return FileManager.default.isExecutableFile(atPath: path) ? path : nil
}()

/// Tests/Interop/bumble_peer.py running in its own process: two virtual controllers, one
/// served to the Swift host over TCP, a Bumble device on the other. Its stdout is read line by
/// line, lines go to its stdin (`send`); it is killed when the test ends or is cancelled.
final class BumblePeer: @unchecked Sendable {
  let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private let errors = Pipe()
  private var lines: AsyncStream<String>.Iterator
  private let stderrText: CollectedText
  /// Every stdout line so far, for failure messages.
  private(set) var transcript: [String] = []

  init(role: String, python: String) throws {
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments =
      ["-u", repositoryFile("Tests/Interop/bumble_peer.py").path]
      + role.split(separator: " ").map(String.init)
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    lines = TestSupport.lines(of: output.fileHandleForReading).makeAsyncIterator()
    stderrText = CollectedText(reading: errors.fileHandleForReading)
    try process.run()
  }

  var stderr: String { stderrText.value }

  /// Writes `line` to the peer's standard input (the roles that take commands).
  func send(_ line: String) {
    input.fileHandleForWriting.write(Data((line + "\n").utf8))
  }

  /// Reads lines until one starts with `prefix` and returns it; an "error" line or the end of
  /// the output fails the test and returns nil.
  func line(startingWith prefix: String, sourceLocation: SourceLocation = #_sourceLocation) async -> String? {
    while let line = await lines.next(isolation: nil) {
      transcript.append(line)
      if line.hasPrefix(prefix) { return line }
      if line.hasPrefix("error") { break }
    }
    Issue.record(
      "Bumble peer: no line starting with \(prefix); output \(transcript); stderr: \(stderr.suffix(2000))",
      sourceLocation: sourceLocation)
    return nil
  }

  /// The port of the virtual controller's TCP server, from the "ready PORT" line.
  func readyPort() async -> UInt16? {
    guard let line = await line(startingWith: "ready ") else { return nil }
    return UInt16(line.dropFirst("ready ".count))
  }

  func kill() {
    if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
  }

  /// Waits for the exit (off the shared threads); kills the process if the test is cancelled.
  func exitCode() async throws -> Int32 {
    let process = self.process
    return try await killingOnCancel(process) {
      process.waitUntilExit()
      return process.terminationStatus
    }
  }
}

/// Runs `body` with a Bumble peer in `role`, killing the peer when `body` ends, throws, or is
/// cancelled (the test's time limit).
func withBumblePeer<T: Sendable>(
  role: String, _ body: (BumblePeer) async throws -> T
) async throws -> T {
  let python = try #require(bumblePython)
  let peer = try BumblePeer(role: role, python: python)
  defer { peer.kill() }
  return try await withTaskCancellationHandler {
    try await body(peer)
  } onCancel: {
    peer.kill()
  }
}
