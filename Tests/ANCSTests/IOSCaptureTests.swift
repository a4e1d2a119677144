import ANCS
import TestSupport
import Testing
import Wire

/// Protocol/vectors/ios-captures.txt: Data Source traffic recorded from real iPhones, fed as
/// captured, split in two at every position, and byte by byte.
@Suite struct IOSCaptureTests {
  typealias Capture = IOSCaptures.Capture
  static func captures() throws -> [Capture] { try IOSCaptures.all() }
  static func expected(_ capture: Capture) throws -> (request: ControlPointCommand, response: DataSourceResponse) {
    try IOSCaptures.expected(capture)
  }

  /// The captures were taken at ATT_MTU 158 (iOS 9 and earlier): 155 bytes a notification.
  static let capacity = 155

  /// The library's default policy; with `capacity`, as a user gives it who knows the link's
  /// MTU. Splits made up by a test are no phone's, so they are fed without one.
  static func reassembler(for request: ControlPointCommand, capacity: Int? = nil) -> DataSourceReassembler {
    var policy = DataSourceReassembler.Policy.standard
    policy.fragmentCapacity = capacity
    switch request {
    case .getNotificationAttributes(let command):
      return DataSourceReassembler(expecting: .notificationAttributes(command), policy: policy)
    case .getAppAttributes(let command):
      return DataSourceReassembler(expecting: .appAttributes(command), policy: policy)
    case .performNotificationAction: return DataSourceReassembler(expecting: .anything, policy: policy)
    }
  }

  /// Fed fragment by fragment; an answer that stops where it may be whole is finished, as
  /// its owner does after a quiet while (`awaitsOnlyOptional`).
  static func reassemble(
    _ fragments: [ArraySlice<UInt8>], request: ControlPointCommand, capacity: Int? = nil
  ) throws -> DataSourceResponse? {
    var reassembler = reassembler(for: request, capacity: capacity)
    if let response = try reassembler.feedAll(fragments) { return response }
    return reassembler.awaitsOnlyOptional ? try reassembler.finish() : nil
  }

  /// Issue #14 (7): the two Mail answers, to the request really sent, complete under the
  /// library's default policy as they arrived, with no timer: their one notification is
  /// shorter than 155 bytes. Under `strict` they never do, which is why it is not the default.
  @Test func mailAnswersCompleteUnderTheDefaultPolicy() throws {
    let mail = try Self.captures().filter { $0.name.hasPrefix("mail-") }
    #expect(mail.count == 2)
    for capture in mail {
      let (request, expected) = try Self.expected(capture)
      guard case .getNotificationAttributes(let get) = request, case .notificationAttributes(let response) = expected
      else {
        Issue.record("\(capture.name) is not a notification")
        continue
      }
      #expect(response.missing == [.positiveActionLabel], "\(capture.name)")
      var standard = Self.reassembler(for: request, capacity: Self.capacity)
      #expect(try standard.feedAll(capture.fragments.map { $0[...] }) == expected, "\(capture.name)")
      var byDefault = DataSourceReassembler(expecting: .notificationAttributes(get))
      var strict = DataSourceReassembler(expecting: .notificationAttributes(get), policy: .strict)
      for fragment in capture.fragments {
        _ = try byDefault.feed(fragment)
        #expect(try strict.feed(fragment) == nil, "\(capture.name): strict waits for the label that never comes")
      }
      // Without a capacity the default waits for its owner: whole at a tuple boundary.
      #expect(byDefault.awaitsOnlyOptional)
      #expect(try byDefault.finish() == expected)
      #expect(throws: ANCSError.self) { try strict.finish() }
    }
  }

  @Test func fileHoldsCaptures() throws {
    let captures = try Self.captures()
    #expect(captures.count >= 9)
    #expect(Set(captures.map(\.name)).count == captures.count, "capture names are unique")
    for capture in captures {
      #expect(!capture.fragments.isEmpty && capture.expect.count >= 2, "\(capture.name)")
    }
  }

  @Test func asCaptured() throws {
    for capture in try Self.captures() {
      let (request, expected) = try Self.expected(capture)
      #expect(
        try Self.reassemble(capture.fragments.map { $0[...] }, request: request, capacity: Self.capacity) == expected,
        "\(capture.name)")
    }
  }

  @Test func splitInTwoAtEveryPosition() throws {
    for capture in try Self.captures() {
      let (request, expected) = try Self.expected(capture)
      let bytes = Array(capture.fragments.joined())
      for split in 0...bytes.count {
        let response = try Self.reassemble([bytes[..<split], bytes[split...]], request: request)
        #expect(response == expected, "\(capture.name) split at \(split)")
      }
    }
  }

  @Test func byteByByte() throws {
    for capture in try Self.captures() {
      let (request, expected) = try Self.expected(capture)
      let bytes = Array(capture.fragments.joined())
      #expect(
        try Self.reassemble(bytes.indices.map { bytes[$0...$0] }, request: request) == expected, "\(capture.name)")
    }
  }

  @Test func wholeBufferDecodesAndReencodes() throws {
    for capture in try Self.captures() {
      var (_, expected) = try Self.expected(capture)
      // Decoded whole, nothing is known of what was asked, so nothing is missing.
      if case .notificationAttributes(var attributes) = expected {
        attributes.missing = []
        expected = .notificationAttributes(attributes)
      }
      let bytes = Array(capture.fragments.joined())
      #expect(try DataSourceResponse(decoding: bytes) == expected, "\(capture.name)")
      #expect(Hex.encode(expected.encoded()) == Hex.encode(bytes), "\(capture.name)")
    }
  }

  /// The sms message arrived cut at exactly the 200 bytes asked for: a maximum one byte
  /// smaller must be refused as over-long, at the message's Length field.
  @Test func smsMessageFillsItsRequestedMaximum() throws {
    let capture = try #require(try Self.captures().first { $0.name == "sms-two-fragments" })
    let (request, expected) = try Self.expected(capture)
    guard case .notificationAttributes(let response) = expected,
      case .getNotificationAttributes(var command) = request
    else {
      Issue.record("sms-two-fragments is not a notification")
      return
    }
    #expect(response[.message]?.value.count == 200)
    let message = try #require(command.attributes.firstIndex { $0.id == .message })
    command.attributes[message].maxLength = 199
    var reassembler = Self.reassembler(for: .getNotificationAttributes(command))
    let bytes = Array(capture.fragments.joined())
    let error = #expect(throws: ANCSError.self) { try reassembler.feed(bytes) }
    #expect(error?.reason == .valueTooLong(attribute: 3, length: 200, maximum: 199))
  }
}
