/// UTF-8 validation without building a String: ASCII eight bytes at a time, then the
/// well-formed byte sequences of Unicode 15 Table 3-7 (no overlongs, no surrogates, nothing
/// above U+10FFFF).
public enum UTF8Validation {
  public static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let count = bytes.count
    var i = 0
    while i < count {
      // Skip ASCII a word at a time.
      while i + 8 <= count {
        let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
        if word & 0x8080_8080_8080_8080 != 0 { break }
        i += 8
      }
      guard i < count else { return true }
      let lead = base[i]
      if lead < 0x80 {
        i += 1
        continue
      }
      @inline(__always) func continuation(_ offset: Int) -> Bool {
        i + offset < count && base[i + offset] & 0xC0 == 0x80
      }
      switch lead {
      case 0xC2...0xDF:
        guard continuation(1) else { return false }
        i += 2
      case 0xE0...0xEF:
        guard continuation(1), continuation(2) else { return false }
        let second = base[i + 1]
        if lead == 0xE0 && second < 0xA0 { return false }  // overlong
        if lead == 0xED && second > 0x9F { return false }  // surrogate
        i += 3
      case 0xF0...0xF4:
        guard continuation(1), continuation(2), continuation(3) else { return false }
        let second = base[i + 1]
        if lead == 0xF0 && second < 0x90 { return false }  // overlong
        if lead == 0xF4 && second > 0x8F { return false }  // above U+10FFFF
        i += 4
      default:
        return false
      }
    }
    return true
  }

  public static func isValid(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBufferPointer { isValid($0) }
  }

  /// How many of `bytes`' first bytes fit in `budget` without splitting a Unicode scalar:
  /// the cut steps back over continuation bytes (10xxxxxx), valid UTF-8 or not.
  public static func prefixLength(_ bytes: [UInt8], fitting budget: Int) -> Int {
    let budget = max(0, budget)
    if bytes.count <= budget { return bytes.count }
    var cut = budget
    while cut > 0 && bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
    return cut
  }
}
