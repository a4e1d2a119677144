import ANCS
import Testing
import Wire

/// Protocol/vectors/ios-captures.txt: Data Source traffic recorded from real iPhones, read
/// from its notation.
public enum IOSCaptures {
  public struct Capture: Sendable {
    public var name: String
    public var line: Int
    public var request: [UInt8]?
    public var fragments: [[UInt8]] = []
    /// The first `expect:` line (`cmd=0 uid=N` or `cmd=1 app="..."`), then one per tuple.
    public var expect: [String] = []
  }

  /// What the notes of the captures say was requested, where it was not the default 65535:
  /// attribute ID to maximum length.
  public static let requestedMaximums: [String: [UInt8: UInt16]] = ["sms-two-fragments": [3: 200]]

  public static func all() throws -> [Capture] {
    var captures: [Capture] = []
    let text = try VectorFiles.text("ios-captures.txt")
    for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
      let line = index + 1
      if raw.hasPrefix("#") || raw.allSatisfy(\.isWhitespace) { continue }
      guard let colon = raw.firstIndex(of: ":") else {
        throw VectorNotation.SyntaxError(line: line, "expected key: value")
      }
      let key = raw[..<colon]
      let value = String(raw[raw.index(after: colon)...])
      if key == "name" {
        captures.append(Capture(name: value.trimmingBlanks, line: line))
        continue
      }
      guard !captures.isEmpty else { throw VectorNotation.SyntaxError(line: line, "\(key): before any name:") }
      switch key {
      case "request": captures[captures.count - 1].request = try VectorNotation.bytes(value, line: line)
      case "fragment": captures[captures.count - 1].fragments.append(try VectorNotation.bytes(value, line: line))
      case "expect": captures[captures.count - 1].expect.append(value)
      case "note": break
      default: throw VectorNotation.SyntaxError(line: line, "unknown key \(key)")
      }
    }
    return captures
  }

  /// The expected response, and the request it answers: the capture's own, or one rebuilt
  /// from the expected tuples.
  public static func expected(_ capture: Capture) throws -> (request: ControlPointCommand, response: DataSourceResponse)
  {
    guard let headerLine = capture.expect.first else {
      throw VectorNotation.SyntaxError(line: capture.line, "\(capture.name) has no expect: lines")
    }
    var header = try VectorFields(headerLine, line: capture.line, hasVerb: false)
    var tuples: [(id: UInt8, value: [UInt8])] = []
    for line in capture.expect.dropFirst() {
      let words = try VectorNotation.words(line, line: capture.line)
      guard words.count == 1, let equals = words[0].firstIndex(of: "=") else {
        throw VectorNotation.SyntaxError(line: capture.line, "expected ID=\"TEXT\": \(line)")
      }
      let id: UInt8 = try VectorNotation.number(words[0][..<equals], line: capture.line)
      tuples.append((id, Array(words[0][words[0].index(after: equals)...].utf8)))
    }
    let maximums = requestedMaximums[capture.name] ?? [:]
    let request: ControlPointCommand
    let response: DataSourceResponse
    switch try header.one("cmd") {
    case "0":
      let uid: UInt32 = try header.number("uid")
      response = .notificationAttributes(
        .init(
          notificationUID: uid,
          attributes: tuples.map { NotificationAttribute(NotificationAttributeID(rawValue: $0.id), $0.value) }))
      request = .getNotificationAttributes(
        .init(
          notificationUID: uid,
          attributes: tuples.map {
            let id = NotificationAttributeID(rawValue: $0.id)
            return AttributeRequest(id, maxLength: id.takesMaximumLength ? maximums[$0.id] ?? 65535 : nil)
          }))
    case "1":
      let app = try header.one("app")
      response = .appAttributes(
        .init(appIdentifier: app, attributes: tuples.map { AppAttribute(AppAttributeID(rawValue: $0.id), $0.value) }))
      request = .getAppAttributes(.init(appIdentifier: app, attributes: tuples.map { AppAttributeID(rawValue: $0.id) }))
    case let other: throw VectorNotation.SyntaxError(line: capture.line, "unknown cmd=\(other)")
    }
    try header.done()
    // The request really sent, where the capture has it: what it asked for and did not get is
    // the response's `missing`, and every tuple that came was asked for.
    guard let captured = capture.request else { return (request, response) }
    let sent = try ControlPointCommand(decoding: captured)
    guard case .getNotificationAttributes(let get) = sent, case .notificationAttributes(var attributes) = response
    else { return (sent, response) }
    let arrived = Set(attributes.attributes.map(\.id))
    #expect(arrived.isSubset(of: Set(get.attributes.map(\.id))), "\(capture.name): a tuple that was not asked for")
    attributes.missing = get.attributes.map(\.id).filter { !arrived.contains($0) }
    return (sent, .notificationAttributes(attributes))
  }
}

extension StringProtocol {
  fileprivate var trimmingBlanks: String {
    var text = Substring(self)
    while text.first?.isWhitespace == true { text.removeFirst() }
    while text.last?.isWhitespace == true { text.removeLast() }
    return String(text)
  }
}
