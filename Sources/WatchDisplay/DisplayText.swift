/// What the terminal can show: Unicode when the locale is UTF-8, plain ASCII otherwise.
public enum Charset: Hashable, Sendable {
  case unicode
  case ascii
}

/// One terminal cell's worth of text: a spacing character with the combining marks drawn on
/// it, and the columns it takes (1, or 2 for wide characters).
public struct Glyph: Hashable, Sendable {
  public var text: String
  public var width: Int

  public init(_ text: String, width: Int) {
    self.text = text
    self.width = width
  }

  public static let space = Glyph(" ", width: 1)
  var isSpace: Bool { text == " " }
}

/// Text measured by its display width, as ncursesw and the terminal measure it (the width
/// table is glibc's wcwidth), and made safe to draw: control characters become spaces,
/// unassigned code points U+FFFD, and emoji sequences that terminals disagree about are cut
/// to their first emoji (a ZWJ family, a skin tone, a variation selector), so a frame drawn
/// around any text stays where the model put it.
public enum DisplayText {
  /// Columns the scalar takes: 0, 1 or 2; -1 when it is not printable (a control character,
  /// a surrogate or an unassigned code point).
  public static func width(of scalar: Unicode.Scalar) -> Int {
    let value = scalar.value
    if value >= 0x20 && value < 0x7F { return 1 }
    if contains(WidthTable.zero, value) { return 0 }
    if contains(WidthTable.wide, value) { return 2 }
    if contains(WidthTable.unprintable, value) { return -1 }
    return 1
  }

  /// Binary search in a flattened list of inclusive ranges.
  private static func contains(_ ranges: [UInt32], _ value: UInt32) -> Bool {
    var low = 0
    var high = ranges.count / 2 - 1
    while low <= high {
      let middle = (low + high) / 2
      if value < ranges[2 * middle] {
        high = middle - 1
      } else if value > ranges[2 * middle + 1] {
        low = middle + 1
      } else {
        return true
      }
    }
    return false
  }

  /// The glyphs of one line of text; line breaks and tabs become spaces.
  public static func glyphs(_ text: String, charset: Charset = .unicode) -> [Glyph] {
    var out: [Glyph] = []
    switch charset {
    case .unicode:
      for character in text { appendUnicode(character, to: &out) }
    case .ascii:
      for scalar in text.unicodeScalars { appendASCII(scalar, to: &out) }
    }
    return out
  }

  /// Display width of a line of text.
  public static func width(_ text: String, charset: Charset = .unicode) -> Int {
    glyphs(text, charset: charset).reduce(0) { $0 + $1.width }
  }

  static func width(_ glyphs: some Sequence<Glyph>) -> Int { glyphs.reduce(0) { $0 + $1.width } }

  private static let zeroWidthJoiner: Unicode.Scalar = "\u{200D}"

  private static func appendUnicode(_ character: Character, to out: inout [Glyph]) {
    let scalars = character.unicodeScalars
    // A flag is a pair of regional indicators, two columns like any emoji.
    if scalars.count == 2, scalars.allSatisfy({ (0x1F1E6...0x1F1FF).contains($0.value) }) {
      out.append(Glyph(String(character), width: 2))
      return
    }
    var current: (text: String, width: Int, marks: Int, emoji: Bool)?
    func flush() {
      if let glyph = current { out.append(Glyph(glyph.text, width: glyph.width)) }
      current = nil
    }
    for scalar in scalars {
      // Terminals draw a ZWJ sequence as one emoji or as all its parts; keep the first.
      if scalar == zeroWidthJoiner, current?.emoji == true { break }
      // Variation selectors make some terminals widen a character ncurses counts as one column.
      if scalar.value == 0xFE0E || scalar.value == 0xFE0F { continue }
      if scalar.properties.isEmojiModifier, current != nil { continue }
      let width = width(of: scalar)
      switch width {
      case 0:
        // ncursesw keeps a few combining characters per cell; a mark with no base is dropped.
        if var glyph = current, glyph.marks < 4 {
          glyph.text.unicodeScalars.append(scalar)
          glyph.marks += 1
          current = glyph
        }
      case 1, 2:
        flush()
        let emoji = scalar.properties.isEmojiPresentation || (scalar.properties.isEmoji && scalar.value > 0xFF)
        current = (String(scalar), width, 0, emoji)
      default:
        flush()
        if scalar.properties.generalCategory == .control || scalar.value < 0x20 || scalar.value == 0x7F {
          out.append(.space)
        } else {
          out.append(Glyph("\u{FFFD}", width: 1))
        }
      }
    }
    flush()
  }

