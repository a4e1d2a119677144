import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A program's path when it is on PATH; the tests that need it are skipped otherwise.
public func programPath(_ name: String) -> String? {
  let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
  for directory in path.split(separator: ":") {
    let candidate = "\(directory)/\(name)"
    if access(candidate, X_OK) == 0 { return candidate }
  }
  return nil
}

public let tsharkPath = programPath("tshark")
/// Debian's Chromium, for the HTML report's tests.
public let chromiumPath = programPath("chromium")
public let tsharkAvailable = tsharkPath != nil

/// Runs a program to completion, returning its status and standard output and error.
public func runToCompletion(_ executable: String, _ arguments: [String]) throws -> (
  status: Int32, output: String, error: String
) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  let output = Pipe()
  let error = Pipe()
  process.standardOutput = output
  process.standardError = error
  try process.run()
  let outputData = output.fileHandleForReading.readDataToEndOfFile()
  let errorData = error.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return (
    process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self)
  )
}
