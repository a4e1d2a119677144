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

  /// Issue #13 (12): text that is not JSON is named, not taken for a misspelt literal.
  @Test(arguments: [("not json", 1, "not"), ("[tru]", 2, "tru"), ("{\"a\": nul}", 7, "nul")])
  func textThatIsNotJSONIsNamed(_ text: String, column: Int, found: String) {
    let error = #expect(throws: JSONSyntaxError.self) { try JSON(parsing: text) }
    #expect(error?.column == column)
    #expect(
      error?.reason.hasPrefix("unexpected text \"\(found)\" (a JSON value is") == true, "\(String(describing: error))")
  }
}
