/// The line notation of Protocol/vectors (specified in Protocol/vectors/README.md): one vector
/// per line, columns separated by `|`, the last column a verb followed by `key=value` words.
/// Text only, no file access: callers read the files.
public enum VectorNotation {
  /// One vector line, split into trimmed columns.
  public struct Record: Hashable, Sendable {
    /// 1-based line number in its file.
    public var line: Int
    public var name: String
    public var decoder: String
    /// The columns after the decoder; the last one is the expectation.
    public var columns: [String]

    public var expectation: String { columns.last ?? "" }
  }

  /// Why a vector file or line could not be read.
  public struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public init(line: Int, _ message: String) {
      self.line = line
      self.message = message
    }

    public var description: String { "line \(line): \(message)" }
  }

  /// The vector lines of a file. `columns` gives the number of columns (name and decoder
  /// included) for each decoder the file may use; any other decoder is an error. Only the
  /// last column may contain `|`. Blank lines and lines starting with `#` are skipped.
  public static func records(in text: String, columns: [String: Int]) throws(SyntaxError) -> [Record] {
    var records: [Record] = []
    var names: Set<String> = []
    for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
      let line = index + 1
      let content = trimmed(raw)
      if content.isEmpty || content.hasPrefix("#") { continue }
      let head = content.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false).map(trimmed)
      guard head.count == 3 else { throw SyntaxError(line: line, "expected name | decoder | ...") }
      let (name, decoder) = (head[0], head[1])
      guard let count = columns[decoder], count >= 3 else {
        throw SyntaxError(line: line, "unknown decoder \"\(decoder)\"; known: \(columns.keys.sorted())")
      }
      let rest = head[2].split(separator: "|", maxSplits: count - 3, omittingEmptySubsequences: false).map(trimmed)
      guard rest.count == count - 2 else {
        throw SyntaxError(line: line, "decoder \(decoder) takes \(count) columns, found \(rest.count + 2)")
      }
      guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
        throw SyntaxError(line: line, "bad vector name \"\(name)\"")
      }
      guard names.insert(name).inserted else { throw SyntaxError(line: line, "duplicate vector name \(name)") }
      records.append(Record(line: line, name: name, decoder: decoder, columns: rest))
    }
    return records
  }

  /// Splits text into words by the rules of a POSIX shell, as Python's `shlex.split` does:
  /// whitespace separates words; `"..."` groups, and inside it a backslash escapes only `"`
  /// and `\`; `'...'` groups with no escapes; elsewhere a backslash escapes the next character.
  public static func words(_ text: String, line: Int = 0) throws(SyntaxError) -> [String] {
    var words: [String] = []
    var word = ""
    var inWord = false
    var iterator = text.makeIterator()
    while let character = iterator.next() {
      switch character {
      case " ", "\t", "\r", "\n":
        if inWord { words.append(word) }
        word = ""
        inWord = false
      case "\"":
        inWord = true
        while true {
          guard let next = iterator.next() else { throw SyntaxError(line: line, "unterminated \" in \(text)") }
          if next == "\"" { break }
          if next == "\\" {
            guard let escaped = iterator.next() else { throw SyntaxError(line: line, "unterminated \" in \(text)") }
            if escaped != "\"" && escaped != "\\" { word.append("\\") }
            word.append(escaped)
          } else {
            word.append(next)
          }
        }
      case "'":
        inWord = true
        while true {
          guard let next = iterator.next() else { throw SyntaxError(line: line, "unterminated ' in \(text)") }
          if next == "'" { break }
          word.append(next)
        }
      case "\\":
        inWord = true
        guard let escaped = iterator.next() else { throw SyntaxError(line: line, "trailing \\ in \(text)") }
        word.append(escaped)
      default:
        inWord = true
        word.append(character)
      }
    }
    if inWord { words.append(word) }
    return words
  }

  /// Bytes written as hex digits, optionally with blanks between bytes (Python's
  /// `bytes.fromhex`). An empty or blank text is no bytes.
  public static func bytes(_ text: some StringProtocol, line: Int = 0) throws(SyntaxError) -> [UInt8] {
    guard text.allSatisfy({ $0.isHexDigit || $0 == " " || $0 == "\t" }), let bytes = Hex.decode(text) else {
      throw SyntaxError(line: line, "not hex bytes: \"\(text)\"")
    }
    return bytes
  }

  /// An unsigned number in decimal or with a 0x prefix, which must fit `T`.
  public static func number<T: FixedWidthInteger & UnsignedInteger>(
    _ text: some StringProtocol, as type: T.Type = T.self, line: Int = 0
  ) throws(SyntaxError) -> T {
    let value: T?
    if text.hasPrefix("0x") || text.hasPrefix("0X") {
      value = T(text.dropFirst(2), radix: 16)
    } else {
      value = T(text, radix: 10)
    }
    guard let value else { throw SyntaxError(line: line, "not a \(T.bitWidth)-bit unsigned number: \"\(text)\"") }
    return value
  }

  private static func trimmed(_ text: some StringProtocol) -> String {
    var slice = Substring(text)
    while let first = slice.first, first.isWhitespace { slice.removeFirst() }
    while let last = slice.last, last.isWhitespace { slice.removeLast() }
    return String(slice)
  }
}

