import ANCS

/// A setting that could not be read: one line that says what and where.
public struct SettingsError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// A do-not-disturb window in the phone's local time, e.g. 22:00-07:00 (it may span midnight).
public struct QuietHours: Hashable, Sendable, CustomStringConvertible {
  /// Minutes after midnight; the window is [start, end).
  public var start: Int
  public var end: Int

  public init(start: Int, end: Int) {
    self.start = start
    self.end = end
  }

  /// Parses `HH:MM-HH:MM`.
  public init(parsing text: String) throws(SettingsError) {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    func minutes(_ part: Substring) -> Int? {
      let fields = part.trimmingSpaces.split(separator: ":", omittingEmptySubsequences: false)
      guard fields.count == 2, fields.allSatisfy({ (1...2).contains($0.count) }),
        let hour = Int(fields[0]), let minute = Int(fields[1]), (0..<24).contains(hour), (0..<60).contains(minute)
      else { return nil }
      return hour * 60 + minute
    }
    guard parts.count == 2, let start = minutes(parts[0]), let end = minutes(parts[1]) else {
      throw SettingsError("quiet hours take HH:MM-HH:MM in the phone's time, e.g. 22:00-07:00, not '\(text)'")
    }
    guard start != end else { throw SettingsError("quiet hours '\(text)' start and end at the same time") }
    self.init(start: start, end: end)
  }

  /// Whether a time of day (minutes after midnight) falls in the window.
  public func contains(minuteOfDay minute: Int) -> Bool {
    start < end ? (start..<end).contains(minute) : minute >= start || minute < end
  }

  public var description: String {
    func clock(_ minutes: Int) -> String { twoDigits(minutes / 60) + ":" + twoDigits(minutes % 60) }
    return clock(start) + "-" + clock(end)
  }
}

/// How an Important notification gets attention.
public enum AlertStyle: String, Hashable, Sendable, CaseIterable {
  /// The terminal bell.
  case bell
  /// A visible flash of the screen.
  case flash
  case off
}

/// What a wearer sets: muted categories, quiet hours, colour and the alert.
public struct FaceSettings: Hashable, Sendable {
  /// Listed, but never toasted or rung.
  public var muted: Set<CategoryID> = []
  /// While the phone's clock is in this window nothing toasts or rings.
  public var quietHours: QuietHours?
  /// Colour when the terminal has it (NO_COLOR and --no-color turn it off).
  public var color = true
  public var alert: AlertStyle = .bell
  /// How long a message (a new notification, a confirmation, an error) stays on the face.
  public var messageTime: Duration = .seconds(3)
  /// The range `message-seconds` takes.
  public static let messageSeconds = 1...600

  public init() {}

  /// A category by its ANCS name (`social`, `email`, ...), as scenario files spell them.
  public static func category(named name: String) throws(SettingsError) -> CategoryID {
    guard let category = CategoryID(name: name) else {
      let valid = CategoryID.names.sorted { $0.key < $1.key }.map(\.value).joined(separator: ", ")
      throw SettingsError("unknown category '\(name)'; valid: \(valid)")
    }
    return category
  }

  /// The keys a configuration file may set.
  public static let configKeys = ["mute", "quiet-hours", "color", "alert", "message-seconds"]

  /// Reads a configuration file: `key = value` lines, `#` comments, blank lines.
  ///
  ///     mute = social, news        # categories, comma-separated (repeatable)
  ///     quiet-hours = 22:00-07:00  # do not disturb, in the phone's time
  ///     color = off                # on (default) or off
  ///     alert = flash              # bell (default), flash or off
  ///     message-seconds = 5        # how long a message stays (1-600, default 3)
  public mutating func apply(config text: String, file: String) throws(SettingsError) {
    for (index, rawLine) in DisplayText.paragraphs(text).enumerated() {
      let line = rawLine.prefix { $0 != "#" }.trimmingSpaces
      if line.isEmpty { continue }
      func fail(_ reason: String) -> SettingsError { SettingsError("\(file): line \(index + 1): \(reason)") }
      guard let equals = line.firstIndex(of: "=") else { throw fail("expected key = value, e.g. mute = social") }
      let key = line[..<equals].trimmingSpaces
      let value = line[line.index(after: equals)...].trimmingSpaces
      do throws(SettingsError) {
        switch key {
        case "mute":
          for name in value.split(separator: ",") { muted.insert(try Self.category(named: name.trimmingSpaces)) }
        case "quiet-hours":
          quietHours = value == "off" ? nil : try QuietHours(parsing: value)
        case "color", "colour":
          switch value {
          case "on", "yes", "true", "auto": color = true
          case "off", "no", "false", "never": color = false
          default: throw SettingsError("color takes on or off, not '\(value)'")
          }
        case "alert":
          guard let style = AlertStyle(rawValue: value) else {
            throw SettingsError("alert takes bell, flash or off, not '\(value)'")
          }
          alert = style
        case "message-seconds":
          guard let seconds = Int(value), Self.messageSeconds.contains(seconds) else {
            throw SettingsError(
              "message-seconds takes a whole number of seconds from \(Self.messageSeconds.lowerBound) to "
                + "\(Self.messageSeconds.upperBound), not '\(value)'")
          }
          messageTime = .seconds(seconds)
        default:
          throw SettingsError("unknown setting '\(key)'; known: \(Self.configKeys.joined(separator: ", "))")
        }
      } catch {
        throw fail(error.description)
      }
    }
  }
}

extension StringProtocol {
  /// The text without leading and trailing spaces and tabs.
  var trimmingSpaces: String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
      return ""
    }
    return String(self[first...last])
  }
}

func twoDigits(_ value: Int) -> String { value < 10 && value >= 0 ? "0\(value)" : "\(value)" }
