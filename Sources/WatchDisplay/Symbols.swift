import ANCS

/// The small pictures of the face, one column each, in Unicode or ASCII. The Unicode ones
/// are East Asian Width "neutral" where possible, so every terminal draws them one column wide.
struct Symbols {
  var frame: Frame
  var innerFrame: Frame
  var separator: String
  var up: String
  var down: String
  var enter: String
  var connected: String
  var connecting: String
  var disconnected: String
  var quiet: String
  var muted: String
  var unread: String
  var selected: String
  var strap: String
  var crown: String
  var pixel: String
  var ring: [String]
  var spinner: [String]
  var check: String
  var cross: String
  var dash: String
  var dot: String
  var note: String
  var play: String
  var pause: String
  var barFull: String
  var barEmpty: String

  static let unicode = Symbols(
    frame: .rounded, innerFrame: .rounded, separator: "─", up: "▲", down: "▼", enter: "⏎", connected: "●",
    connecting: "◌", disconnected: "✕", quiet: "☾", muted: "⊘", unread: "•", selected: "❯", strap: "░", crown: "▌",
    pixel: "█", ring: ["✆", "(✆)", "((✆))"], spinner: ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"],
    check: "✓", cross: "✕", dash: "—", dot: "·", note: "♪", play: "▶", pause: "❚❚", barFull: "━", barEmpty: "─")

  static let ascii = Symbols(
    frame: .ascii, innerFrame: .ascii, separator: "-", up: "^", down: "v", enter: "Enter", connected: "*",
    connecting: "o", disconnected: "x", quiet: "Q", muted: "(m)", unread: "*", selected: ">", strap: ":", crown: "]",
    pixel: "#", ring: ["C", "(C)", "((C))"], spinner: ["|", "/", "-", "\\"], check: "ok", cross: "x", dash: "-",
    dot: "-", note: "#", play: ">", pause: "||", barFull: "=", barEmpty: "-")

  static func of(_ charset: Charset) -> Symbols { charset == .unicode ? unicode : ascii }

  /// The category's picture: what the face shows before the app's name.
  static func glyph(_ category: CategoryID, _ charset: Charset) -> String {
    let unicode: [UInt8: String] = [
      0: "✦", 1: "✆", 2: "↩", 3: "⚯", 4: "✎", 5: "◷", 6: "✉", 7: "☰", 8: "✚", 9: "$", 10: "⌖", 11: "✪",
    ]
    let ascii: [UInt8: String] = [
      0: "*", 1: "C", 2: "M", 3: "V", 4: "S", 5: "D", 6: "@", 7: "N", 8: "+", 9: "$", 10: "L", 11: "E",
    ]
    return (charset == .unicode ? unicode : ascii)[category.rawValue] ?? "?"
  }

  /// The category's name for people.
  static func name(_ category: CategoryID) -> String {
    let names: [UInt8: String] = [
      0: "Other", 1: "Incoming calls", 2: "Missed calls", 3: "Voicemail", 4: "Social", 5: "Schedule", 6: "Email",
      7: "News", 8: "Health & Fitness", 9: "Business & Finance", 10: "Location", 11: "Entertainment",
    ]
    return names[category.rawValue] ?? "Category \(category.rawValue)"
  }
}

/// Times as a watch says them.
enum Clock {
  /// How long ago: "now" under a minute, then "3m", "2h", "5d".
  static func age(_ elapsed: Duration) -> String {
    let seconds = max(0, elapsed.components.seconds)
    if seconds < 60 { return "now" }
    if seconds < 3600 { return "\(seconds / 60)m" }
    if seconds < 86400 { return "\(seconds / 3600)h" }
    return "\(seconds / 86400)d"
  }

  static let weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
  static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
  static let fullMonths = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
  ]

  /// Monday is 0.
  static func weekday(_ date: ANCSDate) -> Int {
    let days = date.secondsSinceEpoch >= 0 ? date.secondsSinceEpoch / 86400 : (date.secondsSinceEpoch - 86399) / 86400
    // 1970-01-01 was a Thursday.
    return Int(((days + 3) % 7 + 7) % 7)
  }

  static func time(_ date: ANCSDate) -> String { twoDigits(date.hour) + ":" + twoDigits(date.minute) }

  /// "Thursday 31 December".
  static func longDay(_ date: ANCSDate) -> String {
    "\(weekdays[weekday(date)]) \(date.day) \(fullMonths[max(0, min(11, date.month - 1))])"
  }

  /// A notification's Date as the face shows it next to the phone's own time: "18:30" today,
  /// "30 Dec 18:30" another day this year, "30 Dec 2025" another year.
  static func stamp(_ text: String, today: ANCSDate?) -> String? {
    guard let date = (try? ANCSDate.parse(text)) ?? nil else { return nil }
    let month = months[max(0, min(11, date.month - 1))]
    if let today, today.year == date.year, today.month == date.month, today.day == date.day { return time(date) }
    if let today, today.year != date.year { return "\(date.day) \(month) \(date.year)" }
    return "\(date.day) \(month) \(time(date))"
  }
}
