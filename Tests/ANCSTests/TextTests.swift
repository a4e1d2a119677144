import ANCS
import Testing
import Wire

@Suite struct TruncateTests {
  /// 1-, 2-, 3- and 4-byte scalars, emoji with modifiers and joiners (several scalars per
  /// character: a cut between them is allowed, inside one is not).
  static let samples = [
    "plain ascii text", "Grüße aus Köln", "日本語のテキスト", "emoji 👋🏽 and 👨‍👩‍👧 family", "aé€😀b", "😀😀😀",
    "é", "", "Loading…",
  ]

  /// Byte offsets where a scalar starts, plus the end.
  static func boundaries(_ text: String) -> Set<Int> {
    var offsets: Set<Int> = [0]
    var offset = 0
    for scalar in text.unicodeScalars {
      offset += String(scalar).utf8.count
      offsets.insert(offset)
    }
    return offsets
  }

  @Test(arguments: samples) func neverSplitsAScalarAtAnyBudget(_ text: String) {
    let utf8 = Array(text.utf8)
    let boundaries = Self.boundaries(text)
    for budget in 0...utf8.count + 2 {
      let cut = ANCSText.truncate(text, toBytes: budget)
      #expect(cut.count <= budget, "budget \(budget)")
      #expect(utf8.starts(with: cut), "budget \(budget)")
      #expect(String(validatingUTF8Bytes: cut) != nil, "budget \(budget)")
      #expect(cut.count == boundaries.filter { $0 <= budget }.max(), "the longest prefix that fits, budget \(budget)")
    }
  }

  @Test(arguments: samples) func ellipsisVariantFitsAndMarksTheCut(_ text: String) {
    let utf8 = Array(text.utf8)
    let boundaries = Self.boundaries(text)
    for budget in 0...utf8.count + 2 {
      let cut = ANCSText.truncate(text, toBytes: budget, ellipsis: true)
      #expect(cut.count <= budget, "budget \(budget)")
      #expect(String(validatingUTF8Bytes: cut) != nil, "budget \(budget)")
      if utf8.count <= budget {
        #expect(cut == utf8, "fits whole: untouched, budget \(budget)")
      } else if budget >= ANCSText.ellipsis.count {
        #expect(cut.suffix(3).elementsEqual(ANCSText.ellipsis), "budget \(budget)")
        let kept = Array(cut.dropLast(3))
        #expect(utf8.starts(with: kept), "budget \(budget)")
        #expect(kept.count == boundaries.filter { $0 <= budget - 3 }.max(), "budget \(budget)")
      } else {
        #expect(cut == ANCSText.truncate(text, toBytes: budget), "no room for the ellipsis, budget \(budget)")
      }
    }
  }

  @Test func examples() {
    #expect(String(decoding: ANCSText.truncate("Grüße", toBytes: 3), as: UTF8.self) == "Gr")
    #expect(String(decoding: ANCSText.truncate("Grüße", toBytes: 4), as: UTF8.self) == "Grü")
    #expect(String(decoding: ANCSText.truncate("Hello world", toBytes: 8, ellipsis: true), as: UTF8.self) == "Hello…")
    #expect(String(decoding: ANCSText.truncate("Hello", toBytes: 5, ellipsis: true), as: UTF8.self) == "Hello")
    #expect(ANCSText.truncate("😀", toBytes: 3) == [])
    #expect(ANCSText.truncate("abc", toBytes: -1) == [], "a negative budget is 0")
  }

  @Test func invalidUTF8IsNeverCutBeforeAContinuationByte() {
    let bytes: [UInt8] = [0x61, 0x80, 0x80, 0x62, 0xff, 0xc3]
    #expect(ANCSText.truncate(bytes, toBytes: 2) == [])
    #expect(ANCSText.truncate(bytes, toBytes: 3) == [0x61, 0x80, 0x80])
    #expect(ANCSText.truncate(bytes, toBytes: 5) == [0x61, 0x80, 0x80, 0x62, 0xff])
  }
}

