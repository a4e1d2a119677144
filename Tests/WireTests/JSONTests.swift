import Testing
import Wire

/// The JSON parser under input that scenario files and jsonl commands can hold.
@Suite struct JSONTests {
  @Test func unicodeEscapes() throws {
    #expect(try JSON(parsing: #""\u00e9\u4eAc""#) == .string("é京"))
    #expect(try JSON(parsing: #""\ud83d\ude84""#) == .string("🚄"))
  }

  /// Found by fuzzing (the Scenario target): a \u escape whose four characters held spaces
  /// or a separator crashed the parser; each is now a syntax error at its place.
  @Test(arguments: [
    #""\u12  ""#, #""\u  12""#, #""\u:12:""#, #""\u-12-""#, #""\u    ""#, #""\u1 2 ""#, #""\u12""#, #""\u""#,
    #""\ud83d\u12  ""#, #""\uzzzz""#,
  ])
  func malformedUnicodeEscapesAreSyntaxErrors(_ text: String) {
    #expect(throws: JSONSyntaxError.self) { try JSON(parsing: text) }
  }
}
