import Wire

/// Text helpers for ANCS values: byte budgets in UTF-8, and the Date attribute.
public enum ANCSText {
  /// "…" (U+2026), 3 bytes in UTF-8.
  public static let ellipsis: [UInt8] = [0xE2, 0x80, 0xA6]

  /// The longest prefix of `text` that fits in `budget` bytes of UTF-8 without splitting a
  /// Unicode scalar. With `ellipsis`, a text that had to be cut ends in "…" and the whole
  /// result, ellipsis included, still fits the budget (when the budget is under 3 bytes
  /// there is no room for it and the text is only cut).
  public static func truncate(_ text: String, toBytes budget: Int, ellipsis useEllipsis: Bool = false) -> [UInt8] {
    truncate(Array(text.utf8), toBytes: budget, ellipsis: useEllipsis)
  }

  /// The same, on UTF-8 bytes. Bytes that are not valid UTF-8 are cut by the same rule:
  /// never before a continuation byte (10xxxxxx).
  public static func truncate(_ utf8: [UInt8], toBytes budget: Int, ellipsis useEllipsis: Bool = false) -> [UInt8] {
    let budget = max(0, budget)
    if utf8.count <= budget { return utf8 }
    let room = useEllipsis && budget >= ellipsis.count ? budget - ellipsis.count : budget
    var result = Array(utf8[..<UTF8Validation.prefixLength(utf8, fitting: room)])
    if useEllipsis && budget >= ellipsis.count { result += ellipsis }
    return result
  }
}

/// The Date attribute: UTS #35 pattern yyyyMMdd'T'HHmmSS, local time, no time zone
/// (for example 20150615T161837). An empty value means "no date" (incoming calls).
public struct ANCSDate: Hashable, Sendable, Comparable, CustomStringConvertible {
  public var year: Int
  public var month: Int
  public var day: Int
  public var hour: Int
  public var minute: Int
  public var second: Int

  public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
    self.year = year
    self.month = month
    self.day = day
    self.hour = hour
    self.minute = minute
    self.second = second
  }

  /// Parses the 15-character form. Returns nil for the empty string (no date); throws on
  /// anything else that is not a valid date and time.
  public static func parse(_ text: String) throws(ANCSError) -> ANCSDate? {
    if text.isEmpty { return nil }
    let units = Array(text.utf8)
    func fail(_ offset: Int, _ why: String) -> ANCSError {
      ANCSError(field: "Date", offset: offset, reason: .invalidValue(why))
    }
    guard units.count == 15 else { throw fail(0, "expected 15 characters yyyyMMdd'T'HHmmSS, got \(units.count)") }
    guard units[8] == UInt8(ascii: "T") else { throw fail(8, "expected 'T'") }
    func number(_ range: Range<Int>) throws(ANCSError) -> Int {
      var value = 0
      for index in range {
        let digit = Int(units[index]) - Int(UInt8(ascii: "0"))
        guard (0...9).contains(digit) else { throw fail(index, "expected a digit") }
        value = value * 10 + digit
      }
      return value
    }
    let date = ANCSDate(
      year: try number(0..<4), month: try number(4..<6), day: try number(6..<8),
      hour: try number(9..<11), minute: try number(11..<13), second: try number(13..<15))
    guard (1...12).contains(date.month) else { throw fail(4, "month \(date.month) out of range") }
    guard (1...daysIn(month: date.month, year: date.year)).contains(date.day) else {
      throw fail(6, "day \(date.day) out of range")
    }
    guard date.hour < 24 else { throw fail(9, "hour \(date.hour) out of range") }
    guard date.minute < 60 else { throw fail(11, "minute \(date.minute) out of range") }
    // 60 allows a leap second.
    guard date.second <= 60 else { throw fail(13, "second \(date.second) out of range") }
    return date
  }

  /// The 15-character form.
  public var description: String {
    func pad(_ value: Int, _ width: Int) -> String {
      let digits = String(value)
      return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return pad(year, 4) + pad(month, 2) + pad(day, 2) + "T" + pad(hour, 2) + pad(minute, 2) + pad(second, 2)
  }

  public static func < (a: ANCSDate, b: ANCSDate) -> Bool { a.secondsSinceEpoch < b.secondsSinceEpoch }

  /// Seconds since 1970-01-01T00:00:00 of the same (unspecified) local time.
  public var secondsSinceEpoch: Int64 {
    // Days from civil date (proleptic Gregorian), after H. Hinnant's algorithm.
    let y = Int64(month <= 2 ? year - 1 : year)
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let mp = Int64((month + 9) % 12)
    let doy = (153 * mp + 2) / 5 + Int64(day) - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146097 + doe - 719468
    return days * 86400 + Int64(hour * 3600 + minute * 60 + second)
  }

  /// The date and time `seconds` after 1970-01-01T00:00:00.
  public init(secondsSinceEpoch seconds: Int64) {
    let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
    let timeOfDay = Int(seconds - days * 86400)
    let z = days + 719468
    let era = (z >= 0 ? z : z - 146096) / 146097
    let doe = z - era * 146097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = doy - (153 * mp + 2) / 5 + 1
    let m = mp < 10 ? mp + 3 : mp - 9
    let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
    self.init(
      year: Int(y), month: Int(m), day: Int(d), hour: timeOfDay / 3600, minute: timeOfDay / 60 % 60,
      second: timeOfDay % 60)
  }

  static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }
}
