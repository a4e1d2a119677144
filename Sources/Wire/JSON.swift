/// A JSON value, with a parser that reports line and column, and a compact serializer with
/// keys in insertion order. Enough for scenario files, watch events and command lines,
/// without Foundation.
public enum JSON: Hashable, Sendable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSON])
  /// Keys in the order they appeared (duplicates are rejected by the parser).
  case object([(String, JSON)])

  public static func == (a: JSON, b: JSON) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.number(let x), .number(let y)): return x == y
    case (.string(let x), .string(let y)): return x == y
    case (.array(let x), .array(let y)): return x == y
    case (.object(let x), .object(let y)):
      return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    default: return false
    }
  }

  public func hash(into hasher: inout Hasher) {
    switch self {
    case .null: hasher.combine(0)
    case .bool(let value): hasher.combine(value)
    case .number(let value): hasher.combine(value)
    case .string(let value): hasher.combine(value)
    case .array(let values): hasher.combine(values)
    case .object(let pairs):
      for (key, value) in pairs {
        hasher.combine(key)
        hasher.combine(value)
      }
    }
  }

  /// The value of `key` in an object.
  public subscript(key: String) -> JSON? {
    guard case .object(let pairs) = self else { return nil }
    return pairs.first { $0.0 == key }?.1
  }

  public var string: String? {
    if case .string(let value) = self { return value }
    return nil
  }

  public var number: Double? {
    if case .number(let value) = self { return value }
    return nil
  }

  /// A number with no fractional part that fits an Int.
  public var integer: Int? {
    guard case .number(let value) = self, value.rounded() == value, abs(value) < 9e15 else { return nil }
    return Int(value)
  }

  public var bool: Bool? {
    if case .bool(let value) = self { return value }
    return nil
  }

  public var array: [JSON]? {
    if case .array(let values) = self { return values }
    return nil
  }

  public var object: [(String, JSON)]? {
    if case .object(let pairs) = self { return pairs }
    return nil
  }

  /// The kind, for error messages ("a string", "an object").
  public var kind: String {
    switch self {
    case .null: return "null"
    case .bool: return "a boolean"
    case .number: return "a number"
    case .string: return "a string"
    case .array: return "an array"
    case .object: return "an object"
    }
  }
}

// MARK: - Serializing

extension JSON: CustomStringConvertible {
  /// Compact JSON on one line.
  public var description: String {
    var out = ""
    write(to: &out)
    return out
  }

  public func write(to out: inout String) {
    switch self {
    case .null: out += "null"
    case .bool(let value): out += value ? "true" : "false"
    case .number(let value):
      if value.rounded() == value && abs(value) < 1e15 {
        out += String(Int64(value))
      } else if value.isFinite {
        out += "\(value)"
      } else {
        out += "null"
      }
    case .string(let value): JSON.quote(value, into: &out)
    case .array(let values):
      out += "["
      for (index, value) in values.enumerated() {
        if index > 0 { out += "," }
        value.write(to: &out)
      }
      out += "]"
    case .object(let pairs):
      out += "{"
      for (index, (key, value)) in pairs.enumerated() {
        if index > 0 { out += "," }
        JSON.quote(key, into: &out)
        out += ":"
        value.write(to: &out)
      }
      out += "}"
    }
  }

  static func quote(_ text: String, into out: inout String) {
    out += "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    out += "\""
  }
}

// MARK: - Parsing

/// Where and why JSON text could not be parsed.
public struct JSONSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
  public var line: Int
  public var column: Int
  public var reason: String
  public var description: String { "line \(line), column \(column): \(reason)" }
}

extension JSON {
  /// Parses one JSON value; anything but whitespace after it is an error. Nesting deeper
  /// than 64 levels is refused (no input can exhaust the stack).
  public init(parsing text: String) throws(JSONSyntaxError) {
    var parser = JSONParser(Array(text.utf8))
    self = try parser.document()
  }
}

struct JSONParser {
  let bytes: [UInt8]
  var index = 0
  var depth = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  func error(_ reason: String) -> JSONSyntaxError {
    var line = 1
    var column = 1
    for byte in bytes[..<min(index, bytes.count)] {
      if byte == UInt8(ascii: "\n") {
        line += 1
        column = 1
      } else if byte & 0xC0 != 0x80 {
        column += 1
      }
    }
    return JSONSyntaxError(line: line, column: column, reason: reason)
  }

  mutating func skipSpace() {
    while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
  }

  mutating func document() throws(JSONSyntaxError) -> JSON {
    let value = try parseValue()
    skipSpace()
    if index < bytes.count { throw error("unexpected text after the JSON value") }
    return value
  }

