/// Columns and rows.
public struct Size: Hashable, Sendable, CustomStringConvertible {
  public var width: Int
  public var height: Int

  public init(width: Int, height: Int) {
    self.width = width
    self.height = height
  }

  public var description: String { "\(width)x\(height)" }
}

/// A colour by meaning; the renderer picks the terminal colour, or none in monochrome.
public enum Tint: Hashable, Sendable {
  case plain
  /// App names, the time.
  case accent
  /// Positive actions, a live link.
  case good
  /// Negative actions, a lost link, important notifications.
  case bad
  /// Toasts, quiet hours.
  case notice
  /// The watch case.
  case bezel
}

/// How a cell is drawn. Everything the face says is readable without colour: colour only
/// repeats what bold, dim and reverse video already show.
public struct Style: Hashable, Sendable {
  public var bold = false
  public var dim = false
  public var reverse = false
  public var underline = false
  public var tint: Tint = .plain

  public init(
    bold: Bool = false, dim: Bool = false, reverse: Bool = false, underline: Bool = false, tint: Tint = .plain
  ) {
    self.bold = bold
    self.dim = dim
    self.reverse = reverse
    self.underline = underline
    self.tint = tint
  }

  public static let plain = Style()
  static let bold = Style(bold: true)
  static let dim = Style(dim: true)
}

/// One terminal cell: a glyph and its style. The column after a wide glyph is a
/// continuation cell with no text of its own.
public struct Cell: Hashable, Sendable {
  public var text: String
  /// 1, 2 (wide), or 0 for the continuation of the wide glyph on the left.
  public var width: Int
  public var style: Style

  public static let blank = Cell(text: " ", width: 1, style: .plain)
  public var isContinuation: Bool { width == 0 }
}

/// What the terminal shows: rows of cells, exactly `size.width` columns each. The screen
/// model of the watch face; the renderer draws it and nothing else.
public struct Screen: Hashable, Sendable {
  public let size: Size
  public internal(set) var rows: [[Cell]]

  public init(size: Size) {
    self.size = Size(width: max(0, size.width), height: max(0, size.height))
    rows = Array(repeating: Array(repeating: .blank, count: self.size.width), count: self.size.height)
  }

  /// The screen as plain text, one line per row, trailing spaces trimmed: the form of the
  /// snapshots in Tests/WatchDisplayTests/Snapshots.
  public var text: String {
    rows.map { row in
      var line = row.filter { !$0.isContinuation }.map(\.text).joined()
      while line.last == " " { line.removeLast() }
      return line
    }.joined(separator: "\n")
  }

  /// The text of one row, continuation cells skipped.
  public func line(_ y: Int) -> String {
    guard rows.indices.contains(y) else { return "" }
    return rows[y].filter { !$0.isContinuation }.map(\.text).joined()
  }
}

/// A rectangle on the screen.
struct Rect: Hashable, Sendable {
  var x: Int
  var y: Int
  var width: Int
  var height: Int

  var maxX: Int { x + width }
  var maxY: Int { y + height }

  func inset(_ dx: Int, _ dy: Int) -> Rect {
    Rect(x: x + dx, y: y + dy, width: max(0, width - 2 * dx), height: max(0, height - 2 * dy))
  }
}

/// Line-drawing characters in Unicode or ASCII.
struct Frame {
  var horizontal: String
  var vertical: String
  var topLeft: String
  var topRight: String
  var bottomLeft: String
  var bottomRight: String
  var teeLeft: String
  var teeRight: String
  var teeUp: String
  var teeDown: String

  static let rounded = Frame(
    horizontal: "─", vertical: "│", topLeft: "╭", topRight: "╮", bottomLeft: "╰", bottomRight: "╯", teeLeft: "├",
    teeRight: "┤", teeUp: "┴", teeDown: "┬")
  static let square = Frame(
    horizontal: "─", vertical: "│", topLeft: "┌", topRight: "┐", bottomLeft: "└", bottomRight: "┘", teeLeft: "├",
    teeRight: "┤", teeUp: "┴", teeDown: "┬")
  static let ascii = Frame(
    horizontal: "-", vertical: "|", topLeft: "+", topRight: "+", bottomLeft: "+", bottomRight: "+", teeLeft: "+",
    teeRight: "+", teeUp: "+", teeDown: "+")
}

/// Draws text and boxes into a `Screen`, clipped to it, measuring everything by display
/// width. Nothing drawn can leave the screen or split a wide character.
struct Canvas {
  private(set) var screen: Screen
  let charset: Charset

  init(size: Size, charset: Charset) {
    screen = Screen(size: size)
    self.charset = charset
  }

  var ellipsis: Glyph { charset == .unicode ? Glyph("…", width: 1) : Glyph(".", width: 1) }