/// `key=value` words, as in the expectation column of a vector (after its verb: `ok`,
/// `error`, ...) or its policy column. Take every field a check needs, then call `done()`: a
/// field nobody took is an error, so a misspelt key cannot pass unnoticed.
public struct VectorFields: Sendable {
  /// The first word when the text starts with a verb, else nil.
  public let verb: String?
  public let line: Int
  private var fields: [(key: String, value: String)]

  public init(_ text: String, line: Int = 0, hasVerb: Bool = true) throws(VectorNotation.SyntaxError) {
    var words = try VectorNotation.words(text, line: line)[...]
    if hasVerb {
      guard let verb = words.popFirst() else { throw VectorNotation.SyntaxError(line: line, "empty expectation") }
      self.verb = verb
    } else {
      verb = nil
    }
    self.line = line
    fields = []
    for word in words {
      guard let equals = word.firstIndex(of: "="), equals != word.startIndex else {
        throw VectorNotation.SyntaxError(line: line, "expected key=value, found \"\(word)\"")
      }
      fields.append((String(word[..<equals]), String(word[word.index(after: equals)...])))
    }
  }

  /// Every value of `key`, in order, removed from the fields.
  public mutating func all(_ key: String) -> [String] {
    let values = fields.filter { $0.key == key }.map(\.value)
    fields.removeAll { $0.key == key }
    return values
  }

  /// The fields whose key is one of `keys`, in order, removed from the fields.
  public mutating func all(among keys: Set<String>) -> [(key: String, value: String)] {
    let values = fields.filter { keys.contains($0.key) }
    fields.removeAll { keys.contains($0.key) }
    return values
  }

  /// The value of `key`, if it appears; more than once is an error.
  public mutating func optional(_ key: String) throws(VectorNotation.SyntaxError) -> String? {
    let values = all(key)
    guard values.count <= 1 else { throw VectorNotation.SyntaxError(line: line, "\(key) given \(values.count) times") }
    return values.first
  }

  /// The value of `key`, which must appear exactly once.
  public mutating func one(_ key: String) throws(VectorNotation.SyntaxError) -> String {
    guard let value = try optional(key) else { throw VectorNotation.SyntaxError(line: line, "missing \(key)=") }
    return value
  }

  public mutating func number<T: FixedWidthInteger & UnsignedInteger>(_ key: String, as type: T.Type = T.self)
    throws(VectorNotation.SyntaxError) -> T
  {
    try VectorNotation.number(try one(key), as: T.self, line: line)
  }

  public mutating func bytes(_ key: String) throws(VectorNotation.SyntaxError) -> [UInt8] {
    try VectorNotation.bytes(try one(key), line: line)
  }

  /// Fails if any field was not taken.
  public func done() throws(VectorNotation.SyntaxError) {
    if let field = fields.first {
      throw VectorNotation.SyntaxError(line: line, "unexpected field \(field.key)=\(field.value)")
    }
  }
}
