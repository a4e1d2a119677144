import ANCS
import Testing
import Wire

@Suite struct DataSourceReassemblerTests {
  /// AppIdentifier, Title up to 16 bytes, Message up to 32.
  static let command = GetNotificationAttributesCommand(
    notificationUID: 0x1a,
    attributes: [AttributeRequest(.appIdentifier), .init(.title, maxLength: 16), .init(.message, maxLength: 32)])
  static let response = DataSourceResponse.notificationAttributes(
    .init(
      notificationUID: 0x1a,
      attributes: [
        NotificationAttribute(.appIdentifier, text: "com.example"), NotificationAttribute(.title, text: "Zoë"),
        NotificationAttribute(.message, text: "Grüße € 👋"),
      ]))
  static let bytes = response.encoded()

  static let appCommand = GetAppAttributesCommand(appIdentifier: "com.example.café")
  static let appResponse = DataSourceResponse.appAttributes(
    .init(appIdentifier: "com.example.café", attributes: [AppAttribute(.displayName, text: "Café ☕")]))

  func make(policy: DataSourceReassembler.Policy = .strict) -> DataSourceReassembler {
    DataSourceReassembler(expecting: .notificationAttributes(Self.command), policy: policy)
  }

  @Test func layoutOfTheResponseUnderTest() throws {
    // The split tests rely on these positions: header 0..<5, AppIdentifier tuple 5..<19
    // (length field 6..<8), Title 19..<26 ("Zoë", "ë" at 24..<26), Message 26..<45.
    #expect(Self.bytes.count == 45)
    #expect(Array(Self.bytes[19..<22]) == [0x01, 0x04, 0x00])
    #expect(Array(Self.bytes[24..<26]) == [0xc3, 0xab])
  }

  @Test func splitInTwoAtEveryPosition() throws {
    for split in 0...Self.bytes.count {
      var reassembler = make()
      let response = try reassembler.feedAll([Self.bytes[..<split], Self.bytes[split...]])
      #expect(response == Self.response, "split at \(split)")
      #expect(reassembler.isComplete && reassembler.byteCount == Self.bytes.count)
    }
  }

  @Test func splitInThreeAtEveryPairOfPositions() throws {
    let bytes = Self.bytes
    for first in 0...bytes.count {
      for second in first...bytes.count {
        var reassembler = make()
        let fragments = [bytes[..<first], bytes[first..<second], bytes[second...]]
        #expect(try reassembler.feedAll(fragments) == Self.response, "splits at \(first), \(second)")
      }
    }
  }

  @Test func appResponseSplitAtEveryPositionIncludingInsideTheIdentifier() throws {
    let bytes = Self.appResponse.encoded()
    for split in 0...bytes.count {
      var reassembler = DataSourceReassembler(expecting: .appAttributes(Self.appCommand))
      #expect(try reassembler.feedAll([bytes[..<split], bytes[split...]]) == Self.appResponse, "split at \(split)")
    }
  }

  @Test func byteByByte() throws {
    var reassembler = make()
    let fragments = Self.bytes.indices.map { Self.bytes[$0...$0] }
    #expect(try reassembler.feedAll(fragments) == Self.response)
    #expect(reassembler.fragmentCount == Self.bytes.count)
  }

  @Test func randomChunkingsAtMTUSizes() throws {
    var random = SplitMix64(seed: 7)
    for _ in 0..<300 {
      let size = Int.random(in: 1...30, using: &random)
      var reassembler = make()
      #expect(try reassembler.feedAll(dataSourceFragments(Self.bytes, maximumSize: size)) == Self.response)
    }
  }

  /// Responses arrive one after another; each new request gets a new reassembler.
  @Test func severalResponsesBackToBack() throws {
    let exchanges: [(DataSourceReassembler.Expectation, DataSourceResponse)] = [
      (.notificationAttributes(Self.command), Self.response),
      (.appAttributes(Self.appCommand), Self.appResponse),
      (
        .notificationAttributes(.init(notificationUID: 0x1b, attributes: [.init(.date), .init(.messageSize)])),
        .notificationAttributes(
          .init(
            notificationUID: 0x1b,
            attributes: [NotificationAttribute(.date, text: ""), NotificationAttribute(.messageSize, text: "113")]))
      ),
    ]
    let stream = exchanges.map { dataSourceFragments($0.1.encoded(), maximumSize: 20) }
    for (index, fragments) in stream.enumerated() {
      var reassembler = DataSourceReassembler(expecting: exchanges[index].0)
      #expect(try reassembler.feedAll(fragments) == exchanges[index].1)
    }
  }

