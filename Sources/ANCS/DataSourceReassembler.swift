import Wire

/// Rebuilds one Data Source response from its notifications, fed one fragment at a time.
///
/// A response has no total length: only the first fragment carries the header and the rest
/// are continuation bytes split anywhere (inside the header, a length field, the
/// AppIdentifier or a value). The response is complete when every requested tuple has fully
/// arrived and a fragment ends on a tuple boundary. What happens when a requested tuple never
/// comes is a `Policy` choice; `finish()` ends a response explicitly (for example when the
/// watch's command timer fires), so nothing ever waits silently.
///
/// A pure value: no I/O, no clock. Offsets in errors count from the response's first byte.
public struct DataSourceReassembler: Sendable {
  /// What the reassembler waits for.
  public enum Expectation: Hashable, Sendable {
    /// The answer to this Get Notification Attributes command.
    case notificationAttributes(GetNotificationAttributesCommand)
    /// The answer to this Get App Attributes command.
    case appAttributes(GetAppAttributesCommand)
    /// Any response; complete at the end of a fragment that ends on a tuple boundary.
    /// For decoding a response held whole in one buffer.
    case anything

    /// The Get Notification Attributes command answered, if that is what is expected.
    public var notificationRequest: GetNotificationAttributesCommand? {
      if case .notificationAttributes(let command) = self { return command }
      return nil
    }
  }

  public enum UnrequestedTuples: Hashable, Sendable {
    /// Keep them in wire order among the requested ones.
    case keep
    /// Fail with `unrequestedAttribute`.
    case reject
  }

  public struct Policy: Hashable, Sendable {
    /// Largest response accepted, in bytes; larger fails with `tooLarge`.
    public var maximumSize: Int
    /// Attributes the phone is known to omit (labels, MessageSize on some phones). The
    /// response completes without them when a fragment that ends on a tuple boundary is
    /// shorter than the phone's fragments are (a short fragment is the phone's last): shorter
    /// than `fragmentCapacity` and than the largest earlier fragment of the same response.
    public var optionalAttributes: Set<UInt8>
    /// How much the phone puts in one notification, when known: ATT_MTU - 3 on the link, or
    /// less for a phone seen to fill fewer (`fillSize`). Without it only the earlier
    /// notifications of an answer tell a short one, and an answer in one notification that
    /// lacks optional attributes waits for `finish()`.
    public var fragmentCapacity: Int?
    /// `finish()` on a response that ends on a tuple boundary but lacks requested tuples
    /// returns it with `missing` filled in (true) or fails with `missingAttributes` (false).
    public var acceptPartial: Bool
    public var unrequested: UnrequestedTuples
    /// Fail with `invalidUTF8` on a value or AppIdentifier that is not UTF-8.
    public var validateUTF8: Bool
    /// Fail with `valueTooLong` on a value longer than the maximum the request gave.
    public var enforceMaximumLength: Bool

    public init(
      maximumSize: Int = 1 << 20, optionalAttributes: Set<UInt8> = [], fragmentCapacity: Int? = nil,
      acceptPartial: Bool = false, unrequested: UnrequestedTuples = .keep, validateUTF8: Bool = true,
      enforceMaximumLength: Bool = true
    ) {
      self.maximumSize = maximumSize
      self.optionalAttributes = optionalAttributes
      self.fragmentCapacity = fragmentCapacity
      self.acceptPartial = acceptPartial
      self.unrequested = unrequested
      self.validateUTF8 = validateUTF8
      self.enforceMaximumLength = enforceMaximumLength
    }

    /// Waits for every requested tuple, validates everything. For judging a phone.
    public static let strict = Policy()

    /// What real iPhones need, the default: PositiveActionLabel, NegativeActionLabel and
    /// MessageSize may be left out (iOS 8 Mail answers lack a PositiveActionLabel that was
    /// asked for), and `finish()` returns an answer that stopped on a tuple boundary with
    /// what is missing listed; everything else is validated as under `strict`. Give
    /// `fragmentCapacity` (ATT_MTU - 3) when the link's MTU is known, so a short last
    /// notification ends an answer at once; see `awaitsOnlyOptional` for the rest.
    public static let standard = Policy(
      optionalAttributes: [
        NotificationAttributeID.positiveActionLabel.rawValue, NotificationAttributeID.negativeActionLabel.rawValue,
        NotificationAttributeID.messageSize.rawValue,
      ], acceptPartial: true)
  }

