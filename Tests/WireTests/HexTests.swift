import Testing
import Wire

@Suite struct HexTests {
  @Test func encodesLowerCaseWithSeparator() {
    #expect(Hex.encode([0x00, 0x1a, 0xff]) == "00 1a ff")
    #expect(Hex.encode([0x00, 0x1a, 0xff], separator: "") == "001aff")
    #expect(Hex.encode([0xde, 0xad], separator: ":") == "de:ad")
    #expect(Hex.encode([]) == "")
    #expect(Hex.encode([0x7f]) == "7f")
  }

  @Test func decodesWithAndWithoutSeparators() {
    #expect(Hex.decode("00 1a ff") == [0x00, 0x1a, 0xff])
    #expect(Hex.decode("001AFF") == [0x00, 0x1a, 0xff])
    #expect(Hex.decode("de:ad-be\tef") == [0xde, 0xad, 0xbe, 0xef])
    #expect(Hex.decode("  00  ") == [0x00])
    #expect(Hex.decode("") == [])
    #expect(Hex.decode("   ") == [])
  }

  @Test func rejectsBadHex() {
    #expect(Hex.decode("0") == nil)
    #expect(Hex.decode("001") == nil)
    #expect(Hex.decode("0 0") == nil, "a separator may not split a byte")
    #expect(Hex.decode("0g") == nil)
    #expect(Hex.decode("0x00") == nil)
    #expect(Hex.decode("é0") == nil)
  }

  @Test func roundTripsEveryByteValue() {
    let all = (0...255).map(UInt8.init)
    #expect(Hex.decode(Hex.encode(all)) == all)
    #expect(Hex.decode(Hex.encode(all, separator: "")) == all)
    #expect(Hex.decode(Hex.encode(all).uppercased()) == all)
  }
}