  @Test func fragmentsHelper() throws {
    #expect(dataSourceFragments([], maximumSize: 20).isEmpty)
    #expect(dataSourceFragments([1, 2, 3], maximumSize: 0).map(Array.init) == [[1], [2], [3]])
    #expect(dataSourceFragments([1, 2, 3, 4, 5], maximumSize: 2).map(Array.init) == [[1, 2], [3, 4], [5]])
    #expect(dataSourceFragments([1, 2], maximumSize: 20).map(Array.init) == [[1, 2]])
  }

  @Test func tuplesInAnotherOrderThanRequestedKeepWireOrder() throws {
    let tuples = [
      NotificationAttribute(.message, text: "Hi"), NotificationAttribute(.appIdentifier, text: "a"),
      NotificationAttribute(.title, text: "T"),
    ]
    let response = DataSourceResponse.notificationAttributes(.init(notificationUID: 0x1a, attributes: tuples))
    var reassembler = make()
    #expect(try reassembler.feed(response.encoded()) == response)
  }

  static let partial = DataSourceResponse.notificationAttributes(
    .init(
      notificationUID: 0x1a,
      attributes: [NotificationAttribute(.appIdentifier, text: "a"), NotificationAttribute(.title, text: "T")]))

  @Test func omittedTupleUnderStrictPolicyWaitsThenFailsOnFinish() throws {
    var reassembler = make()
    #expect(try reassembler.feed(Self.partial.encoded()) == nil)
    #expect(!reassembler.isComplete)
    let error = #expect(throws: ANCSError.self) { try reassembler.finish() }
    #expect(error?.reason == .missingAttributes([3]))
    #expect(error?.offset == Self.partial.encoded().count)
  }

  @Test func omittedTupleUnderAcceptPartialFinishesWithMissing() throws {
    var reassembler = make(policy: .init(acceptPartial: true))
    #expect(try reassembler.feed(Self.partial.encoded()) == nil)
    guard case .notificationAttributes(let response) = try reassembler.finish() else {
      Issue.record("not a notification response")
      return
    }
    #expect(response.missing == [.message])
    #expect(response.attributes.map(\.id) == [.appIdentifier, .title])
    #expect(response[.title]?.text == "T")
  }

  @Test func acceptPartialStillFailsInsideATuple() throws {
    var reassembler = make(policy: .init(acceptPartial: true))
    let bytes = Self.partial.encoded()
    #expect(try reassembler.feed(bytes.dropLast()) == nil)
    let error = #expect(throws: ANCSError.self) { try reassembler.finish() }
    #expect(error?.reason == .truncated(needed: 1, available: 0))
  }

  @Test func optionalAttributesCompleteOnAShortFragment() throws {
    let policy = DataSourceReassembler.Policy(optionalAttributes: [3], fragmentCapacity: 20)
    let bytes = Self.partial.encoded()  // 5 + 4 + 4 = 13 bytes
    var short = make(policy: policy)
    guard case .notificationAttributes(let response) = try short.feed(bytes) else {
      Issue.record("a short fragment at a tuple boundary should complete")
      return
    }
    #expect(response.missing == [.message])

    // A full fragment may be followed by more, so it does not complete the response.
    let full = DataSourceReassembler.Policy(optionalAttributes: [3], fragmentCapacity: 13)
    var waiting = make(policy: full)
    #expect(try waiting.feed(bytes) == nil)

    // Without a fragment capacity the reassembler cannot tell a last fragment.
    var unknown = make(policy: .init(optionalAttributes: [3]))
    #expect(try unknown.feed(bytes) == nil)

    // An attribute not listed as optional is still waited for.
    var required = make(policy: .init(optionalAttributes: [7], fragmentCapacity: 20))
    #expect(try required.feed(bytes) == nil)
  }