  public let expectation: Expectation
  public let policy: Policy

  private var buffer: [UInt8] = []
  private var cursor = 0
  private var header: Header?
  private var tuples: [(id: UInt8, range: Range<Int>)] = []
  private var seen = ByteSet()
  /// How many of the requested attributes have arrived.
  private var requestedSeen = 0
  private let requested: [(id: UInt8, maximum: Int?)]
  private(set) public var isComplete = false
  /// Fragments fed so far, empty ones included.
  private(set) public var fragmentCount = 0
  /// The largest fragment that more of this response followed: what the phone puts in one
  /// notification (nil until a second non-empty fragment arrives).
  private(set) public var fillSize: Int?
  /// The size of the last non-empty fragment.
  private(set) public var lastFragmentSize = 0

  private enum Header {
    case notification(uid: UInt32)
    case app(identifier: String)
  }

  public init(expecting expectation: Expectation, policy: Policy = .standard) {
    self.expectation = expectation
    self.policy = policy
    switch expectation {
    case .notificationAttributes(let command):
      requested = Self.unique(command.attributes.lazy.map { ($0.id.rawValue, $0.maxLength.map(Int.init)) })
    case .appAttributes(let command):
      requested = Self.unique(command.attributes.lazy.map { ($0.rawValue, nil) })
    case .anything:
      requested = []
    }
  }

  /// The first request of each attribute (a request naming one twice gets it once).
  /// Built in one array: a reassembler is made for every command.
  private static func unique(_ list: some Collection<(id: UInt8, maximum: Int?)>) -> [(id: UInt8, maximum: Int?)] {
    var seen = ByteSet()
    var result: [(id: UInt8, maximum: Int?)] = []
    result.reserveCapacity(list.count)
    for item in list where !seen.contains(item.id) {
      seen.insert(item.id)
      result.append(item)
    }
    return result
  }

  /// Bytes received so far.
  public var byteCount: Int { buffer.count }

  /// Adds one Data Source notification. Returns the response once it is complete; nil while
  /// more is needed. An empty fragment changes nothing.
  public mutating func feed(_ fragment: [UInt8]) throws(ANCSError) -> DataSourceResponse? {
    try fragment.withUnsafeBufferPointer { (buffer) throws(ANCSError) in try feed(buffer: buffer) }
  }

  public mutating func feed(_ fragment: ArraySlice<UInt8>) throws(ANCSError) -> DataSourceResponse? {
    try fragment.withUnsafeBufferPointer { (buffer) throws(ANCSError) in try feed(buffer: buffer) }
  }

  public mutating func feed(_ fragment: some Collection<UInt8>) throws(ANCSError) -> DataSourceResponse? {
    try feed(Array(fragment))
  }

  private mutating func feed(buffer fragment: UnsafeBufferPointer<UInt8>) throws(ANCSError) -> DataSourceResponse? {
    fragmentCount += 1
    if fragment.isEmpty {
      // An empty notification is no data, but it does end the phone's answer (some phones
      // send one after an answer that filled its last notification exactly).
      guard !isComplete, header != nil, cursor == buffer.count, case .notificationAttributes = expectation else {
        return nil
      }
      let missing = requested.filter { !seen.contains($0.id) }.map(\.id)
      guard policy.fragmentCapacity != nil, missing.allSatisfy(policy.optionalAttributes.contains) else { return nil }
      return complete(missing: missing)
    }
    if isComplete { throw ANCSError(field: "Fragment", offset: buffer.count, reason: .unexpectedFragment) }
    if lastFragmentSize > 0 { fillSize = max(fillSize ?? 0, lastFragmentSize) }
    lastFragmentSize = fragment.count
    if buffer.count + fragment.count > policy.maximumSize {
      throw ANCSError(field: "Response", offset: buffer.count, reason: .tooLarge(limit: policy.maximumSize))
    }
    buffer.append(contentsOf: fragment)
    if header == nil {
      guard try parseHeader() else { return nil }
    }
    try parseTuples()
    guard cursor == buffer.count else { return nil }
    if case .anything = expectation { return complete(missing: []) }
    if requestedSeen == requested.count { return complete(missing: []) }
    // A phone that fills fewer bytes than ATT_MTU - 3 (20-byte chunks) shows it by its
    // earlier fragments: one of that size is not its last. They tell it without a known
    // capacity too.
    let capacity = policy.fragmentCapacity.map { min($0, fillSize ?? $0) } ?? fillSize
    let shortFragment = capacity.map { fragment.count < $0 } ?? false
    let missing = requested.filter { !seen.contains($0.id) }.map(\.id)
    if shortFragment && missing.allSatisfy(policy.optionalAttributes.contains) {
      return complete(missing: missing)
    }
    return nil
  }

