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
/// Standard error goes to a temporary file, so a program that writes much of it never
/// blocks on a full pipe while its output is read.
public func runToCompletion(_ executable: String, _ arguments: [String]) throws -> (
  status: Int32, output: String, error: String
) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  let output = Pipe()
  let errorPath = NSTemporaryDirectory() + "ancs-stderr-\(getpid())-\(UUID().uuidString)"
  guard FileManager.default.createFile(atPath: errorPath, contents: nil),
    let error = FileHandle(forWritingAtPath: errorPath)
  else { throw CocoaError(.fileWriteUnknown) }
  defer { try? FileManager.default.removeItem(atPath: errorPath) }
  process.standardOutput = output
  process.standardError = error
  try process.run()
  try? error.close()
  let outputData = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  let errorData = FileManager.default.contents(atPath: errorPath) ?? Data()
  return (
    process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self)
  )
}