  /// A phone that fills fewer bytes than the capacity shows it by its earlier fragments: a
  /// fragment as long as one that more followed is not short, whatever the capacity.
  @Test func aFragmentAsLongAsAnEarlierOneIsNotTheLast() throws {
    let policy = DataSourceReassembler.Policy(optionalAttributes: [3], fragmentCapacity: 182, acceptPartial: true)
    let bytes = Self.partial.encoded()  // 13 bytes, Message missing
    // One byte, then twelve: twelve is not shorter than one, so it may not be the last.
    var growing = make(policy: policy)
    #expect(try growing.feed(Array(bytes[0..<1])) == nil)
    #expect(try growing.feed(Array(bytes[1...])) == nil)
    #expect(growing.awaitsOnlyOptional)
    // Seven and six: six is shorter than seven, so the phone is done.
    var shrinking = make(policy: policy)
    #expect(try shrinking.feed(Array(bytes[0..<7])) == nil)
    #expect(shrinking.fillSize == nil)
    #expect(try shrinking.feed(Array(bytes[7...])) != nil)
    #expect(shrinking.fillSize == 7)
    // Six and seven: seven is not shorter than six, so it may not be the last; the owner is
    // told the response may be whole.
    var even = make(policy: policy)
    #expect(try even.feed(Array(bytes[0..<6])) == nil)
    #expect(!even.awaitsOnlyOptional)
    #expect(try even.feed(Array(bytes[6...])) == nil)
    #expect(even.awaitsOnlyOptional)
    #expect(even.lastFragmentSize == 7)
    guard case .notificationAttributes(let response) = try even.finish() else {
      Issue.record("finish() should return the response")
      return
    }
    #expect(response.missing == [.message])
  }

  static let withExtra = DataSourceResponse.notificationAttributes(
    .init(
      notificationUID: 0x1a,
      attributes: [
        NotificationAttribute(.appIdentifier, text: "a"), NotificationAttribute(.date, text: "20150615T161837"),
        NotificationAttribute(.title, text: "T"), NotificationAttribute(.message, text: "M"),
      ]))

  @Test func unrequestedTupleKeptByDefault() throws {
    var reassembler = make()
    #expect(try reassembler.feed(Self.withExtra.encoded()) == Self.withExtra)
  }

  @Test func unrequestedTupleRejectedOnRequest() throws {
    var reassembler = make(policy: .init(unrequested: .reject))
    let error = #expect(throws: ANCSError.self) { try reassembler.feed(Self.withExtra.encoded()) }
    #expect(error?.reason == .unrequestedAttribute(5))
    #expect(error?.offset == 9)
  }

  @Test func valueLongerThanRequestedFailsAtItsLengthField() throws {
    let long = DataSourceResponse.notificationAttributes(
      .init(notificationUID: 0x1a, attributes: [NotificationAttribute(.title, text: String(repeating: "x", count: 17))])
    )
    var reassembler = make()
    // Only the tuple header has arrived: the length alone is enough to refuse it.
    let error = #expect(throws: ANCSError.self) { try reassembler.feed(long.encoded().prefix(8)) }
    #expect(error?.reason == .valueTooLong(attribute: 1, length: 17, maximum: 16))
    #expect(error?.offset == 6)

    var lenient = make(policy: .init(acceptPartial: true, enforceMaximumLength: false))
    #expect(try lenient.feed(long.encoded()) == nil)
    guard case .notificationAttributes(let response) = try lenient.finish() else {
      Issue.record("not a notification response")
      return
    }
    #expect(response[.title]?.value.count == 17)
  }

  @Test func sizeCap() throws {
    var capped = make(policy: .init(maximumSize: 20))
    #expect(try capped.feed(Self.bytes.prefix(20)) == nil)
    let error = #expect(throws: ANCSError.self) { try capped.feed(Self.bytes[20...]) }
    #expect(error?.reason == .tooLarge(limit: 20))
    #expect(error?.offset == 20)

    var exact = make(policy: .init(maximumSize: Self.bytes.count))
    #expect(try exact.feed(Self.bytes) == Self.response)
  }

  @Test func emptyFragmentsChangeNothing() throws {
    var reassembler = make()
    #expect(try reassembler.feed([UInt8]()) == nil)
    #expect(try reassembler.feed(Self.bytes.prefix(10)) == nil)
    #expect(try reassembler.feed([UInt8]()) == nil)
    #expect(try reassembler.feed(Self.bytes[10...]) == Self.response)
    #expect(try reassembler.feed([UInt8]()) == nil, "an empty packet after the end is harmless")
    #expect(reassembler.fragmentCount == 5)
    #expect(reassembler.byteCount == Self.bytes.count)
  }

  @Test func fragmentAfterCompletion() throws {
    var reassembler = make()
    #expect(try reassembler.feed(Self.bytes) == Self.response)
    let error = #expect(throws: ANCSError.self) { try reassembler.feed([0x00]) }
    #expect(error?.reason == .unexpectedFragment)
    #expect(error?.offset == Self.bytes.count)
  }