@Suite struct ANCSDateTests {
  @Test func parsesAndFormatsBothWays() throws {
    let date = try #require(try ANCSDate.parse("20150615T161837"))
    #expect(date == ANCSDate(year: 2015, month: 6, day: 15, hour: 16, minute: 18, second: 37))
    #expect(date.description == "20150615T161837")
    #expect(ANCSDate(year: 7, month: 1, day: 2).description == "00070102T000000")
    for text in ["00010101T000000", "99991231T235959", "20160229T120000", "20000229T000000", "20151231T235960"] {
      #expect(try ANCSDate.parse(text)?.description == text)
    }
  }

  @Test func emptyMeansNoDate() throws {
    #expect(try ANCSDate.parse("") == nil)
  }

  @Test(arguments: [
    ("2015061T161837", 0), ("201506150T161837", 0), ("20150615 161837", 8), ("20150615t161837", 8),
    ("2015a615T161837", 4), ("20150615T16183x", 14), ("-2015061T161837", 0), ("20150015T161837", 4),
    ("20151315T161837", 4), ("20150600T161837", 6), ("20150631T161837", 6), ("20150229T000000", 6),
    ("19000229T000000", 6), ("20150615T240000", 9), ("20150615T166000", 11), ("20150615T161861", 13),
    ("２０150615T161837", 0), ("2015-06-15T16:18:37", 0),
  ])
  func rejectsInvalidTextWithOffset(_ text: String, _ offset: Int) {
    let error = #expect(throws: ANCSError.self, "\(text)") { try ANCSDate.parse(text) }
    #expect(error?.kind == "invalidValue", "\(text)")
    #expect(error?.offset == offset, "\(text): \(String(describing: error))")
  }

  @Test func secondsSinceEpoch() {
    #expect(ANCSDate(year: 1970, month: 1, day: 1).secondsSinceEpoch == 0)
    #expect(ANCSDate(year: 2000, month: 3, day: 1).secondsSinceEpoch == 951_868_800)
    #expect(
      ANCSDate(year: 2015, month: 6, day: 15, hour: 16, minute: 18, second: 37).secondsSinceEpoch == 1_434_385_117)
    #expect(ANCSDate(year: 1, month: 1, day: 1).secondsSinceEpoch == -62_135_596_800)
    #expect(
      ANCSDate(year: 9999, month: 12, day: 31, hour: 23, minute: 59, second: 59).secondsSinceEpoch == 253_402_300_799)
    #expect(
      ANCSDate(secondsSinceEpoch: -1) == ANCSDate(year: 1969, month: 12, day: 31, hour: 23, minute: 59, second: 59))
  }

  /// Seconds -> date -> seconds, and date -> text -> date, over years 1 to 9999.
  @Test func roundTripsOverAWideRange() throws {
    var random = SplitMix64(seed: 1970)
    let range: ClosedRange<Int64> = -62_135_596_800...253_402_300_799
    var samples = (0..<5_000).map { _ in Int64.random(in: range, using: &random) }
    samples += [range.lowerBound, range.upperBound, 0, -1, 86_399, 86_400, 951_782_400, 951_868_799]
    for seconds in samples {
      let date = ANCSDate(secondsSinceEpoch: seconds)
      #expect(date.secondsSinceEpoch == seconds)
      #expect(try ANCSDate.parse(date.description) == date, "\(seconds)")
    }
  }

  @Test func everyDayOfALeapAndACommonYear() throws {
    for year in [2000, 2015, 2016, 2100] {
      let first = ANCSDate(year: year, month: 1, day: 1).secondsSinceEpoch
      let days = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 366 : 365
      for day in 0..<days {
        let date = ANCSDate(secondsSinceEpoch: first + Int64(day) * 86_400)
        #expect(date.year == year)
        #expect(try ANCSDate.parse(date.description) == date)
      }
      #expect(ANCSDate(secondsSinceEpoch: first + Int64(days) * 86_400) == ANCSDate(year: year + 1, month: 1, day: 1))
    }
  }

  @Test func ordersByTime() {
    let earlier = ANCSDate(year: 2015, month: 6, day: 15, hour: 16, minute: 18, second: 37)
    let later = ANCSDate(year: 2015, month: 6, day: 15, hour: 16, minute: 18, second: 38)
    #expect(earlier < later)
    #expect(ANCSDate(year: 1999, month: 12, day: 31) < ANCSDate(year: 2000, month: 1, day: 1))
  }
}
