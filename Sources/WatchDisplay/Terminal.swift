import CNcurses

#if canImport(Glibc)
  import Glibc
#endif

/// Why the watch face could not take the terminal.
public struct WatchFaceError: Error, CustomStringConvertible {
  public var description: String
}

/// The ncurses side of the face, and the only code that calls ncurses: it sets the terminal
/// up, draws a `Screen` cell by cell at the columns the model chose, reads keys, and gives
/// the terminal back. Use it from one thread at a time.
final class Terminal: @unchecked Sendable {
  private let screen: OpaquePointer
  private let window: UnsafeMutablePointer<WINDOW>
  let charset: Charset
  private let colors: Bool
  private var last: Screen?
  private var closed = false

  /// Takes the terminal on standard input and output. `color` false (or NO_COLOR) keeps it
  /// monochrome.
  init(color: Bool) throws(WatchFaceError) {
    setlocale(LC_ALL, "")
    let codeset = String(cString: nl_langinfo(nl_item(CODESET)))
    charset = codeset == "UTF-8" ? .unicode : .ascii
    guard isatty(0) == 1 else { throw WatchFaceError(description: "standard input is not a terminal") }
    let type = getenv("TERM").map { String(cString: $0) } ?? ""
    guard !type.isEmpty, let screen = ancs_newterm() else {
      throw WatchFaceError(description: "cannot use the terminal type '\(type)' (TERM)")
    }
    self.screen = screen
    set_term(screen)
    guard let window = ancs_stdscr() else {
      endwin()
      delscreen(screen)
      throw WatchFaceError(description: "ncurses gave no screen")
    }
    self.window = window
    cbreak()
    noecho()
    nonl()
    intrflush(window, false)
    keypad(window, true)
    curs_set(0)
    set_escdelay(25)
    let noColor = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
    colors = color && !noColor && has_colors()
    if colors {
      start_color()
      use_default_colors()
      init_pair(1, Int16(COLOR_CYAN), -1)
      init_pair(2, Int16(COLOR_GREEN), -1)
      init_pair(3, Int16(COLOR_RED), -1)
      init_pair(4, Int16(COLOR_YELLOW), -1)
      init_pair(5, Int16(COLOR_BLUE), -1)
    }
  }

  /// Columns and rows now.
  func size() -> Size {
    var rows: Int32 = 0
    var columns: Int32 = 0
    ancs_getmaxyx(window, &rows, &columns)
    return Size(width: Int(columns), height: Int(rows))
  }

  /// Draws the screen (only what changed reaches the terminal).
  func draw(_ model: Screen) {
    guard !closed, model != last else { return }
    last = model
    let current = size()
    if current != model.size { werase(window) }
    for (y, row) in model.rows.enumerated() where y < current.height {
      var x = 0
      while x < row.count && x < current.width {
        // One run of cells with the same style, drawn from its first column.
        let style = row[x].style
        let start = x
        var text: [wchar_t] = []
        while x < row.count, row[x].style == style {
          let cell = row[x]
          if !cell.isContinuation { text += characters(cell) }
          x += 1
        }
        let (attributes, pair) = attributes(style)
        ancs_attrset(window, attributes, pair)
        text.append(0)
        // The bottom-right cell draws but reports ERR (the cursor cannot move past it).
        _ = mvwaddnwstr(window, Int32(y), Int32(start), text, Int32(text.count - 1))
      }
    }
    ancs_attrset(window, ancs_a_normal(), 0)
    wnoutrefresh(window)
    doupdate()
  }

  /// The cell's characters; where this C library measures them differently from the model,
  /// stand-ins of the model's width, so the columns after it stay right.
  private func characters(_ cell: Cell) -> [wchar_t] {
    let text = cell.text.unicodeScalars.map { wchar_t(bitPattern: $0.value) }
    if charset == .ascii { return text.allSatisfy({ $0 < 0x7F }) ? text : Array(repeating: 0x3F, count: cell.width) }
    let width = text.withUnsafeBufferPointer { wcswidth($0.baseAddress, $0.count) }
    return Int(width) == cell.width ? text : Array(repeating: 0x3F, count: cell.width)
  }

  private func attributes(_ style: Style) -> (attr_t, Int16) {
    var attributes = ancs_a_normal()
    if style.bold { attributes |= ancs_a_bold() }
    if style.dim { attributes |= ancs_a_dim() }
    if style.reverse { attributes |= ancs_a_reverse() }
    if style.underline { attributes |= ancs_a_underline() }
    guard colors else { return (attributes, 0) }
    let pair: Int16
    switch style.tint {
    case .plain: pair = 0
    case .accent: pair = 1
    case .good: pair = 2
    case .bad: pair = 3
    case .notice: pair = 4
    case .bezel: pair = 5
    }
    return (attributes, pair)
  }

  /// The next key, or nil when none came within `milliseconds`.
  func key(within milliseconds: Int32) -> Key? {
    wtimeout(window, milliseconds)
    var character: wint_t = 0
    let result = wget_wch(window, &character)
    if result == KEY_CODE_YES {
      switch Int32(character) {
      case KEY_UP: return .up
      case KEY_DOWN: return .down
      case KEY_LEFT: return .left
      case KEY_RIGHT: return .right
      case KEY_PPAGE: return .pageUp
      case KEY_NPAGE: return .pageDown
      case KEY_HOME: return .home
      case KEY_END: return .end
      case KEY_ENTER: return .enter
      case KEY_BACKSPACE: return .backspace
      case KEY_RESIZE:
        last = nil
        return .resize
      default: return nil
      }
    }
    guard result == OK else { return nil }
    switch character {
    case 27: return .escape
    case 10, 13: return .enter
    case 8, 127: return .backspace
    case 9: return .tab
    default:
      guard let scalar = Unicode.Scalar(UInt32(character)) else { return nil }
      return .character(Character(scalar))
    }
  }

  /// The bell or a flash.
  func alert(_ style: AlertStyle) {
    switch style {
    case .bell: beep()
    case .flash: flash()
    case .off: break
    }
  }

  /// Gives the terminal back as it was. Safe to call twice.
  func close() {
    guard !closed else { return }
    closed = true
    curs_set(1)
    endwin()
    delscreen(screen)
  }
}