  @Test func responseToAnotherCommandUIDOrApp() throws {
    var wrongUID = make()
    var bytes = Self.bytes
    bytes[1] = 0x1b
    let uidError = #expect(throws: ANCSError.self) { try wrongUID.feed(bytes.prefix(5)) }
    #expect(uidError?.kind == "unexpectedResponse")
    #expect(uidError?.offset == 1)

    var wrongCommand = make()
    let commandError = #expect(throws: ANCSError.self) { try wrongCommand.feed(Self.appResponse.encoded().prefix(1)) }
    #expect(commandError?.kind == "unexpectedResponse")
    #expect(commandError?.offset == 0)

    var wrongApp = DataSourceReassembler(expecting: .appAttributes(.init(appIdentifier: "com.example.cafe")))
    let appError = #expect(throws: ANCSError.self) { try wrongApp.feed(Self.appResponse.encoded()) }
    #expect(appError?.kind == "unexpectedResponse")
    #expect(appError?.offset == 1)

    var appGotNotification = DataSourceReassembler(expecting: .appAttributes(Self.appCommand))
    let kindError = #expect(throws: ANCSError.self) { try appGotNotification.feed(Self.bytes) }
    #expect(kindError?.offset == 0)
  }

  @Test func duplicateAndInvalidTuples() throws {
    var duplicate = DataSourceReassembler(expecting: .anything)
    let twice = DataSourceResponse.notificationAttributes(
      .init(
        notificationUID: 1,
        attributes: [NotificationAttribute(.title, text: "A"), NotificationAttribute(.title, text: "B")]))
    let error = #expect(throws: ANCSError.self) { try duplicate.feed(twice.encoded()) }
    #expect(error?.reason == .duplicateAttribute(1))

    var invalid = make()
    let bad: [UInt8] = [0x00, 0x1a, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0xc3, 0x28]
    let utf8Error = #expect(throws: ANCSError.self) { try invalid.feed(bad) }
    #expect(utf8Error?.reason == .invalidUTF8)
    #expect(utf8Error?.offset == 8)
  }

  @Test func finishNamesWhereTheBytesStopped() throws {
    let cases: [(bytes: [UInt8], field: String, offset: Int)] = [
      ([], "CommandID", 0), ([0x00, 0x1a], "NotificationUID", 1), (Array(Self.bytes.prefix(6)), "AttributeLength", 6),
      (Array(Self.bytes.prefix(7)), "AttributeLength", 6), (Array(Self.bytes.prefix(10)), "Value of attribute 0", 8),
    ]
    for (bytes, field, offset) in cases {
      var reassembler = make()
      _ = try? reassembler.feed(bytes)
      let error = #expect(throws: ANCSError.self) { try reassembler.finish() }
      #expect(error?.kind == "truncated", "\(bytes)")
      #expect(error?.field == field, "\(bytes)")
      #expect(error?.offset == offset, "\(bytes)")
    }
    var app = DataSourceReassembler(expecting: .appAttributes(Self.appCommand))
    _ = try? app.feed(Self.appResponse.encoded().prefix(5))
    let error = #expect(throws: ANCSError.self) { try app.finish() }
    #expect(error?.reason == .missingTerminator)
    #expect(error?.offset == 1)
  }

  @Test func anythingCompletesAtTheFirstTupleBoundary() throws {
    var reassembler = DataSourceReassembler(expecting: .anything)
    #expect(try reassembler.feed(Self.bytes.prefix(21)) == nil)
    guard case .notificationAttributes(let response) = try reassembler.feed(Self.bytes[21..<26]) else {
      Issue.record("should complete at a tuple boundary")
      return
    }
    #expect(response.attributes.map(\.id) == [.appIdentifier, .title])
  }
}

extension DataSourceReassembler {
  /// Feeds every fragment in order. Exactly one feed, the last non-empty fragment's, may
  /// return the response: an earlier completion is recorded as an issue.
  mutating func feedAll(_ fragments: [some Collection<UInt8>]) throws(ANCSError) -> DataSourceResponse? {
    var result: DataSourceResponse?
    let last = fragments.lastIndex { !$0.isEmpty }
    for (index, fragment) in fragments.enumerated() {
      let response = try feed(fragment)
      if index == last {
        result = response
      } else if let response {
        Issue.record("complete early, at fragment \(index + 1) of \(fragments.count): \(response)")
      }
    }
    return result
  }
}
