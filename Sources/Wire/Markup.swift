/// Text inside XML, HTML and SVG.
public enum Markup {
  /// Text and quoted-attribute escaping; characters XML 1.0 forbids become U+FFFD, so a
  /// peer's bytes can never break the document they are shown in.
  public static func escape(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
      default:
        let value = scalar.value
        if value < 0x20 || value == 0xFFFE || value == 0xFFFF {
          out += "\u{FFFD}"
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out
  }
}
