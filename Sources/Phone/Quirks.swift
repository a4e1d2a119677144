/// Documented iOS misbehaviours the simulated phone can reproduce, each off by default and
/// chosen by name (`--quirk NAME` or `NAME=N`). Protocol/ANCS.md describes each one.
public struct Quirks: Hashable, Sendable {
  /// New notifications carry the PreExisting flag (one iOS release did this for Mail).
  public var preExistingOnNew = false
  /// The subscriptions are silently dropped, the link staying up, after this many Data
  /// Source answers on a connection (once per connection).
  public var dropSubscriptionsAfter: Int?
  /// The phone holds this many extra notifications from the start, reported as
  /// pre-existing when a session starts.
  public var flood: Int?
  /// Data Source tuples come in reverse request order.
  public var reverseTuples = false
  /// A tuple left out of every notification-attributes answer that asked for it.
  public var omitTuple: OmittedTuple?
  /// The apps whose answers `omitTuple` applies to; nil: every app.
  public var omitTupleApps: Set<String>?
  /// An empty Data Source notification follows every answer.
  public var emptyPacket = false
  /// Cut values end in "…" inside the byte budget.
  public var ellipsis = false
  /// Removed events are never sent.
  public var loseRemoved = false
  /// Before each new notification, a phantom one is announced and retracted at once: its
  /// fetch is answered 0xA2 and no Removed event follows.
  public var retractUID = false
  /// After this many Control Point commands in a session the ANCS service is unpublished
  /// and republished at other handles, with Service Changed indications.
  public var serviceChangedAfter: Int?
  /// Data Source answers are cut into 20-byte notifications whatever the MTU.
  public var chunk20 = false
  /// The Data Source answer to the N-th Control Point command of a session never comes
  /// (its Write Response does).
  public var loseAnswer: Int?
  /// Every Notification Source event carries the reserved EventFlags bit 5 (iPhones set it
  /// on MMS; it is undocumented).
  public var reservedFlags = false
  /// After N Data Source answers in a session the user revokes notification sharing for
  /// that watch, the link staying up.
  public var revokeSharingAfter: Int?
  /// After N Data Source answers on a connection the Notification Source goes silent: no
  /// event is sent, its CCCD still reads enabled and the Control Point still answers, until
  /// the accessory writes the CCCD again.
  public var silentSourceAfter: Int?
  /// At every session start an ongoing incoming call is reported under a new UID (its old
  /// one gone without a Removed event).
  public var callNewUID = false

  public init() {}

  /// Which tuple the quirk omit-tuple leaves out.
  public enum OmittedTuple: Hashable, Sendable {
    /// The last one requested.
    case last
    /// The tuple of this AttributeID, wherever it was requested.
    case attribute(UInt8)
  }

  public struct Definition: Sendable {
    public var name: String
    public var summary: String
    /// The default N for quirks that take a count.
    public var defaultCount: Int?
    /// What `=VALUE` names ("N", "ID"), when the quirk takes one.
    public var valueName: String? { defaultCount != nil ? "N" : optionalValue }
    /// A value the quirk takes but need not have (omit-tuple=ID).
    var optionalValue: String?
    let apply: @Sendable (inout Quirks, Int?) -> Void
  }

  /// Every quirk, by name, in documentation order.
  public static let catalog: [Definition] = [
    Definition(name: "preexisting-on-new", summary: "new notifications carry the PreExisting flag", defaultCount: nil) {
      q, _ in q.preExistingOnNew = true
    },
    Definition(
      name: "drop-subscriptions", summary: "subscriptions silently dropped after N Data Source answers (link stays up)",
      defaultCount: 3
    ) { q, n in q.dropSubscriptionsAfter = n },
    Definition(name: "flood", summary: "N extra pre-existing notifications at session start", defaultCount: 200) {
      q, n in q.flood = n
    },
    Definition(name: "reverse-tuples", summary: "Data Source tuples in reverse request order", defaultCount: nil) {
      q, _ in q.reverseTuples = true
    },
    Definition(
      name: "omit-tuple", summary: "the last requested tuple is left out; =ID: the tuple of that AttributeID",
      defaultCount: nil, optionalValue: "ID"
    ) { q, id in
      q.omitTuple = id.map { .attribute(UInt8($0)) } ?? .last
      q.omitTupleApps = nil
    },
    Definition(name: "empty-packet", summary: "an empty Data Source packet after every answer", defaultCount: nil) {
      q, _ in q.emptyPacket = true
    },
    Definition(name: "ellipsis", summary: "cut values end in \"…\" within the byte budget", defaultCount: nil) {
      q, _ in q.ellipsis = true
    },
    Definition(name: "lose-removed", summary: "Removed events are never sent", defaultCount: nil) { q, _ in
      q.loseRemoved = true
    },
    Definition(
      name: "retract-uid", summary: "a phantom UID announced, then retracted before its fetch (0xA2)",
      defaultCount: nil
    ) { q, _ in q.retractUID = true },
    Definition(
      name: "service-changed", summary: "ANCS unpublished and republished after N Control Point commands",
      defaultCount: 2
    ) { q, n in q.serviceChangedAfter = n },
    Definition(name: "chunk20", summary: "Data Source answers in 20-byte chunks whatever the MTU", defaultCount: nil) {
      q, _ in q.chunk20 = true
    },
    Definition(
      name: "lose-answer", summary: "the Data Source answer to the N-th command of a session never comes",
      defaultCount: 2
    ) { q, n in q.loseAnswer = n },
    Definition(
      name: "reserved-flags", summary: "events carry the reserved EventFlags bit 5 (as on MMS)", defaultCount: nil
    ) { q, _ in q.reservedFlags = true },
    Definition(
      name: "revoke-sharing", summary: "the user revokes sharing after N Data Source answers (link stays up)",
      defaultCount: 3
    ) { q, n in q.revokeSharingAfter = n },
    Definition(
      name: "silent-source",
      summary: "Notification Source silent after N Data Source answers, its CCCD still enabled",
      defaultCount: 3
    ) { q, n in q.silentSourceAfter = n },
    Definition(
      name: "call-new-uid", summary: "an ongoing call comes back under a new UID when the accessory subscribes again",
      defaultCount: nil
    ) { q, _ in q.callNewUID = true },
  ]

  /// Why a quirk name was refused.
  public struct UnknownQuirk: Error, CustomStringConvertible {
    public var text: String
    public var description: String {
      "unknown quirk '\(text)'; known: " + Quirks.catalog.map(\.name).joined(separator: ", ")
    }
  }

  /// Turns on the quirk `NAME` or `NAME=N`.
  public mutating func enable(_ text: String) throws(UnknownQuirk) {
    let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
    guard let definition = Self.catalog.first(where: { $0.name == parts.first }) else { throw UnknownQuirk(text: text) }
    var count = definition.defaultCount
    if parts.count == 2 {
      let limit = definition.defaultCount != nil ? 100_000 : 255
      guard definition.valueName != nil, let n = Int(parts[1]), n >= 0, n <= limit else {
        let counted = Self.catalog.filter { $0.defaultCount != nil }.map(\.name)
        throw UnknownQuirk(
          text: text + " (" + counted.dropLast().joined(separator: ", ") + " and " + (counted.last ?? "")
            + " take =N, 0-100000; omit-tuple =ID, 0-255)")
      }
      count = n
    }
    definition.apply(&self, count)
  }
}
