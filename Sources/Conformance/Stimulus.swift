import ANCS
import ATT
import Wire

/// A notification the harness needs the phone under test to have. Only what a user of the
/// phone could cause: the phone chooses the UID, flags beyond Silent/Important follow from
/// the action labels.
public struct StimulusNotification: Hashable, Sendable {
  public var app: String
  public var category: CategoryID
  public var title: String
  public var subtitle: String
  public var message: String
  /// `yyyyMMddTHHmmss`; "" for no date.
  public var date: String
  public var positiveAction: String?
  public var negativeAction: String?
  /// Silent and Important only.
  public var flags: EventFlags

  public init(
    app: String = StimulusNotification.defaultApp, category: CategoryID = .social, title: String = "Conformance",
    subtitle: String = "", message: String = "", date: String = "20261129T120000", positiveAction: String? = nil,
    negativeAction: String? = nil, flags: EventFlags = []
  ) {
    self.app = app
    self.category = category
    self.title = title
    self.subtitle = subtitle
    self.message = message
    self.date = date
    self.positiveAction = positiveAction
    self.negativeAction = negativeAction
    self.flags = flags
  }

  /// The app the cases post from; the phone must know its display name.
  public static let defaultApp = "com.example.chat"
  /// Its display name, as `ancs phone` registers it.
  public static let defaultAppName = "Chat"

  /// The stimulus protocol's `post` line (Protocol/scenario.md, JSON line commands).
  public var jsonLine: String {
    var fields: [(String, JSON)] = [
      ("cmd", .string("post")), ("app", .string(app)),
      ("category", .string(CategoryID.names[category.rawValue] ?? "other")), ("title", .string(title)),
      ("subtitle", .string(subtitle)), ("message", .string(message)), ("date", .string(date)),
    ]
    if let positiveAction { fields.append(("positiveAction", .string(positiveAction))) }
    if let negativeAction { fields.append(("negativeAction", .string(negativeAction))) }
    var names: [JSON] = []
    if flags.contains(.silent) { names.append(.string("silent")) }
    if flags.contains(.important) { names.append(.string("important")) }
    if !names.isEmpty { fields.append(("flags", .array(names))) }
    return JSON.object(fields).description
  }
}

/// Why the phone could not be made to do something.
public struct StimulusError: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

/// How the harness makes a phone it does not control post, modify and remove notifications.
public protocol PhoneStimulus: Sendable {
  /// Posts a notification; returns the UID the phone gave it.
  func post(_ notification: StimulusNotification) async throws(StimulusError) -> UInt32
  /// Changes the message of a notification (the phone then sends Modified).
  func modify(uid: UInt32, message: String) async throws(StimulusError)
  /// Removes a notification (the phone then sends Removed).
  func remove(uid: UInt32) async throws(StimulusError)
  /// Allows or revokes notification sharing for every accessory, as the user of a phone that
  /// asks (iOS 13 and later) does.
  func share(_ allowed: Bool) async throws(StimulusError)
  /// Forgets every bond on the phone, as its user's "Forget This Device" does.
  func forgetBonds() async throws(StimulusError)
  /// Makes the phone's media player play a track now (the Apple Media Service cases).
  func play(_ track: StimulusTrack) async throws(StimulusError)
}

/// A track for the phone's media player to play.
public struct StimulusTrack: Hashable, Sendable {
  public var title: String
  public var artist: String
  public var duration: Double

  public init(title: String, artist: String = "ancs-sim conform", duration: Double = 215) {
    self.title = title
    self.artist = artist
    self.duration = duration
  }

  /// `{"cmd":"play","title":...,"artist":...,"duration":...}`.
  public var jsonLine: String {
    JSON.object([
      ("cmd", .string("play")), ("title", .string(title)), ("artist", .string(artist)),
      ("duration", .number(duration)),
    ]).description
  }
}

extension PhoneStimulus {
  /// A channel that cannot change sharing says so; the cases that need it are skipped.
  public func share(_ allowed: Bool) async throws(StimulusError) {
    throw StimulusError("this control channel cannot allow or revoke notification sharing")
  }

