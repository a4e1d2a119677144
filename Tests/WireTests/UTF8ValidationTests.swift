import Testing
import Wire

/// The fast validator must agree with the standard library's on every input.
@Suite struct UTF8ValidationTests {
  static func agrees(_ bytes: [UInt8]) -> Bool {
    UTF8Validation.isValid(bytes) == (String(validatingUTF8Bytes: bytes) != nil)
  }

  @Test func everyOneAndTwoByteSequence() {
    for first in UInt8.min...UInt8.max {
      if !Self.agrees([first]) { Issue.record("\(Hex.encode([first]))") }
      for second in UInt8.min...UInt8.max where !Self.agrees([first, second]) {
        Issue.record("\(Hex.encode([first, second]))")
      }
    }
  }

  /// The edges of Unicode's well-formed table: overlongs, surrogates, above U+10FFFF.
  @Test func boundarySequences() {
    let cases: [([UInt8], Bool)] = [
      ([], true), ([0xe0, 0xa0, 0x80], true), ([0xe0, 0x9f, 0xbf], false), ([0xed, 0x9f, 0xbf], true),
      ([0xed, 0xa0, 0x80], false), ([0xef, 0xbf, 0xbf], true), ([0xf0, 0x90, 0x80, 0x80], true),
      ([0xf0, 0x8f, 0xbf, 0xbf], false), ([0xf4, 0x8f, 0xbf, 0xbf], true), ([0xf4, 0x90, 0x80, 0x80], false),
      ([0xf5, 0x80, 0x80, 0x80], false), ([0xc0, 0x80], false), ([0xc1, 0xbf], false), ([0xe2, 0x80], false),
      (Array("Grüße € 👋".utf8), true),
    ]
    for (bytes, valid) in cases {
      #expect(UTF8Validation.isValid(bytes) == valid, "\(Hex.encode(bytes))")
      #expect(Self.agrees(bytes), "\(Hex.encode(bytes))")
    }
  }

  /// Random and mutated text, at every alignment of the 8-byte ASCII fast path.
  @Test func randomInputAtEveryAlignment() {
    var random = SplitMix64(seed: 0x7178)
    let texts = ["plain ascii text that is long enough", "Grüße aus Köln, 日本語, 👋🏽 and more ascii after it"]
    for _ in 0..<20_000 {
      let prefix = [UInt8](repeating: 0x61, count: Int.random(in: 0..<8, using: &random))
      let body =
        Bool.random(using: &random)
        ? random.mutate(Array(texts.randomElement(using: &random)!.utf8))
        : random.bytes(Int.random(in: 0...24, using: &random))
      let bytes = prefix + body
      if !Self.agrees(bytes) { Issue.record("\(Hex.encode(bytes))") }
    }
  }
}
