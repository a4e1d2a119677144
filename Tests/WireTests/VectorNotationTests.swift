import Testing
import Wire

@Suite struct VectorNotationTests {
  let columns = ["plain": 4, "wide": 6]

  @Test func splitsColumnsAndSkipsCommentsAndBlankLines() throws {
    let text = """
      # a comment
        # an indented comment

      a-1 | plain | 00 1a | ok x=1
      b_2.v | wide | 00 | 01 / / 02 | strict | error kind=truncated offset=0 at=2
      c | plain |  | ok text="a | b"
      """
    let records = try VectorNotation.records(in: text, columns: columns)
    #expect(records.map(\.name) == ["a-1", "b_2.v", "c"])
    #expect(records.map(\.line) == [4, 5, 6])
    #expect(records[0].columns == ["00 1a", "ok x=1"])
    #expect(records[1].columns == ["00", "01 / / 02", "strict", "error kind=truncated offset=0 at=2"])
    #expect(records[2].columns == ["", "ok text=\"a | b\""], "only the last column may hold a bar")
    #expect(records[2].expectation == "ok text=\"a | b\"")
  }

  @Test func acceptsWindowsLineEndings() throws {
    let records = try VectorNotation.records(
      in: "# c\r\na | plain | 00 | ok\r\nb | plain | 01 | ok\r\n", columns: columns)
    #expect(records.map(\.name) == ["a", "b"])
    #expect(records.map(\.line) == [2, 3])
    #expect(records[1].expectation == "ok")
  }

  @Test func rejectsBadLines() {
    for bad in [
      "a | unknown | 00 | ok", "a | plain | 00", "a | wide | 00 | 01 | ok", "a b | plain | 00 | ok",
      " | plain | 00 | ok",
      "no bars at all", "a | plain | 00 | ok\na | plain | 01 | ok",
    ] {
      #expect(throws: VectorNotation.SyntaxError.self, "\(bad)") {
        try VectorNotation.records(in: bad, columns: columns)
      }
    }
  }

  @Test func syntaxErrorsNameTheLine() {
    #expect(throws: VectorNotation.SyntaxError(line: 3, "unknown decoder \"x\"; known: [\"plain\", \"wide\"]")) {
      try VectorNotation.records(in: "# c\n\na | x | 00 | ok", columns: columns)
    }
  }

  /// The same words Python's shlex.split gives.
  @Test func splitsWordsLikeShlex() throws {
    #expect(try VectorNotation.words("ok  a=1\tb=2 ") == ["ok", "a=1", "b=2"])
    #expect(try VectorNotation.words("t=1:\"Hi there\"") == ["t=1:Hi there"])
    #expect(try VectorNotation.words("t=\"say \\\"hi\\\" \\\\o/ \\n\"") == ["t=say \"hi\" \\o/ \\n"])
    #expect(try VectorNotation.words("t='it''s' u=\"what's\"") == ["t=its", "u=what's"])
    #expect(try VectorNotation.words("t=a\\ b") == ["t=a b"])
    #expect(try VectorNotation.words("e=\"\" f=") == ["e=", "f="])
    #expect(try VectorNotation.words("t=\"Grüße 👋\"") == ["t=Grüße 👋"])
    #expect(try VectorNotation.words("") == [])
    for bad in ["t=\"open", "t='open", "t=a\\"] {
      #expect(throws: VectorNotation.SyntaxError.self, "\(bad)") { try VectorNotation.words(bad) }
    }
  }

  @Test func fieldsMustAllBeTaken() throws {
    var fields = try VectorFields("ok a=1 b=0x1f c=x c=y d=00ff e=", line: 7)
    #expect(fields.verb == "ok")
    #expect(try fields.number("a", as: UInt8.self) == 1)
    #expect(try fields.number("b", as: UInt16.self) == 0x1f)
    #expect(fields.all("c") == ["x", "y"])
    #expect(try fields.bytes("d") == [0x00, 0xff])
    #expect(throws: VectorNotation.SyntaxError(line: 7, "unexpected field e=")) { try fields.done() }
    #expect(try fields.optional("e") == "")
    #expect(try fields.optional("zz") == nil)
    try fields.done()
  }

  @Test func fieldErrors() throws {
    var fields = try VectorFields("error k=1 k=2 n=256 h=0g", line: 2)
    #expect(throws: VectorNotation.SyntaxError.self) { try fields.one("k") }
    #expect(throws: VectorNotation.SyntaxError.self) { try fields.number("n", as: UInt8.self) }
    #expect(throws: VectorNotation.SyntaxError.self) { try fields.bytes("h") }
    #expect(throws: VectorNotation.SyntaxError.self) { try fields.one("missing") }
    #expect(throws: VectorNotation.SyntaxError.self) { try VectorFields("ok novalue") }
    #expect(throws: VectorNotation.SyntaxError.self) { try VectorFields("ok =x") }
    #expect(throws: VectorNotation.SyntaxError.self) { try VectorFields("   ") }
    let policy = try VectorFields("a=1 b=2", hasVerb: false)
    #expect(policy.verb == nil)
  }

  @Test func numbersAndBytes() throws {
    #expect(try VectorNotation.number("0xffffffff", as: UInt32.self) == .max)
    #expect(try VectorNotation.number("0XFF", as: UInt8.self) == 255)
    #expect(try VectorNotation.number("65535", as: UInt16.self) == 65535)
    for bad in ["", "-1", "0x", "1.5", "65536", " 1"] {
      #expect(throws: VectorNotation.SyntaxError.self, "\(bad)") { try VectorNotation.number(bad, as: UInt16.self) }
    }
    #expect(try VectorNotation.bytes("00 1a ff") == [0x00, 0x1a, 0xff])
    #expect(try VectorNotation.bytes("  ") == [])
    for bad in ["0", "00:1a", "0 0", "zz"] {
      #expect(throws: VectorNotation.SyntaxError.self, "\(bad)") { try VectorNotation.bytes(bad) }
    }
  }
}
