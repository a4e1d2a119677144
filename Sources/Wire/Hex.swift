/// Hex text for byte strings: the notation of Protocol/vectors and of test failure messages.
public enum Hex {
  private static let digits = Array("0123456789abcdef".utf8)

  /// Lower-case hex, bytes separated by one space ("00 1a ff"); empty for no bytes.
  public static func encode(_ bytes: some Sequence<UInt8>, separator: String = " ") -> String {
    var out: [UInt8] = []
    let sep = Array(separator.utf8)
    for (index, byte) in bytes.enumerated() {
      if index > 0 { out.append(contentsOf: sep) }
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Parses hex digits, ignoring spaces, tabs and the separators ':' and '-'.
  /// Returns nil for an odd number of digits or a character that is not hex.
  public static func decode(_ text: some StringProtocol) -> [UInt8]? {
    var out: [UInt8] = []
    var high: UInt8?
    for unit in text.utf8 {
      guard let nibble = digit(unit) else {
        guard high == nil, [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: ":"), UInt8(ascii: "-")].contains(unit)
        else { return nil }
        continue
      }
      if let h = high {
        out.append(h << 4 | nibble)
        high = nil
      } else {
        high = nibble
      }
    }
    return high == nil ? out : nil
  }

  /// Parses exactly `count` hex digits and nothing else (no separators); nil otherwise.
  public static func decode(digits text: some StringProtocol, count: Int) -> [UInt8]? {
    guard text.utf8.count == count, text.utf8.allSatisfy({ digit($0) != nil }) else { return nil }
    return decode(text)
  }

  /// The value of one hex digit (either case); nil for anything else.
  public static func digit(_ unit: UInt8) -> UInt8? {
    switch unit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return unit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return unit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return unit - UInt8(ascii: "A") + 10
    default: return nil
    }
  }
}