  /// Puts one glyph at (x, y), clearing what a wide glyph it overlaps leaves behind.
  mutating func set(_ glyph: Glyph, x: Int, y: Int, style: Style) {
    guard y >= 0, y < screen.size.height, x >= 0, x < screen.size.width, glyph.width > 0 else { return }
    // A wide glyph that would hang off the right edge is drawn as a space.
    if x + glyph.width > screen.size.width {
      set(.space, x: x, y: y, style: style)
      return
    }
    clearWide(x: x, y: y)
    if glyph.width == 2 { clearWide(x: x + 1, y: y) }
    screen.rows[y][x] = Cell(text: glyph.text, width: glyph.width, style: style)
    if glyph.width == 2 { screen.rows[y][x + 1] = Cell(text: "", width: 0, style: style) }
  }

  /// Before (x, y) is overwritten: the other half of a wide glyph there becomes a space.
  private mutating func clearWide(x: Int, y: Int) {
    let cell = screen.rows[y][x]
    if cell.isContinuation, x > 0 {
      screen.rows[y][x - 1] = Cell(text: " ", width: 1, style: screen.rows[y][x - 1].style)
    } else if cell.width == 2, x + 1 < screen.size.width {
      screen.rows[y][x + 1] = Cell(text: " ", width: 1, style: cell.style)
    }
  }

  /// Draws glyphs from (x, y), at most `limit` columns (cut with an ellipsis); returns the
  /// columns used.
  @discardableResult
  mutating func put(_ glyphs: [Glyph], x: Int, y: Int, style: Style = .plain, limit: Int? = nil) -> Int {
    let room = limit ?? (screen.size.width - x)
    let shown = DisplayText.truncate(glyphs, to: room, ellipsis: ellipsis)
    var column = x
    for glyph in shown {
      set(glyph, x: column, y: y, style: style)
      column += glyph.width
    }
    return column - x
  }

  @discardableResult
  mutating func put(_ text: String, x: Int, y: Int, style: Style = .plain, limit: Int? = nil) -> Int {
    put(glyphs(text), x: x, y: y, style: style, limit: limit)
  }

  /// Draws text centred in a row segment.
  mutating func center(_ text: String, in rect: Rect, y: Int, style: Style = .plain) {
    let shown = DisplayText.truncate(glyphs(text), to: rect.width, ellipsis: ellipsis)
    let x = rect.x + (rect.width - DisplayText.width(shown)) / 2
    put(shown, x: x, y: y, style: style, limit: rect.width)
  }

  /// Draws text ending at the right edge of `rect`; returns its first column.
  @discardableResult
  mutating func putRight(_ text: String, in rect: Rect, y: Int, style: Style = .plain) -> Int {
    let shown = DisplayText.truncate(glyphs(text), to: rect.width, ellipsis: ellipsis)
    let x = rect.maxX - DisplayText.width(shown)
    put(shown, x: x, y: y, style: style, limit: rect.width)
    return x
  }

  func glyphs(_ text: String) -> [Glyph] { DisplayText.glyphs(text, charset: charset) }

  /// Fills a rectangle with spaces of a style.
  mutating func fill(_ rect: Rect, style: Style = .plain) {
    for y in rect.y..<rect.maxY {
      for x in rect.x..<rect.maxX { set(.space, x: x, y: y, style: style) }
    }
  }

  /// Changes the style of the cells in a row segment, keeping their text.
  mutating func restyle(x: Int, y: Int, width: Int, _ change: (inout Style) -> Void) {
    guard y >= 0, y < screen.size.height else { return }
    for column in max(0, x)..<min(screen.size.width, x + width) { change(&screen.rows[y][column].style) }
  }

  /// A box around `rect` (its border on the rect's edge).
  mutating func box(_ rect: Rect, frame: Frame, style: Style) {
    guard rect.width >= 2, rect.height >= 2 else { return }
    hline(x: rect.x + 1, y: rect.y, width: rect.width - 2, frame.horizontal, style: style)
    hline(x: rect.x + 1, y: rect.maxY - 1, width: rect.width - 2, frame.horizontal, style: style)
    for y in rect.y + 1..<rect.maxY - 1 {
      put(frame.vertical, x: rect.x, y: y, style: style)
      put(frame.vertical, x: rect.maxX - 1, y: y, style: style)
    }
    put(frame.topLeft, x: rect.x, y: rect.y, style: style)
    put(frame.topRight, x: rect.maxX - 1, y: rect.y, style: style)
    put(frame.bottomLeft, x: rect.x, y: rect.maxY - 1, style: style)
    put(frame.bottomRight, x: rect.maxX - 1, y: rect.maxY - 1, style: style)
  }

  mutating func hline(x: Int, y: Int, width: Int, _ character: String, style: Style) {
    let glyph = glyphs(character).first ?? .space
    for column in x..<x + max(0, width) { set(glyph, x: column, y: y, style: style) }
  }
}
