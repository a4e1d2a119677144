import Foundation
import TestSupport
import Testing

/// A running `ancs` process: write lines to its stdin, read its stdout line by line.
final class Command: @unchecked Sendable {
  let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private let errors = Pipe()
  private let outputLines: AsyncStream<String>
  private var iterator: AsyncStream<String>.Iterator
  private let stderrText: CollectedText

  /// Starts `ancs` with `arguments`; `environment` is added to this process's own.
  init(_ arguments: [String], environment: [String: String] = [:]) throws {
    process.executableURL = URL(fileURLWithPath: ancsPath)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    outputLines = lines(of: output.fileHandleForReading)
    iterator = outputLines.makeAsyncIterator()
    stderrText = CollectedText(reading: errors.fileHandleForReading)
    try process.run()
  }

  func send(_ line: String) {
    input.fileHandleForWriting.write(Data((line + "\n").utf8))
  }

  func closeInput() { try? input.fileHandleForWriting.close() }

  /// The next stdout line, or nil at end of output.
  func nextLine() async -> String? { await iterator.next(isolation: nil) }

  /// Reads stdout until a line contains `text`; fails the test (and returns nil) at end.
  @discardableResult
  func line(containing text: String, sourceLocation: SourceLocation = #_sourceLocation) async -> String? {
    var seen: [String] = []
    while let line = await nextLine() {
      if line.contains(text) { return line }
      seen.append(line)
    }
    Issue.record("no line with \(text) in output: \(seen); stderr: \(stderr)", sourceLocation: sourceLocation)
    return nil
  }

  /// Reads stdout until every one of `texts` has been in some line, in any order (events of
  /// two services may come either way round); fails the test at end of output.
  func eachLine(containingAll texts: [String], sourceLocation: SourceLocation = #_sourceLocation) async {
    var missing = texts
    var seen: [String] = []
    while !missing.isEmpty, let line = await nextLine() {
      missing.removeAll { line.contains($0) }
      seen.append(line)
    }
    if !missing.isEmpty {
      Issue.record("no lines with \(missing) in output: \(seen); stderr: \(stderr)", sourceLocation: sourceLocation)
    }
  }

  var stderr: String { stderrText.value }

  /// Everything the process wrote on stderr, once it has exited.
  func wholeStderr() async -> String { await stderrText.whole() }

  /// Stops the process without waiting for it (a `defer` cannot wait).
  func terminate() {
    if process.isRunning { process.terminate() }
  }

  /// Waits for the exit, off the shared threads, and returns the status.
  func exitCode() async throws -> Int32 {
    let process = self.process
    return try await killingOnCancel(process) {
      process.waitUntilExit()
      return process.terminationStatus
    }
  }
}

/// Runs `ancs` to completion with no input; returns (status, stdout, stderr). With
/// `openFiles`, a shell first sets both limits on open files to that number.
func runAncs(
  _ arguments: [String], input: String = "", openFiles: Int? = nil, environment: [String: String] = [:]
) async throws -> (Int32, String, String) {
  let process = Process()
  process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
  if let openFiles {
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "ulimit -n \(openFiles) && exec \"$0\" \"$@\"", ancsPath] + arguments
  } else {
    process.executableURL = URL(fileURLWithPath: ancsPath)
    process.arguments = arguments
  }
  let stdin = Pipe()
  let stdout = Pipe()
  let stderr = Pipe()
  process.standardInput = stdin
  process.standardOutput = stdout
  process.standardError = stderr
  try process.run()
  return try await killingOnCancel(process) {
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
  }
}

func temporaryPath(_ name: String) -> String {
  "/tmp/ancs-cli-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
}
