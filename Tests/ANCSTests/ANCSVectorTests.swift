import ANCS
import Foundation
import TestSupport
import Testing
import Wire

/// Protocol/vectors, checked both ways: decoding gives the listed fields, encoding them gives
/// back the bytes; invalid input fails with the listed error kind at the listed offset.
@Suite struct ANCSVectorTests {
  @Test func directoryHoldsOnlyDescribedFiles() throws {
    let names = try FileManager.default.contentsOfDirectory(atPath: VectorFiles.directory.path).sorted()
    let readme = try VectorFiles.text("README.md")
    for name in names where name != "README.md" {
      #expect(
        name.hasSuffix(".vectors") || ["ios-captures.txt", "sniffer-session.pcap"].contains(name),
        "undescribed file \(name)")
      #expect(readme.contains("`\(name)`"), "README.md does not describe \(name)")
    }
    let decoders = Set(try VectorFiles.records().map(\.record.decoder))
    #expect(decoders == Set(VectorFiles.columns.keys))
  }

  @Test func notificationSource() throws {
    try VectorFiles.forEach("notification-source") { record, context in
      let bytes = try VectorNotation.bytes(record.columns[0], line: record.line)
      var fields = try VectorFields(record.expectation, line: record.line)
      switch fields.verb {
      case "ok":
        let expected = NotificationSourceEvent(
          eventID: EventID(rawValue: try fields.number("eventID")),
          eventFlags: EventFlags(rawValue: try fields.number("eventFlags")),
          categoryID: CategoryID(rawValue: try fields.number("categoryID")),
          categoryCount: try fields.number("categoryCount"), notificationUID: try fields.number("notificationUID"))
        try fields.done()
        let decoded = try NotificationSourceEvent(decoding: bytes)
        #expect(decoded == expected, "\(context)")
        #expect(Hex.encode(decoded.encoded()) == Hex.encode(bytes), "\(context)")
      case "error":
        let expected = try ExpectedError(&fields)
        try fields.done()
        expected.check(context) { () throws(ANCSError) in try NotificationSourceEvent(decoding: bytes) }
      default: throw VectorNotation.SyntaxError(line: record.line, "unknown verb \(fields.verb ?? "")")
      }
    }
  }

  @Test func controlPoint() throws {
    try VectorFiles.forEach("control-point") { record, context in
      let bytes = try VectorNotation.bytes(record.columns[0], line: record.line)
      var fields = try VectorFields(record.expectation, line: record.line)
      switch fields.verb {
      case "ok":
        let expected = try Self.command(&fields)
        try fields.done()
        let decoded = try ControlPointCommand(decoding: bytes)
        #expect(decoded == expected, "\(context)")
        #expect(Hex.encode(decoded.encoded()) == Hex.encode(bytes), "\(context)")
      case "error":
        let expected = try ExpectedError(&fields)
        let code = try fields.optional("code").map { text throws in try VectorNotation.number(text, as: UInt8.self) }
        try fields.done()
        if let error = expected.check(context, { () throws(ANCSError) in try ControlPointCommand(decoding: bytes) }),
          let code
        {
          #expect(error.controlPointErrorCode.rawValue == code, "\(context): \(error)")
        }
      default: throw VectorNotation.SyntaxError(line: record.line, "unknown verb \(fields.verb ?? "")")
      }
    }
  }

  @Test func dataSource() throws {
    try VectorFiles.forEach("data-source") { record, context in
      let bytes = try VectorNotation.bytes(record.columns[0], line: record.line)
      var fields = try VectorFields(record.expectation, line: record.line)
      switch fields.verb {
      case "ok":
        let expected = try Self.response(&fields)
        try fields.done()
        let decoded = try DataSourceResponse(decoding: bytes)
        #expect(decoded == expected, "\(context)")
        #expect(Hex.encode(decoded.encoded()) == Hex.encode(bytes), "\(context)")
      case "error":
        let expected = try ExpectedError(&fields)
        try fields.done()
        expected.check(context) { () throws(ANCSError) in try DataSourceResponse(decoding: bytes) }
      default: throw VectorNotation.SyntaxError(line: record.line, "unknown verb \(fields.verb ?? "")")
      }
    }
  }

  @Test func reassembly() throws {
    try VectorFiles.forEach("reassembly") { record, context in
      let line = record.line
      let expectation = try Self.expectation(request: record.columns[0], line: line)
      let fragments = try record.columns[1].split(separator: "/", omittingEmptySubsequences: false).map {
        text throws in try VectorNotation.bytes(text, line: line)
      }
      let joined = Array(fragments.joined())
      var reassembler = DataSourceReassembler(expecting: expectation, policy: try Self.policy(record.columns[2], line))
      var fields = try VectorFields(record.expectation, line: line)
      switch fields.verb {
      case "ok":
        let expected = try Self.response(&fields)
        try fields.done()
        guard let last = fragments.lastIndex(where: { !$0.isEmpty }) else {
          throw VectorNotation.SyntaxError(line: line, "ok needs a non-empty fragment")
        }
        for (index, fragment) in fragments.enumerated() {
          let response = try reassembler.feed(fragment)
          #expect(response == (index == last ? expected : nil), "\(context): fragment \(index + 1)")
        }
        #expect(Hex.encode(expected.encoded()) == Hex.encode(joined), "\(context)")
      case "finished":
        let expected = try Self.response(&fields)
        try fields.done()
        for (index, fragment) in fragments.enumerated() {
          #expect(try reassembler.feed(fragment) == nil, "\(context): fragment \(index + 1)")
        }
        #expect(try reassembler.finish() == expected, "\(context)")
        #expect(Hex.encode(expected.encoded()) == Hex.encode(joined), "\(context)")
      case "error":
        let expected = try ExpectedError(&fields)
        let at = try fields.one("at")
        try fields.done()
        let failing =
          at == "finish" ? fragments.count + 1 : Int(try VectorNotation.number(at, as: UInt16.self, line: line))
        guard (1...fragments.count + 1).contains(failing) else {
          throw VectorNotation.SyntaxError(line: line, "at=\(at) is not a fragment number or finish")
        }
        for fragment in fragments.prefix(failing - 1) { _ = try reassembler.feed(fragment) }
        if failing <= fragments.count {
          expected.check(context) { () throws(ANCSError) in try reassembler.feed(fragments[failing - 1]) }
        } else {
          expected.check(context) { () throws(ANCSError) in try reassembler.finish() }
        }
      default: throw VectorNotation.SyntaxError(line: line, "unknown verb \(fields.verb ?? "")")
      }
    }
  }

  // MARK: - Building expected values from fields

  static func command(_ fields: inout VectorFields) throws -> ControlPointCommand {
    let line = fields.line
    switch try fields.one("command") {
    case "getNotificationAttributes":
      let uid: UInt32 = try fields.number("notificationUID")
      let attributes = try fields.all("attribute").map { text throws -> AttributeRequest in
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw VectorNotation.SyntaxError(line: line, "attribute=\(text)") }
        let id = NotificationAttributeID(rawValue: try VectorNotation.number(parts[0], line: line))
        let maximum = parts.count == 2 ? try VectorNotation.number(parts[1], as: UInt16.self, line: line) : nil
        return AttributeRequest(id, maxLength: maximum)
      }
      return .getNotificationAttributes(.init(notificationUID: uid, attributes: attributes))
    case "getAppAttributes":
      let app = try fields.one("appIdentifier")
      let attributes = try fields.all("attribute").map { text throws in
        AppAttributeID(rawValue: try VectorNotation.number(text, line: line))
      }
      return .getAppAttributes(.init(appIdentifier: app, attributes: attributes))
    case "performNotificationAction":
      return .performNotificationAction(
        .init(
          notificationUID: try fields.number("notificationUID"),
          actionID: ActionID(rawValue: try fields.number("actionID"))
        ))
    case let other: throw VectorNotation.SyntaxError(line: line, "unknown command \(other)")
    }
  }

  static func response(_ fields: inout VectorFields) throws -> DataSourceResponse {
    let line = fields.line
    let tuples = try fields.all(among: ["tuple", "tupleBytes"]).map { key, value throws -> (UInt8, [UInt8]) in
      guard let colon = value.firstIndex(of: ":") else {
        throw VectorNotation.SyntaxError(line: line, "\(key)=\(value)")
      }
      let id: UInt8 = try VectorNotation.number(value[..<colon], line: line)
      let rest = value[value.index(after: colon)...]
      return (id, key == "tuple" ? Array(rest.utf8) : try VectorNotation.bytes(rest, line: line))
    }
    let missing = try fields.all("missing").map { text throws in try VectorNotation.number(text, as: UInt8.self) }
    switch try fields.one("response") {
    case "notificationAttributes":
      return .notificationAttributes(
        NotificationAttributesResponse(
          notificationUID: try fields.number("notificationUID"),
          attributes: tuples.map { NotificationAttribute(NotificationAttributeID(rawValue: $0.0), $0.1) },
          missing: missing.map(NotificationAttributeID.init(rawValue:))))
    case "appAttributes":
      return .appAttributes(
        AppAttributesResponse(
          appIdentifier: try fields.one("appIdentifier"),
          attributes: tuples.map { AppAttribute(AppAttributeID(rawValue: $0.0), $0.1) },
          missing: missing.map(AppAttributeID.init(rawValue:))))
    case let other: throw VectorNotation.SyntaxError(line: line, "unknown response \(other)")
    }
  }

  static func expectation(request: String, line: Int) throws -> DataSourceReassembler.Expectation {
    if request == "-" { return .anything }
    switch try ControlPointCommand(decoding: try VectorNotation.bytes(request, line: line)) {
    case .getNotificationAttributes(let command): return .notificationAttributes(command)
    case .getAppAttributes(let command): return .appAttributes(command)
    case .performNotificationAction: throw VectorNotation.SyntaxError(line: line, "an action has no response")
    }
  }

  static func policy(_ text: String, _ line: Int) throws -> DataSourceReassembler.Policy {
    var policy = DataSourceReassembler.Policy.strict
    if text == "strict" { return policy }
    var fields = try VectorFields(text, line: line, hasVerb: false)
    func flag(_ key: String) throws -> Bool? {
      switch try fields.optional(key) {
      case nil: return nil
      case "true": return true
      case "false": return false
      case let other?: throw VectorNotation.SyntaxError(line: line, "\(key)=\(other) is not true or false")
      }
    }
    if let size = try fields.optional("maximumSize") {
      policy.maximumSize = Int(try VectorNotation.number(size, as: UInt32.self, line: line))
    }
    if let ids = try fields.optional("optionalAttributes") {
      policy.optionalAttributes = Set(
        try ids.split(separator: ",").map { text throws in try VectorNotation.number(text, as: UInt8.self, line: line) }
      )
    }
    if let capacity = try fields.optional("fragmentCapacity") {
      policy.fragmentCapacity = Int(try VectorNotation.number(capacity, as: UInt16.self, line: line))
    }
    switch try fields.optional("unrequested") {
    case nil: break
    case "keep": policy.unrequested = .keep
    case "reject": policy.unrequested = .reject
    case let other?: throw VectorNotation.SyntaxError(line: line, "unrequested=\(other)")
    }
    policy.acceptPartial = try flag("acceptPartial") ?? policy.acceptPartial
    policy.validateUTF8 = try flag("validateUTF8") ?? policy.validateUTF8
    policy.enforceMaximumLength = try flag("enforceMaximumLength") ?? policy.enforceMaximumLength
    try fields.done()
    return policy
  }
}

extension ANCSError: VectorError {}
