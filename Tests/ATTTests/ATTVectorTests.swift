import ATT
import TestSupport
import Testing
import Wire

/// Protocol/vectors/att.vectors, checked both ways: decoding gives the listed fields,
/// encoding them gives back the bytes (or the `encodesAs` bytes); invalid input fails with
/// the listed error kind at the listed offset.
@Suite struct ATTVectorTests {
  @Test func vectors() throws {
    var covered: Set<String> = []
    try VectorFiles.forEach("att") { record, context in
      let bytes = try VectorNotation.bytes(record.columns[0], line: record.line)
      var fields = try VectorFields(record.expectation, line: record.line)
      switch fields.verb {
      case "ok":
        let expected = try Self.pdu(&fields)
        let encodesAs = try fields.optional("encodesAs").map { text throws in
          try VectorNotation.bytes(text, line: record.line)
        }
        try fields.done()
        covered.insert(Self.caseName(expected))
        let decoded = try ATTPDU(decoding: bytes)
        #expect(decoded == expected, "\(context)")
        #expect(Hex.encode(decoded.encoded()) == Hex.encode(encodesAs ?? bytes), "\(context)")
        if let encodesAs {
          #expect(try ATTPDU(decoding: encodesAs) == decoded, "\(context): the normal form decodes the same")
        }
      case "error":
        let kind = try fields.one("kind")
        let offset = Int(try fields.number("offset", as: UInt32.self))
        let field = try fields.optional("field")
        try fields.done()
        do throws(ATTDecodeError) {
          let decoded = try ATTPDU(decoding: bytes)
          Issue.record("\(context): expected error \(kind) at \(offset), got \(decoded)")
        } catch {
          #expect(error.kind == kind, "\(context): \(error)")
          #expect(error.offset == offset, "\(context): \(error)")
          if let field { #expect(error.field == field, "\(context): \(error)") }
          #expect(error.opcode?.rawValue == bytes.first, "\(context): \(error)")
        }
      default: throw VectorNotation.SyntaxError(line: record.line, "unknown verb \(fields.verb ?? "")")
      }
    }
    let all: Set<String> = [
      "errorResponse", "exchangeMTURequest", "exchangeMTUResponse", "findInformationRequest",
      "findInformationResponse", "findByTypeValueRequest", "findByTypeValueResponse", "readByTypeRequest",
      "readByTypeResponse", "readRequest", "readResponse", "readBlobRequest", "readBlobResponse",
      "readByGroupTypeRequest", "readByGroupTypeResponse", "writeRequest", "writeResponse", "writeCommand",
      "prepareWriteRequest", "prepareWriteResponse", "executeWriteRequest", "executeWriteResponse",
      "handleValueNotification", "handleValueIndication", "handleValueConfirmation", "unknown",
    ]
    #expect(covered == all, "every PDU has a valid vector; missing: \(all.subtracting(covered).sorted())")
  }

  static func caseName(_ pdu: ATTPDU) -> String {
    String(String(describing: pdu).prefix { $0 != "(" })
  }

  /// The PDU the fields of an `ok` vector describe (README.md, section att).
  static func pdu(_ fields: inout VectorFields) throws -> ATTPDU {
    let line = fields.line
    func number<T: FixedWidthInteger & UnsignedInteger>(_ text: some StringProtocol) throws -> T {
      try VectorNotation.number(text, line: line)
    }
    func uuid(_ text: some StringProtocol) throws -> BluetoothUUID {
      guard let uuid = BluetoothUUID(String(text)) else {
        throw VectorNotation.SyntaxError(line: line, "bad UUID \(text)")
      }
      return uuid
    }
    func parts(_ key: String, _ count: Int) throws -> [[Substring]] {
      try fields.all(key).map { text throws in
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == count else { throw VectorNotation.SyntaxError(line: line, "\(key)=\(text)") }
        return parts
      }
    }
    func range() throws -> HandleRange { HandleRange(try fields.number("start"), try fields.number("end")) }

    switch try fields.one("pdu") {
    case "errorResponse":
      return .errorResponse(
        .init(
          requestOpcode: ATTOpcode(rawValue: try fields.number("requestOpcode")), handle: try fields.number("handle"),
          errorCode: ATTErrorCode(rawValue: try fields.number("errorCode"))))
    case "exchangeMTURequest": return .exchangeMTURequest(.init(clientRxMTU: try fields.number("clientRxMTU")))
    case "exchangeMTUResponse": return .exchangeMTUResponse(.init(serverRxMTU: try fields.number("serverRxMTU")))
    case "findInformationRequest": return .findInformationRequest(.init(range: try range()))
    case "findInformationResponse":
      return .findInformationResponse(
        .init(entries: try parts("entry", 2).map { .init(handle: try number($0[0]), type: try uuid($0[1])) }))
    case "findByTypeValueRequest":
      let range = try range()
      guard case .bit16(let type) = try uuid(try fields.one("type")) else {
        throw VectorNotation.SyntaxError(line: line, "Find By Type Value takes a 16-bit type")
      }
      return .findByTypeValueRequest(.init(range: range, type: type, value: try fields.bytes("value")))
    case "findByTypeValueResponse":
      return .findByTypeValueResponse(
        .init(ranges: try parts("range", 2).map { HandleRange(try number($0[0]), try number($0[1])) }))
    case "readByTypeRequest":
      return .readByTypeRequest(.init(range: try range(), type: try uuid(try fields.one("type"))))
    case "readByTypeResponse":
      return .readByTypeResponse(
        .init(
          entries: try parts("entry", 2).map {
            HandleValue(handle: try number($0[0]), value: try VectorNotation.bytes($0[1], line: line))
          }))
    case "readRequest": return .readRequest(.init(handle: try fields.number("handle")))
    case "readResponse": return .readResponse(.init(value: try fields.bytes("value")))
    case "readBlobRequest":
      return .readBlobRequest(.init(handle: try fields.number("handle"), offset: try fields.number("offset")))
    case "readBlobResponse": return .readBlobResponse(.init(value: try fields.bytes("value")))
    case "readByGroupTypeRequest":
      return .readByGroupTypeRequest(.init(range: try range(), type: try uuid(try fields.one("type"))))
    case "readByGroupTypeResponse":
      return .readByGroupTypeResponse(
        .init(
          entries: try parts("group", 3).map {
            GroupValue(
              handle: try number($0[0]), endGroupHandle: try number($0[1]),
              value: try VectorNotation.bytes($0[2], line: line))
          }))
    case "writeRequest":
      return .writeRequest(.init(handle: try fields.number("handle"), value: try fields.bytes("value")))
    case "writeResponse": return .writeResponse(.init())
    case "writeCommand":
      return .writeCommand(.init(handle: try fields.number("handle"), value: try fields.bytes("value")))
    case "prepareWriteRequest":
      return .prepareWriteRequest(
        .init(
          handle: try fields.number("handle"), offset: try fields.number("offset"), value: try fields.bytes("value")))
    case "prepareWriteResponse":
      return .prepareWriteResponse(
        .init(
          handle: try fields.number("handle"), offset: try fields.number("offset"), value: try fields.bytes("value")))
    case "executeWriteRequest": return .executeWriteRequest(.init(write: try fields.number("flags") as UInt8 == 1))
    case "executeWriteResponse": return .executeWriteResponse(.init())
    case "handleValueNotification":
      return .handleValueNotification(.init(handle: try fields.number("handle"), value: try fields.bytes("value")))
    case "handleValueIndication":
      return .handleValueIndication(.init(handle: try fields.number("handle"), value: try fields.bytes("value")))
    case "handleValueConfirmation": return .handleValueConfirmation(.init())
    case "unknown":
      return .unknown(
        opcode: ATTOpcode(rawValue: try fields.number("opcode")), parameters: try fields.bytes("parameters"))
    case let other: throw VectorNotation.SyntaxError(line: line, "unknown pdu \(other)")
    }
  }
}