  /// True when the response has stopped on a tuple boundary with only optional attributes
  /// missing, but its last fragment was not short enough to end it: the phone may have
  /// finished or may have more. The owner decides after a quiet while (`finish()`, under
  /// `acceptPartial`).
  public var awaitsOnlyOptional: Bool {
    guard !isComplete, header != nil, cursor == buffer.count, !requested.isEmpty else { return false }
    let missing = requested.filter { !seen.contains($0.id) }.map(\.id)
    return !missing.isEmpty && missing.allSatisfy(policy.optionalAttributes.contains)
  }

  /// Ends the response now. Returns it when it is whole, or partial at a tuple boundary under
  /// `acceptPartial`; otherwise says what is missing and where.
  public mutating func finish() throws(ANCSError) -> DataSourceResponse {
    if let header, cursor == buffer.count {
      let missing = requested.filter { !seen.contains($0.id) }.map(\.id)
      if missing.isEmpty || policy.acceptPartial { return complete(missing: missing, header: header) }
      throw ANCSError(field: "Response", offset: buffer.count, reason: .missingAttributes(missing))
    }
    // Name the field the bytes stopped in.
    if header == nil {
      let field: String
      switch buffer.first {
      case nil: field = "CommandID"
      case CommandID.getAppAttributes.rawValue: field = "AppIdentifier"
      default: field = "NotificationUID"
      }
      let needed = buffer.isEmpty ? 1 : (field == "AppIdentifier" ? 1 : 5 - buffer.count)
      if field == "AppIdentifier" {
        throw ANCSError(field: field, offset: 1, reason: .missingTerminator)
      }
      throw ANCSError(field: field, offset: min(buffer.count, 1), reason: .truncated(needed: needed, available: 0))
    }
    let left = buffer.count - cursor
    if left < 3 {
      throw ANCSError(
        field: left == 0 ? "AttributeID" : "AttributeLength", offset: cursor + min(left, 1),
        reason: .truncated(needed: 3 - left, available: 0))
    }
    let length = Int(buffer[cursor + 1]) | Int(buffer[cursor + 2]) << 8
    throw ANCSError(
      field: "Value of attribute \(buffer[cursor])", offset: cursor + 3,
      reason: .truncated(needed: length - (left - 3), available: 0))
  }

  // MARK: - Parsing

  /// Parses the header once it is all there; false while more bytes are needed.
  private mutating func parseHeader() throws(ANCSError) -> Bool {
    let commandID = CommandID(rawValue: buffer[0])
    switch expectation {
    case .notificationAttributes where commandID != .getNotificationAttributes,
      .appAttributes where commandID != .getAppAttributes:
      throw ANCSError(
        field: "CommandID", offset: 0, reason: .unexpectedResponse("CommandID \(commandID.rawValue)"))
    default: break
    }
    switch commandID {
    case .getNotificationAttributes:
      guard buffer.count >= 5 else { return false }
      let uid = UInt32(buffer[1]) | UInt32(buffer[2]) << 8 | UInt32(buffer[3]) << 16 | UInt32(buffer[4]) << 24
      if case .notificationAttributes(let command) = expectation, command.notificationUID != uid {
        throw ANCSError(
          field: "NotificationUID", offset: 1,
          reason: .unexpectedResponse("UID \(uid), expected \(command.notificationUID)"))
      }
      header = .notification(uid: uid)
      cursor = 5
    case .getAppAttributes:
      guard let nul = buffer[1...].firstIndex(of: 0) else { return false }
      guard let app = String(validatingUTF8Bytes: buffer[1..<nul]) else {
        throw ANCSError(field: "AppIdentifier", offset: 1, reason: .invalidUTF8)
      }
      if case .appAttributes(let command) = expectation, command.appIdentifier != app {
        throw ANCSError(
          field: "AppIdentifier", offset: 1,
          reason: .unexpectedResponse("app \"\(app)\", expected \"\(command.appIdentifier)\""))
      }
      header = .app(identifier: app)
      cursor = nul + 1
    default:
      throw ANCSError(field: "CommandID", offset: 0, reason: .unknownCommand(commandID))
    }
    return true
  }

