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
      let nibble: UInt8
      switch unit {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = unit - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = unit - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = unit - UInt8(ascii: "A") + 10
      case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: ":"), UInt8(ascii: "-"):
        if high != nil { return nil }
        continue
      default: return nil
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
}
