import AMS
import TestSupport
import Testing
import Wire

/// Protocol/vectors/ams.vectors, checked both ways: decoding gives the listed fields and
/// encoding them gives back the bytes; invalid input fails with the listed error.
@Suite struct AMSVectorTests {
  /// Runs the vectors of `decoder`: `ok` lines through `ok` (which returns the decoded value's
  /// encoding, or nil when the line was checked otherwise), `error` lines through `decode`.
  static func check(
    _ decoder: String, decode: @escaping ([UInt8]) throws(AMSError) -> Any,
    ok: @escaping (_ bytes: [UInt8], _ fields: inout VectorFields, _ context: String) throws -> Void
  ) throws {
    try VectorFiles.forEach(decoder) { record, context in
      let bytes = try VectorNotation.bytes(record.columns[0], line: record.line)
      var fields = try VectorFields(record.expectation, line: record.line)
      switch fields.verb {
      case "ok": try ok(bytes, &fields, context)
      case "error":
        let expected = try ExpectedError(&fields)
        try fields.done()
        expected.check(context) { () throws(AMSError) in try decode(bytes) }
      default: throw VectorNotation.SyntaxError(line: record.line, "unknown verb \(fields.verb ?? "")")
      }
    }
  }

  static func numbers<T: OpenByteID>(_ fields: inout VectorFields, _ key: String, as: T.Type) throws -> [T] {
    try fields.all(key).map { text throws in T(rawValue: try VectorNotation.number(text, as: UInt8.self)) }
  }

  @Test func remoteCommand() throws {
    try Self.check(
      "ams-remote-command", decode: { bytes throws(AMSError) in try RemoteCommand(decoding: bytes) },
      ok: { bytes, fields, context in
        let expected = RemoteCommand(RemoteCommandID(rawValue: try fields.number("command")))
        try fields.done()
        let decoded = try RemoteCommand(decoding: bytes)
        #expect(decoded == expected, "\(context)")
        #expect(decoded.encoded() == bytes, "\(context)")
      })
  }

  @Test func supportedCommands() throws {
    try Self.check(
      "ams-supported-commands", decode: { bytes in SupportedCommands(decoding: bytes) },
      ok: { bytes, fields, context in
        let expected = SupportedCommands(try Self.numbers(&fields, "command", as: RemoteCommandID.self))
        try fields.done()
        let decoded = SupportedCommands(decoding: bytes)
        #expect(decoded == expected, "\(context)")
        #expect(decoded.encoded() == bytes, "\(context)")
      })
  }

  @Test func entityRegistration() throws {
    try Self.check(
      "ams-entity-registration", decode: { bytes throws(AMSError) in try EntityRegistration(decoding: bytes) },
      ok: { bytes, fields, context in
        let entity = EntityID(rawValue: try fields.number("entity"))
        let attributes = try fields.all("attribute").map { text throws in
          try VectorNotation.number(text, as: UInt8.self)
        }
        try fields.done()
        let decoded = try EntityRegistration(decoding: bytes)
        #expect(decoded == EntityRegistration(entity, attributes), "\(context)")
        #expect(decoded.encoded() == bytes, "\(context)")
      })
  }

  @Test func entityUpdate() throws {
    try Self.check(
      "ams-entity-update", decode: { bytes throws(AMSError) in try EntityUpdate(decoding: bytes) },
      ok: { bytes, fields, context in
        let attribute = EntityAttribute(EntityID(rawValue: try fields.number("entity")), try fields.number("attribute"))
        let flags = EntityUpdateFlags(rawValue: try fields.number("flags"))
        let text = try fields.optional("value")
        let hex = try fields.optional("valueHex").map { text throws in try VectorNotation.bytes(text) }
        try fields.done()
        guard let value = text.map({ Array($0.utf8) }) ?? hex, (text == nil) != (hex == nil) else {
          Issue.record("\(context): give exactly one of value and valueHex")
          return
        }
        let decoded = try EntityUpdate(decoding: bytes)
        #expect(decoded == EntityUpdate(attribute, flags: flags, value: value), "\(context)")
        if let text { #expect(decoded.text == text, "\(context)") }
        #expect(decoded.encoded() == bytes, "\(context)")
      })
  }

  @Test func entityAttribute() throws {
    try Self.check(
      "ams-entity-attribute", decode: { bytes throws(AMSError) in try EntityAttributeSelection(decoding: bytes) },
      ok: { bytes, fields, context in
        let attribute = EntityAttribute(EntityID(rawValue: try fields.number("entity")), try fields.number("attribute"))
        try fields.done()
        let decoded = try EntityAttributeSelection(decoding: bytes)
        #expect(decoded == EntityAttributeSelection(attribute), "\(context)")
        #expect(decoded.encoded() == bytes, "\(context)")
      })
  }

  @Test func playbackInfo() throws {
    try Self.check(
      "ams-playback-info",
      decode: { bytes throws(AMSError) in try PlaybackInfo(text: String(decoding: bytes, as: UTF8.self)) },
      ok: { bytes, fields, context in
        let state = PlaybackState(rawValue: try fields.number("state"))
        let rate = try fields.one("rate")
        let elapsed = try fields.one("elapsed")
        let encodesAs = try fields.optional("encodesAs").map { text throws in try VectorNotation.bytes(text) }
        try fields.done()
        let decoded = try PlaybackInfo(text: String(decoding: bytes, as: UTF8.self))
        #expect(decoded.state == state, "\(context)")
        #expect(AMSNumber.text(decoded.rate) == rate, "\(context)")
        #expect(AMSNumber.text(decoded.elapsed) == elapsed, "\(context)")
        #expect(Array(decoded.text.utf8) == (encodesAs ?? bytes), "\(context)")
      })
  }
}

extension AMSError: VectorError {}
