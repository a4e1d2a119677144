import Wire

/// Notification Source EventID.
public struct EventID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let added: EventID = 0
  public static let modified: EventID = 1
  public static let removed: EventID = 2
  public static let names: [UInt8: String] = [0: "added", 1: "modified", 2: "removed"]
}

/// Notification Source CategoryID.
public struct CategoryID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let other: CategoryID = 0
  public static let incomingCall: CategoryID = 1
  public static let missedCall: CategoryID = 2
  public static let voicemail: CategoryID = 3
  public static let social: CategoryID = 4
  public static let schedule: CategoryID = 5
  public static let email: CategoryID = 6
  public static let news: CategoryID = 7
  public static let healthAndFitness: CategoryID = 8
  public static let businessAndFinance: CategoryID = 9
  public static let location: CategoryID = 10
  public static let entertainment: CategoryID = 11
  public static let names: [UInt8: String] = [
    0: "other", 1: "incomingCall", 2: "missedCall", 3: "voicemail", 4: "social", 5: "schedule",
    6: "email", 7: "news", 8: "healthAndFitness", 9: "businessAndFinance", 10: "location",
    11: "entertainment",
  ]
}

/// Control Point CommandID (also the first byte of a Data Source response).
public struct CommandID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let getNotificationAttributes: CommandID = 0
  public static let getAppAttributes: CommandID = 1
  public static let performNotificationAction: CommandID = 2
  public static let names: [UInt8: String] = [
    0: "getNotificationAttributes", 1: "getAppAttributes", 2: "performNotificationAction",
  ]
}

/// Notification AttributeID.
public struct NotificationAttributeID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let appIdentifier: NotificationAttributeID = 0
  public static let title: NotificationAttributeID = 1
  public static let subtitle: NotificationAttributeID = 2
  public static let message: NotificationAttributeID = 3
  public static let messageSize: NotificationAttributeID = 4
  public static let date: NotificationAttributeID = 5
  public static let positiveActionLabel: NotificationAttributeID = 6
  public static let negativeActionLabel: NotificationAttributeID = 7
  public static let names: [UInt8: String] = [
    0: "appIdentifier", 1: "title", 2: "subtitle", 3: "message", 4: "messageSize", 5: "date",
    6: "positiveActionLabel", 7: "negativeActionLabel",
  ]

  /// Title, Subtitle and Message are followed by a 2-byte maximum length in a Get
  /// Notification Attributes command; no other attribute is.
  public var takesMaximumLength: Bool { rawValue >= 1 && rawValue <= 3 }
}

/// App AttributeID.
public struct AppAttributeID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let displayName: AppAttributeID = 0
  public static let names: [UInt8: String] = [0: "displayName"]
}

/// Perform Notification Action ActionID.
public struct ActionID: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let positive: ActionID = 0
  public static let negative: ActionID = 1
  public static let names: [UInt8: String] = [0: "positive", 1: "negative"]
}

/// Notification Source EventFlags. Bits 5-7 are reserved and kept as received.
public struct EventFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let silent = EventFlags(rawValue: 1 << 0)
  public static let important = EventFlags(rawValue: 1 << 1)
  public static let preExisting = EventFlags(rawValue: 1 << 2)
  public static let positiveAction = EventFlags(rawValue: 1 << 3)
  public static let negativeAction = EventFlags(rawValue: 1 << 4)

  /// Flag names in bit order, lowerCamelCase, as scenario files and watch events spell them.
  public static let names: [(EventFlags, String)] = [
    (.silent, "silent"), (.important, "important"), (.preExisting, "preExisting"),
    (.positiveAction, "positiveAction"), (.negativeAction, "negativeAction"),
  ]

  public init?(name: String) {
    guard let entry = Self.names.first(where: { $0.1 == name }) else { return nil }
    self = entry.0
  }

  /// Names of the set flags; a reserved bit n shows as "bitN".
  public var flagNames: [String] {
    (0..<8).compactMap { bit -> String? in
      let flag = EventFlags(rawValue: 1 << bit)
      guard contains(flag) else { return nil }
      return Self.names.first(where: { $0.0 == flag })?.1 ?? "bit\(bit)"
    }
  }

  public var description: String { "[" + flagNames.joined(separator: ",") + "]" }
}

/// The ANCS-specific ATT error codes a Control Point write can be answered with.
public struct ANCSErrorCode: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let unknownCommand: ANCSErrorCode = 0xA0
  public static let invalidCommand: ANCSErrorCode = 0xA1
  public static let invalidParameter: ANCSErrorCode = 0xA2
  public static let actionFailed: ANCSErrorCode = 0xA3
  public static let names: [UInt8: String] = [
    0xA0: "unknownCommand", 0xA1: "invalidCommand", 0xA2: "invalidParameter", 0xA3: "actionFailed",
  ]
}

/// The service and characteristic UUIDs, as canonical strings.
public enum ANCSUUID {
  public static let service = "7905F431-B5CE-4E99-A40F-4B1E122D00D0"
  public static let notificationSource = "9FBF120D-6301-42D9-8C58-25E699A21DBD"
  public static let controlPoint = "69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9"
  public static let dataSource = "22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB"
}
