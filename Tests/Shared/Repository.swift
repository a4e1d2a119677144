import Foundation

/// The repository's root, found from this source file's path (Tests/Shared), so `swift test`
/// works from any directory.
package let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent()

/// A file of the repository, by its path from the root ("README.md", "Protocol/vectors").
package func repositoryFile(_ path: String) -> URL { repositoryRoot.appendingPathComponent(path) }

/// The text of a file of the repository (UTF-8), by its path from the root.
package func repositoryText(_ path: String) throws -> String {
  try String(contentsOf: repositoryFile(path), encoding: .utf8)
}

/// The `ancs` binary the tests run: $ANCS_BINARY (the sanitizer runs give theirs), else the
/// one built beside the test bundle (`swift build --build-tests`), else .build/debug/ancs.
package let ancsPath: String = {
  if let path = ProcessInfo.processInfo.environment["ANCS_BINARY"] { return path }
  let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("ancs").path
  if FileManager.default.isExecutableFile(atPath: beside) { return beside }
  return repositoryFile(".build/debug/ancs").path
}()

/// Whether `ancsPath` is built: the suites that run it are skipped, saying so, when not.
package let ancsBuilt = FileManager.default.isExecutableFile(atPath: ancsPath)
