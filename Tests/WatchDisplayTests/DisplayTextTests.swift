import CNcurses
import Testing
import Wire

@testable import WatchDisplay

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct DisplayTextTests {
  @Test(
    arguments: [
      ("hello", 5), ("Zoë", 3), ("e\u{301}te\u{301}", 3), ("京都", 4), ("🍜", 2), ("☕️", 2), ("❤️", 1), ("🇫🇷", 2),
      ("👨‍👩‍👧", 2), ("👍🏽", 2), ("ｗｉｄｅ", 8), ("a\tb", 3), ("bell\u{7}", 5), ("", 0), ("\u{200B}x", 1),
      ("\u{E0100}", 0), ("Ａ１", 4), ("한국어", 6),
    ] as [(String, Int)])
  func widths(_ text: String, _ width: Int) {
    #expect(DisplayText.width(text) == width, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
  }

  @Test func unprintableAndUnassignedCharactersAreReplaced() {
    #expect(DisplayText.glyphs("a\u{1}b").map(\.text) == ["a", " ", "b"])
    #expect(DisplayText.glyphs("\u{378}").map(\.text) == ["\u{FFFD}"])
    #expect(DisplayText.glyphs("\u{0301}abc").map(\.text) == ["a", "b", "c"])
  }

  @Test func emojiSequencesKeepTheirFirstEmoji() {
    #expect(DisplayText.glyphs("👨‍👩‍👧 ok").map(\.text) == ["👨", " ", "o", "k"])
    #expect(DisplayText.glyphs("👍🏽").map(\.text) == ["👍"])
    #expect(DisplayText.glyphs("❤️").map(\.text) == ["❤"])
    // A joiner between letters (Indic half forms) stays.
    #expect(DisplayText.glyphs("क्\u{200D}ष").count == 2)
  }

  @Test func asciiFallback() {
    func ascii(_ text: String) -> String { DisplayText.glyphs(text, charset: .ascii).map(\.text).joined() }
    #expect(ascii("Zoë Müller, Ōsaka, crème brûlée") == "Zoe Muller, Osaka, creme brulee")
    #expect(ascii("Straße — «Amélie» … €48") == "Strasse - \"Amelie\" ... EUR48")
    #expect(ascii("京都 🚄") == "?? ?")
    #expect(ascii("e\u{301}") == "e")
  }

  @Test func truncationNeverSplitsAWideCharacter() {
    let glyphs = DisplayText.glyphs("京都の旅館")
    let ellipsis = Glyph("…", width: 1)
    for width in 0...12 {
      let cut = DisplayText.truncate(glyphs, to: width, ellipsis: ellipsis)
      #expect(DisplayText.width(cut) <= width)
      if width < 10 && width > 0 { #expect(cut.last == ellipsis) }
    }
    #expect(DisplayText.truncate(glyphs, to: 4, ellipsis: ellipsis).map(\.text) == ["京", "…"])
  }

  @Test func wrapping() {
    func lines(_ text: String, _ width: Int) -> [String] {
      DisplayText.wrap(text, width: width).map { $0.map(\.text).joined() }
    }
    #expect(lines("The quick brown fox jumps", 10) == ["The quick", "brown fox", "jumps"])
    #expect(lines("one\n\ntwo", 10) == ["one", "", "two"])
    #expect(lines("abcdefghijkl", 5) == ["abcde", "fghij", "kl"])
    #expect(lines("京都の旅館「花屋」", 7) == ["京都の", "旅館「", "花屋」"])
    #expect(lines("see 新大阪 now", 8) == ["see 新大", "阪 now"])
    #expect(lines("trailing   ", 8) == ["trailing"])
    #expect(lines("", 8) == [""])
  }

  /// Any text wraps into lines no wider than asked, and loses nothing but spaces.
  @Test func wrappingRandomText() {
    var random = SplitMix64(seed: 4)
    let alphabet = Array("ab cd e\u{301} 京都 🍜 ｗ\n-")
    for _ in 0..<500 {
      let text = String(
        (0..<Int(random.next() % 60)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
      let width = 2 + Int(random.next() % 15)
      let wrapped = DisplayText.wrap(text, width: width)
      for line in wrapped { #expect(DisplayText.width(line) <= width, "\(text) at \(width)") }
      let kept = wrapped.flatMap { $0 }.filter { !$0.isSpace }.map(\.text).joined()
      let expected = DisplayText.glyphs(String(text.map { $0 == "\n" ? " " : $0 })).filter { !$0.isSpace }
      #expect(kept == expected.map(\.text).joined(), "\(text) at \(width)")
    }
  }

  /// The width table is glibc's wcwidth, so the model measures as ncursesw draws.
  @Test(.enabled(if: utf8Locale != nil, "no C.UTF-8 locale on this machine"))
  func widthTableMatchesTheCLibrary() throws {
    let locale = try #require(utf8Locale)
    let previous = uselocale(locale)
    defer { uselocale(previous) }
    var mismatches: [String] = []
    for value in UInt32(0)...0x10FFFF {
      guard let scalar = Unicode.Scalar(value) else { continue }
      let system = Int(wcwidth(wchar_t(bitPattern: value)))
      if DisplayText.width(of: scalar) != system {
        mismatches.append(String(value, radix: 16))
        if mismatches.count > 10 { break }
      }
    }
    #expect(mismatches.isEmpty, "differs at U+\(mismatches.joined(separator: ", U+"))")
  }
}

/// A C.UTF-8 locale object (for uselocale, which changes only the calling thread), if any.
nonisolated(unsafe) let utf8Locale: locale_t? = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil)