  /// A channel that cannot forget bonds says so; the cases that need it are skipped.
  public func forgetBonds() async throws(StimulusError) {
    throw StimulusError("this control channel cannot make the phone forget its bonds")
  }

  /// A channel that cannot play media says so; the cases that need it are skipped.
  public func play(_ track: StimulusTrack) async throws(StimulusError) {
    throw StimulusError("this control channel cannot make the phone play media")
  }
}

/// A request/answer channel of text lines: sends one line, returns the phone's answer line.
/// Lines that are not answers (a phone may interleave event lines) are the channel's to skip.
public protocol StimulusLineChannel: Sendable {
  func exchange(_ line: String) async throws(StimulusError) -> String
}

/// A channel made of a closure (an in-process phone console, a test double).
public struct ClosureLineChannel: StimulusLineChannel {
  let body: @Sendable (String) async throws(StimulusError) -> String
  public init(_ body: @escaping @Sendable (String) async throws(StimulusError) -> String) { self.body = body }
  public func exchange(_ line: String) async throws(StimulusError) -> String { try await body(line) }
}

/// The stimulus protocol of Protocol/conformance.md: the JSON line commands of
/// `ancs phone --commands jsonl` (`post`, `modify`, `remove`, `allow`, `revoke`, `forget`, `play`, and over the air
/// `passkey` and `confirm`), each answered by one JSON
/// object with `"ok"` (and `"uid"` for post). Any phone that speaks it can be judged.
public struct JSONLineStimulus: PhoneStimulus {
  public let channel: any StimulusLineChannel

  public init(channel: any StimulusLineChannel) { self.channel = channel }

  public func post(_ notification: StimulusNotification) async throws(StimulusError) -> UInt32 {
    let answer = try await exchange(notification.jsonLine)
    guard let uid = answer["uid"]?.integer, let value = UInt32(exactly: uid) else {
      throw StimulusError("the phone's answer to post has no uid: \(answer)")
    }
    return value
  }

  public func modify(uid: UInt32, message: String) async throws(StimulusError) {
    _ = try await exchange(
      JSON.object([("cmd", .string("modify")), ("uid", .number(Double(uid))), ("message", .string(message))])
        .description)
  }

  public func remove(uid: UInt32) async throws(StimulusError) {
    _ = try await exchange(JSON.object([("cmd", .string("remove")), ("uid", .number(Double(uid)))]).description)
  }

  /// `{"cmd":"allow"}` or `{"cmd":"revoke"}`, for every accessory.
  public func share(_ allowed: Bool) async throws(StimulusError) {
    _ = try await exchange(JSON.object([("cmd", .string(allowed ? "allow" : "revoke"))]).description)
  }

  /// `{"cmd":"forget"}`: every bond.
  public func forgetBonds() async throws(StimulusError) {
    _ = try await exchange(JSON.object([("cmd", .string("forget"))]).description)
  }

  /// `{"cmd":"play",...}` (StimulusTrack.jsonLine).
  public func play(_ track: StimulusTrack) async throws(StimulusError) {
    _ = try await exchange(track.jsonLine)
  }

  /// `{"cmd":"passkey",...}` or `{"cmd":"confirm",...}`: the answer to the phone's own
  /// pairing (PairingRelay.phoneCommand), as its user types it.
  public func answerPairing(_ answer: PairingAnswer) async throws(StimulusError) {
    _ = try await exchange(PairingRelay.phoneCommand(answer))
  }

  /// Sends `{"cmd":"list"}` and awaits the answer: a phone answers only once it listens,
  /// so this is the readiness handshake before connecting.
  public func ready() async throws(StimulusError) {
    _ = try await exchange(JSON.object([("cmd", .string("list"))]).description)
  }

  private func exchange(_ line: String) async throws(StimulusError) -> JSON {
    let text = try await channel.exchange(line)
    let answer: JSON
    do { answer = try JSON(parsing: text) } catch { throw StimulusError("the phone's answer is not JSON: \(text)") }
    guard answer["ok"]?.bool == true else {
      throw StimulusError("the phone refused \(line): \(answer["error"]?.string ?? text)")
    }
    return answer
  }
}
