import AMS
import ANCS
import ATT
import Wire

/// The rules `ancs inspect` judges a capture by: those of the conformance harness that a
/// capture can show (Protocol/captures.md, Findings). Each finding names the side that broke
/// the rule, the rule, and the records that show it.
enum CaptureRule: String, CaseIterable, Sendable {
  case commandsOverlap = "ANCS.md, What an accessory must do, Control Point: one command at a time"
  case fetchAfterRemoved = "ANCS.md, What an accessory must do, Notification Source: Removed ends the notification"
  case fetchNeverAnnounced = "ANCS.md, Control Point: a command names a UID the phone announced"
  case plainLink = "ANCS.md, What an accessory must do, Security: use ANCS over an encrypted link"
  case noRediscovery =
    "ANCS.md, What an accessory must do, Discovery: on Service Changed, discover again and subscribe at the new handles"
  case malformedEvent = "ANCS.md, Notification Source: 8 bytes"
  case overMaximum = "ANCS.md, Control Point commands: a value is cut to the maximum asked"
  case cutInsideCharacter = "ANCS.md, Text: a value is never cut inside a UTF-8 character"
  case unrequestedTuple = "ANCS.md, Data Source responses: the attributes asked for, no others"
  case mediaBeforeSubscribing = "AMS.md, What an accessory must do, 1: subscribe to Entity Update before writing it"
  case remoteCommandSize = "AMS.md, What an accessory must do, 5: a remote command is one byte"
  case unlistedCommand = "AMS.md, What an accessory must do, 6: only the commands the player lists now"

  /// Who breaks it: the accessory (the GATT client) or the phone (the server).
  var side: String {
    switch self {
    case .malformedEvent, .overMaximum, .cutInsideCharacter, .unrequestedTuple: return "phone"
    default: return "accessory"
    }
  }
}

extension Link {
  /// A finding: the event `finding`, its side, rule and records.
  static func finding(_ rule: CaptureRule, _ what: String, records: [Int]) -> Event {
    Event(
      event: "finding", text: "\(rule.side) broke a rule: \(what) (\(rule.rawValue))",
      fields: [
        ("side", .string(rule.side)), ("rule", .string(rule.rawValue)), ("what", .string(what)),
        ("records", .array(records.map { .number(Double($0)) })),
      ], at: nil)
  }

  /// The phone's answer to `get`, judged: values over their maximum, cut inside a
  /// character, and tuples not asked for.
  static func judge(
    _ response: NotificationAttributesResponse, asked get: GetNotificationAttributesCommand, record: Int
  ) -> [Event] {
    var found: [Event] = []
    for tuple in response.attributes {
      let name = tuple.id.name ?? "attribute \(tuple.id.rawValue)"
      guard let request = get.attributes.first(where: { $0.id == tuple.id }) else {
        found.append(
          finding(.unrequestedTuple, "UID \(response.notificationUID): \(name) not asked for", records: [record]))
        continue
      }
      if let maximum = request.maxLength, tuple.value.count > Int(maximum) {
        found.append(
          finding(
            .overMaximum, "UID \(response.notificationUID): \(name) of \(tuple.value.count) bytes, \(maximum) asked",
            records: [record]))
      }
      if String(validating: tuple.value, as: UTF8.self) == nil {
        found.append(
          finding(.cutInsideCharacter, "UID \(response.notificationUID): \(name) is not whole UTF-8", records: [record])
        )
      }
    }
    return found
  }
}