  /// Takes every tuple whose bytes are all there; checks each tuple's header as soon as it
  /// has arrived, so an over-long or unwanted tuple fails before its value is waited for.
  private mutating func parseTuples() throws(ANCSError) {
    let anything = expectation == .anything
    while buffer.count - cursor >= 3 {
      let id = buffer[cursor]
      let length = Int(buffer[cursor + 1]) | Int(buffer[cursor + 2]) << 8
      if seen.contains(id) {
        throw ANCSError(field: "AttributeID", offset: cursor, reason: .duplicateAttribute(id))
      }
      var wasRequested = false
      if !anything {
        if let request = requested.first(where: { $0.id == id }) {
          wasRequested = true
          if policy.enforceMaximumLength, let maximum = request.maximum, length > maximum {
            throw ANCSError(
              field: "AttributeLength", offset: cursor + 1,
              reason: .valueTooLong(attribute: id, length: length, maximum: maximum))
          }
        } else if policy.unrequested == .reject {
          throw ANCSError(field: "AttributeID", offset: cursor, reason: .unrequestedAttribute(id))
        }
      }
      let start = cursor + 3
      guard buffer.count - start >= length else { return }
      if policy.validateUTF8 {
        let valid = buffer.withUnsafeBufferPointer { all in
          UTF8Validation.isValid(UnsafeBufferPointer(rebasing: all[start..<start + length]))
        }
        if !valid { throw ANCSError(field: "Value of attribute \(id)", offset: start, reason: .invalidUTF8) }
      }
      seen.insert(id)
      if wasRequested { requestedSeen += 1 }
      tuples.append((id, start..<start + length))
      cursor = start + length
    }
  }

  private mutating func complete(missing: [UInt8]) -> DataSourceResponse? {
    guard let header else { return nil }
    return complete(missing: missing, header: header)
  }

  private mutating func complete(missing: [UInt8], header: Header) -> DataSourceResponse {
    isComplete = true
    switch header {
    case .notification(let uid):
      return .notificationAttributes(
        NotificationAttributesResponse(
          notificationUID: uid,
          attributes: tuples.map {
            NotificationAttribute(NotificationAttributeID(rawValue: $0.id), Array(buffer[$0.range]))
          },
          missing: missing.map(NotificationAttributeID.init(rawValue:))))
    case .app(let identifier):
      return .appAttributes(
        AppAttributesResponse(
          appIdentifier: identifier,
          attributes: tuples.map { AppAttribute(AppAttributeID(rawValue: $0.id), Array(buffer[$0.range])) },
          missing: missing.map(AppAttributeID.init(rawValue:))))
    }
  }
}

/// A set of byte values, 256 bits inline.
struct ByteSet: Hashable, Sendable {
  private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

  static func == (a: ByteSet, b: ByteSet) -> Bool { a.words == b.words }
  func hash(into hasher: inout Hasher) {
    hasher.combine(words.0)
    hasher.combine(words.1)
    hasher.combine(words.2)
    hasher.combine(words.3)
  }

  func contains(_ value: UInt8) -> Bool {
    let bit = UInt64(1) << UInt64(value & 63)
    switch value >> 6 {
    case 0: return words.0 & bit != 0
    case 1: return words.1 & bit != 0
    case 2: return words.2 & bit != 0
    default: return words.3 & bit != 0
    }
  }

  mutating func insert(_ value: UInt8) {
    let bit = UInt64(1) << UInt64(value & 63)
    switch value >> 6 {
    case 0: words.0 |= bit
    case 1: words.1 |= bit
    case 2: words.2 |= bit
    default: words.3 |= bit
    }
  }
}