  mutating func parseValue() throws(JSONSyntaxError) -> JSON {
    skipSpace()
    guard index < bytes.count else { throw error("unexpected end of input") }
    switch bytes[index] {
    case UInt8(ascii: "{"): return try parseObject()
    case UInt8(ascii: "["): return try parseArray()
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"): return try literal("true", .bool(true))
    case UInt8(ascii: "f"): return try literal("false", .bool(false))
    case UInt8(ascii: "n"): return try literal("null", .null)
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
    default: throw error("unexpected character")
    }
  }

  mutating func literal(_ word: String, _ value: JSON) throws(JSONSyntaxError) -> JSON {
    let expected = Array(word.utf8)
    guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
      // Name what is there: text that merely starts with the word's letter is no JSON at all.
      var end = index
      while end < bytes.count, end - index < 16, bytes[end] >= 0x21, bytes[end] < 0x7F,
        !Array(",:]}[{\"".utf8).contains(bytes[end])
      {
        end += 1
      }
      let found = String(decoding: bytes[index..<max(end, index + 1)], as: UTF8.self)
      throw error(
        "unexpected text \"\(found)\" (a JSON value is an object, array, string, number, true, false or null)")
    }
    index += expected.count
    return value
  }

  mutating func nest() throws(JSONSyntaxError) {
    depth += 1
    if depth > 64 { throw error("nested more than 64 levels deep") }
  }

  mutating func parseObject() throws(JSONSyntaxError) -> JSON {
    try nest()
    index += 1
    var pairs: [(String, JSON)] = []
    skipSpace()
    if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
      index += 1
      depth -= 1
      return .object(pairs)
    }
    while true {
      skipSpace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key in quotes") }
      let keyStart = index
      let key = try parseString()
      if pairs.contains(where: { $0.0 == key }) {
        index = keyStart
        throw error("duplicate key \"\(key)\"")
      }
      skipSpace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
      index += 1
      pairs.append((key, try parseValue()))
      skipSpace()
      guard index < bytes.count else { throw error("unexpected end of input in an object") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
        continue
      }
      guard bytes[index] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
      index += 1
      depth -= 1
      return .object(pairs)
    }
  }

  mutating func parseArray() throws(JSONSyntaxError) -> JSON {
    try nest()
    index += 1
    var values: [JSON] = []
    skipSpace()
    if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
      index += 1
      depth -= 1
      return .array(values)
    }
    while true {
      values.append(try parseValue())
      skipSpace()
      guard index < bytes.count else { throw error("unexpected end of input in an array") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
        continue
      }
      guard bytes[index] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
      index += 1
      depth -= 1
      return .array(values)
    }
  }

  mutating func parseString() throws(JSONSyntaxError) -> String {
    index += 1
    var out: [UInt8] = []
    while true {
      guard index < bytes.count else { throw error("unterminated string") }
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "\""):
        index += 1
        guard let text = String(validatingUTF8Bytes: out) else { throw error("string is not valid UTF-8") }
        return text
      case UInt8(ascii: "\\"):
        index += 1
        guard index < bytes.count else { throw error("unterminated escape") }
        let escape = bytes[index]
        index += 1
        switch escape {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
          var scalar = try hex4()
          if (0xD800...0xDBFF).contains(scalar) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw error("unpaired surrogate") }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
            scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
          }
          guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
          out.append(contentsOf: Array(String(Character(unicode)).utf8))
        default: throw error("invalid escape")
        }
      case 0..<0x20:
        throw error("control character in a string")
      default:
        out.append(byte)
        index += 1
      }
    }
  }

  /// The 4 hex digits of a \u escape, nothing else (not the spaces or colons Hex.decode
  /// allows between bytes: "\u1 2 " once read as one byte and crashed, found by fuzzing).
  mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
    guard bytes.count - index >= 4 else { throw error("expected 4 hex digits") }
    var value: UInt32 = 0
    for byte in bytes[index..<index + 4] {
      guard let digit = Hex.digit(byte) else { throw error("expected 4 hex digits") }
      value = value << 4 | UInt32(digit)
    }
    index += 4
    return value
  }

  mutating func parseNumber() throws(JSONSyntaxError) -> JSON {
    let start = index
    if bytes[index] == UInt8(ascii: "-") { index += 1 }
    func digits() -> Int {
      let from = index
      while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
      return index - from
    }
    guard digits() > 0 else { throw error("expected a digit") }
    if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
      index += 1
      guard digits() > 0 else { throw error("expected a digit after '.'") }
    }
    if index < bytes.count && (bytes[index] | 0x20) == UInt8(ascii: "e") {
      index += 1
      if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
      guard digits() > 0 else { throw error("expected a digit in the exponent") }
    }
    guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else {
      throw error("invalid number")
    }
    return .number(value)
  }
}
