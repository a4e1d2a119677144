import AMS
import ANCS
import ATT
import Wire

/// One notification as the watch knows it.
public struct WatchNotification: Hashable, Sendable {
  public var uid: UInt32
  public var category: CategoryID
  public var flags: EventFlags
  public var appIdentifier = ""
  public var appName = ""
  public var title = ""
  public var subtitle = ""
  public var message = ""
  /// The phone's full message length in bytes (MessageSize), when it said.
  public var messageSize: Int?
  public var date = ""
  public var positiveActionLabel = ""
  public var negativeActionLabel = ""
  /// True once its attributes have arrived.
  public var fetched = false
  /// When it was first reported, on the engine's clock.
  public var receivedAt: Duration

  public init(uid: UInt32, category: CategoryID, flags: EventFlags, receivedAt: Duration) {
    self.uid = uid
    self.category = category
    self.flags = flags
    self.receivedAt = receivedAt
  }

  public var hasPositiveAction: Bool { flags.contains(.positiveAction) }
  public var hasNegativeAction: Bool { flags.contains(.negativeAction) }
}

/// The phone's Current Time, as last read or notified.
public struct PhoneTime: Hashable, Sendable {
  /// Local date and time on the phone.
  public var date: ANCSDate
  /// When it was received, on the engine's clock, so a display can move it forward.
  public var receivedAt: Duration

  /// The phone's local time now, given the engine clock's `now`.
  public func current(at now: Duration) -> ANCSDate {
    let elapsed = max(0, (now - receivedAt).components.seconds)
    return ANCSDate(secondsSinceEpoch: date.secondsSinceEpoch + elapsed)
  }
}

/// The link as the watch sees it.
public enum LinkState: Hashable, Sendable, CustomStringConvertible {
  case connecting
  /// Connected and subscribed: the ANCS session is running.
  case connected(String)
  /// Down; the next attempt comes after `retryIn`.
  case reconnecting(attempt: Int, retryIn: Duration, reason: String)
  case stopped

  public var description: String {
    switch self {
    case .connecting: return "connecting"
    case .connected(let name): return "connected (\(name))"
    case .reconnecting(let attempt, let retryIn, let reason):
      return "reconnecting (attempt \(attempt) in \(retryIn.components.seconds) s: \(reason))"
    case .stopped: return "stopped"
    }
  }
}

/// Everything the watch face shows: a plain value the display renders.
public struct WatchState: Hashable, Sendable {
  /// Oldest first.
  public var notifications: [WatchNotification] = []
  /// App identifier to display name, cached across sessions.
  public var appNames: [String: String] = [:]
  public var link: LinkState = .connecting
  public var time: PhoneTime?
  public var battery: UInt8?
  /// False while the phone does not share its notifications with this watch (the user has
  /// not allowed it, or revoked it); nil until known.
  public var sharingAllowed: Bool?
  /// The ANCS session the notifications' UIDs belong to (they name nothing in another):
  /// counts the sessions begun, 0 before the first.
  public var session = 0
  /// What the phone's media player plays (the Apple Media Service).
  public var nowPlaying = NowPlaying()

  public init() {}

  public func notification(_ uid: UInt32) -> WatchNotification? { notifications.first { $0.uid == uid } }
}

/// What the watch reports, one per line in JSON with `--headless` (Protocol/events.md).
public enum WatchEvent: Hashable, Sendable {
  case connected(link: String)
  case added(WatchNotification)
  case modified(WatchNotification)
  case removed(uid: UInt32)
  /// The phone accepted an action the wearer performed.
  case action(uid: UInt32, action: ActionID)
  case error(String)
  case disconnected(reason: String)
  case time(ANCSDate)
  case battery(UInt8)
  /// The phone does (true) or does not (false: its Control Point answered Write Not
  /// Permitted) share its notifications with this watch.
  case sharing(allowed: Bool)
  /// Something happened to a bond: paired, encrypted with it, the phone's key missing here,
  /// pairing again refused, or forgotten (`forget`).
  case bond(BondEvent)
  /// The phone told a media attribute (AMS Entity Update), or the watch read it whole;
  /// `truncated`: the phone cut it to fit a notification.
  case media(EntityAttribute, value: String, truncated: Bool)
  /// The remote commands the phone's player takes now.
  case mediaCommands([RemoteCommandID])
  /// The phone accepted a remote command the wearer sent.
  case remoteCommand(RemoteCommandID)

