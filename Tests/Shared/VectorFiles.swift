import Foundation
import Testing
import Wire

/// The files of Protocol/vectors, found from this source file's path so `swift test` works
/// from any directory.
package enum VectorFiles {
  /// Every decoder the line files may name, with its column count (README.md).
  package static let columns = [
    "notification-source": 4, "control-point": 4, "data-source": 4, "reassembly": 6, "att": 4,
  ]

  package static let directory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Protocol/vectors")

  package static func text(_ name: String) throws -> String {
    try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
  }

  /// Names of the one-vector-per-line files, sorted.
  package static func lineFiles() throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".vectors") }.sorted()
  }

  /// Every record of every line file, each with its file name. Fails on an empty or
  /// unparseable file.
  package static func records() throws -> [(file: String, record: VectorNotation.Record)] {
    var all: [(file: String, record: VectorNotation.Record)] = []
    for file in try lineFiles() {
      let records = try VectorNotation.records(in: try text(file), columns: columns)
      #expect(!records.isEmpty, "\(file) holds no vectors")
      all += records.map { (file, $0) }
    }
    return all
  }

  /// Runs `check` on every record for `decoder`; a syntax error in one record is recorded
  /// against it and the others still run. Fails when there is no record for `decoder`.
  package static func forEach(
    _ decoder: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ check: (VectorNotation.Record, _ context: String) throws -> Void
  ) throws {
    let records = try records().filter { $0.record.decoder == decoder }
    #expect(!records.isEmpty, "no \(decoder) vectors", sourceLocation: sourceLocation)
    for (file, record) in records {
      let context = "\(file):\(record.line) \(record.name)"
      do {
        try check(record, context)
      } catch {
        Issue.record("\(context): \(error)", sourceLocation: sourceLocation)
      }
    }
  }
}

/// Records the first few issues of a fuzz run only, so a broken decoder reports its first
/// failures instead of thousands.
package struct IssueLimit {
  private var left = 10

  package init() {}

  package mutating func record(_ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
    if left > 0 { Issue.record(comment, sourceLocation: sourceLocation) }
    if left == 0 { Issue.record("further issues not shown", sourceLocation: sourceLocation) }
    left -= 1
  }
}
