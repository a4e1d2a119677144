import Foundation
import Testing
import Wire

/// The files of Protocol/vectors, found from this source file's path so `swift test` works
/// from any directory.
package enum VectorFiles {
  /// Every decoder the line files may name, with its column count (README.md).
  package static let columns = [
    "notification-source": 4, "control-point": 4, "data-source": 4, "reassembly": 6, "att": 4,
    "ams-remote-command": 4, "ams-supported-commands": 4, "ams-entity-registration": 4, "ams-entity-update": 4,
    "ams-entity-attribute": 4, "ams-playback-info": 4,
  ]

  package static let directory = repositoryFile("Protocol/vectors")

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

/// A decoder's error as the vector files check it: its kind, offset and field.
package protocol VectorError: Error {
  var kind: String { get }
  var offset: Int { get }
  var field: String { get }
}

/// An `error kind=... offset=... [field=...]` expectation.
package struct ExpectedError {
  package var kind: String
  package var offset: Int
  package var field: String?

  package init(_ fields: inout VectorFields) throws {
    kind = try fields.one("kind")
    offset = Int(try fields.number("offset", as: UInt32.self))
    field = try fields.optional("field")
  }

  /// Runs `body`, which must throw this error; returns the error when it did.
  @discardableResult
  package func check<T, E: VectorError>(_ context: String, _ body: () throws(E) -> T) -> E? {
    do {
      let value = try body()
      Issue.record("\(context): expected error \(kind) at \(offset), got \(value)")
      return nil
    } catch {
      #expect(error.kind == kind, "\(context): \(error)")
      #expect(error.offset == offset, "\(context): \(error)")
      if let field { #expect(error.field == field, "\(context): \(error)") }
      return error
    }
  }
}