  /// The JSON object of Protocol/events.md.
  public var json: JSON {
    switch self {
    case .connected(let link): return .object([("event", .string("connected")), ("link", .string(link))])
    case .added(let n): return Self.notificationJSON("added", n)
    case .modified(let n): return Self.notificationJSON("modified", n)
    case .removed(let uid): return .object([("event", .string("removed")), ("uid", .number(Double(uid)))])
    case .action(let uid, let action):
      return .object([
        ("event", .string("action")), ("uid", .number(Double(uid))),
        ("action", .string(action.name ?? "\(action.rawValue)")),
      ])
    case .error(let message): return .object([("event", .string("error")), ("message", .string(message))])
    case .disconnected(let reason): return .object([("event", .string("disconnected")), ("reason", .string(reason))])
    case .time(let date): return .object([("event", .string("time")), ("time", .string(date.description))])
    case .battery(let level): return .object([("event", .string("battery")), ("level", .number(Double(level)))])
    case .sharing(let allowed): return .object([("event", .string("sharing")), ("allowed", .bool(allowed))])
    case .bond(let event): return event.json
    case .media(let attribute, let value, let truncated):
      return .object([
        ("event", .string("media")), ("entity", .string(attribute.entity.name ?? "\(attribute.entity.rawValue)")),
        ("attribute", .string(attribute.name ?? "\(attribute.attribute)")), ("value", .string(value)),
        ("truncated", .bool(truncated)),
      ])
    case .mediaCommands(let commands):
      return .object([
        ("event", .string("mediaCommands")), ("commands", .array(commands.map { .string(Self.name(of: $0)) })),
      ])
    case .remoteCommand(let command):
      return .object([("event", .string("remoteCommand")), ("command", .string(Self.name(of: command)))])
    }
  }

  static func name(of command: RemoteCommandID) -> String { command.name ?? "\(command.rawValue)" }

  static func notificationJSON(_ event: String, _ n: WatchNotification) -> JSON {
    var pairs: [(String, JSON)] = [
      ("event", .string(event)), ("uid", .number(Double(n.uid))),
      ("category", .string(n.category.name ?? "reserved\(n.category.rawValue)")),
      ("flags", .array(n.flags.flagNames.map { .string($0) })), ("app", .string(n.appIdentifier)),
      ("appName", .string(n.appName)), ("title", .string(n.title)), ("subtitle", .string(n.subtitle)),
      ("message", .string(n.message)), ("date", .string(n.date)),
    ]
    if n.hasPositiveAction { pairs.append(("positiveAction", .string(n.positiveActionLabel))) }
    if n.hasNegativeAction { pairs.append(("negativeAction", .string(n.negativeActionLabel))) }
    return .object(pairs)
  }
}

extension BondEvent {
  /// `{"event":"bond","change":"bonded","peer":"C3:…","level":"encrypted","again":false}`
  /// (Protocol/events.md); level and again only with bonded, reason with pairingRefused,
  /// prompt and number (six digits) with pairing.
  public var json: JSON {
    var fields: [(String, JSON)] = [("event", .string("bond")), ("change", .string(name)), ("peer", .string(peer))]
    if case .bonded(_, let level, let again) = self {
      fields += [("level", .string(level.description)), ("again", .bool(again))]
    }
    if case .pairingRefused(_, let reason) = self { fields.append(("reason", .string(reason))) }
    if case .pairing(_, let prompt) = self {
      fields.append(("prompt", .string(prompt.name)))
      if let number = prompt.number { fields.append(("number", .string(sixDigits(number)))) }
    }
    return .object(fields)
  }
}