  private static func appendASCII(_ scalar: Unicode.Scalar, to out: inout [Glyph]) {
    if scalar.value >= 0x20 && scalar.value < 0x7F {
      out.append(Glyph(String(scalar), width: 1))
      return
    }
    if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
      out.append(.space)
      return
    }
    if width(of: scalar) == 0 { return }
    for character in transliterate(scalar) { out.append(Glyph(String(character), width: 1)) }
  }

  /// An ASCII stand-in for a non-ASCII character: a Latin letter without its accents,
  /// common punctuation by shape, "?" for the rest.
  static func transliterate(_ scalar: Unicode.Scalar) -> String {
    if let known = asciiPunctuation[scalar.value] { return known }
    if let name = scalar.properties.name {
      for (prefix, upper) in [("LATIN SMALL LETTER ", false), ("LATIN CAPITAL LETTER ", true)]
      where name.hasPrefix(prefix) {
        let letter = name.dropFirst(prefix.count).prefix { $0 != " " }
        if letter.count == 1 { return upper ? String(letter) : letter.lowercased() }
      }
    }
    return "?"
  }

  private static let asciiPunctuation: [UInt32: String] = [
    0xA0: " ", 0xA9: "(c)", 0xAB: "\"", 0xAE: "(R)", 0xB0: "o", 0xB7: ".", 0xBB: "\"", 0xC6: "AE", 0xDF: "ss",
    0xE6: "ae", 0x152: "OE", 0x153: "oe", 0x2010: "-", 0x2011: "-", 0x2012: "-", 0x2013: "-", 0x2014: "-",
    0x2018: "'", 0x2019: "'", 0x201A: ",", 0x201C: "\"", 0x201D: "\"", 0x201E: "\"", 0x2022: "*", 0x2026: "...",
    0x2039: "<", 0x203A: ">", 0x20AC: "EUR", 0x2122: "TM", 0x2190: "<-", 0x2192: "->", 0x3000: " ", 0x300C: "\"",
    0x300D: "\"", 0x3001: ",", 0x3002: ".", 0xFF01: "!", 0xFF0C: ",", 0xFF1F: "?",
  ]

  /// The glyphs cut to `width` columns, ending in an ellipsis when something was cut.
  public static func truncate(_ glyphs: [Glyph], to width: Int, ellipsis: Glyph?) -> [Glyph] {
    guard width > 0 else { return [] }
    if Self.width(glyphs) <= width { return glyphs }
    let mark = ellipsis.map { $0.width <= width ? [$0] : [] } ?? []
    let room = width - Self.width(mark)
    var out: [Glyph] = []
    var used = 0
    for glyph in glyphs {
      if used + glyph.width > room { break }
      out.append(glyph)
      used += glyph.width
    }
    while out.last?.isSpace == true { out.removeLast() }
    return out + mark
  }

  /// Text wrapped to lines of at most `width` columns: at spaces, around wide characters
  /// (CJK has no spaces), and inside a word only when the word alone is too wide. Line
  /// breaks in the text are kept; an empty line stays an empty line.
  public static func wrap(_ text: String, width: Int, charset: Charset = .unicode) -> [[Glyph]] {
    let limit = max(1, width)
    var lines: [[Glyph]] = []
    for paragraph in paragraphs(text) {
      var current: [Glyph] = []
      var used = 0
      // Index in `current` where the line may be broken (the rest moves down).
      var breakAt: Int?
      // The paragraph has been broken once: spaces at the start of a line go.
      var broken = false
      func endLine(_ glyphs: [Glyph]) {
        var line = glyphs
        while line.last?.isSpace == true { line.removeLast() }
        lines.append(line)
        broken = true
      }
      for glyph in glyphs(paragraph, charset: charset) {
        if glyph.isSpace {
          if current.isEmpty && broken { continue }
          if used + 1 > limit {
            endLine(current)
            current = []
            used = 0
            breakAt = nil
          } else {
            current.append(glyph)
            used += 1
            breakAt = current.count
          }
          continue
        }
        if glyph.width == 2 && !current.isEmpty { breakAt = current.count }
        if used + glyph.width > limit {
          if let split = breakAt, split > 0 {
            let rest = Array(current[split...])
            endLine(Array(current[..<split]))
            current = rest
          } else {
            endLine(current)
            current = []
          }
          while current.first?.isSpace == true { current.removeFirst() }
          used = Self.width(current)
          breakAt = nil
        }
        current.append(glyph)
        used += glyph.width
        if glyph.width == 2 { breakAt = current.count }
      }
      if !(current.isEmpty && broken) { endLine(current) }
    }
    return lines
  }

  /// The text split at line breaks (LF, CR LF, CR, and the Unicode line and paragraph separators).
  static func paragraphs(_ text: String) -> [String] {
    var out: [String] = []
    var current = ""
    for character in text {
      switch character {
      case "\n", "\r\n", "\r", "\u{2028}", "\u{2029}":
        out.append(current)
        current = ""
      default:
        current.append(character)
      }
    }
    out.append(current)
    return out
  }
}
