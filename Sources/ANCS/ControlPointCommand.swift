import Wire

/// One attribute asked for in a Get Notification Attributes command. Title, Subtitle and
/// Message carry the maximum number of bytes the phone may return; the others carry none.
public struct AttributeRequest: Hashable, Sendable, CustomStringConvertible {
  public var id: NotificationAttributeID
  public var maxLength: UInt16?

  public init(_ id: NotificationAttributeID, maxLength: UInt16? = nil) {
    self.id = id
    self.maxLength = maxLength
  }

  public var description: String { maxLength.map { "\(id)/\($0)" } ?? "\(id)" }
}

/// Get Notification Attributes: CommandID 0, NotificationUID(4), then attribute IDs, each of
/// Title, Subtitle and Message followed by a 2-byte maximum length.
public struct GetNotificationAttributesCommand: Hashable, Sendable {
  public var notificationUID: UInt32
  public var attributes: [AttributeRequest]

  public init(notificationUID: UInt32, attributes: [AttributeRequest]) {
    self.notificationUID = notificationUID
    self.attributes = attributes
  }
}

/// Get App Attributes: CommandID 1, AppIdentifier as NUL-terminated UTF-8, then app attribute IDs.
public struct GetAppAttributesCommand: Hashable, Sendable {
  public var appIdentifier: String
  public var attributes: [AppAttributeID]

  public init(appIdentifier: String, attributes: [AppAttributeID] = [.displayName]) {
    self.appIdentifier = appIdentifier
    self.attributes = attributes
  }
}

/// Perform Notification Action: CommandID 2, NotificationUID(4), ActionID(1).
public struct PerformNotificationActionCommand: Hashable, Sendable {
  public var notificationUID: UInt32
  public var actionID: ActionID

  public init(notificationUID: UInt32, actionID: ActionID) {
    self.notificationUID = notificationUID
    self.actionID = actionID
  }
}

/// A Control Point command, as written by the watch.
public enum ControlPointCommand: Hashable, Sendable {
  case getNotificationAttributes(GetNotificationAttributesCommand)
  case getAppAttributes(GetAppAttributesCommand)
  case performNotificationAction(PerformNotificationActionCommand)

  public var commandID: CommandID {
    switch self {
    case .getNotificationAttributes: return .getNotificationAttributes
    case .getAppAttributes: return .getAppAttributes
    case .performNotificationAction: return .performNotificationAction
    }
  }
}

extension ControlPointCommand {
  /// Decodes one Control Point write. Errors map to the phone's answer through
  /// `ANCSError.controlPointErrorCode` (0xA0 for an unknown command, 0xA1 otherwise).
  public init(decoding bytes: [UInt8]) throws(ANCSError) {
    var reader = ByteReader(bytes)
    self = try decodingANCS {
      let commandID = CommandID(rawValue: try reader.u8("CommandID"))
      switch commandID {
      case .getNotificationAttributes:
        let uid = try reader.u32("NotificationUID")
        var attributes: [AttributeRequest] = []
        while !reader.isAtEnd {
          let at = reader.offset
          let id = NotificationAttributeID(rawValue: try reader.u8("AttributeID"))
          if id.takesMaximumLength {
            guard reader.remaining >= 2 else {
              throw ANCSError(field: "AttributeID", offset: at, reason: .missingMaximumLength(id))
            }
            attributes.append(AttributeRequest(id, maxLength: try reader.u16("MaxLength")))
          } else {
            attributes.append(AttributeRequest(id))
          }
        }
        guard !attributes.isEmpty else {
          throw ANCSError(field: "AttributeID", offset: reader.offset, reason: .noAttributes)
        }
        return .getNotificationAttributes(.init(notificationUID: uid, attributes: attributes))
      case .getAppAttributes:
        let app = try reader.cString("AppIdentifier")
        var attributes: [AppAttributeID] = []
        while !reader.isAtEnd { attributes.append(AppAttributeID(rawValue: try reader.u8("AttributeID"))) }
        guard !attributes.isEmpty else {
          throw ANCSError(field: "AttributeID", offset: reader.offset, reason: .noAttributes)
        }
        return .getAppAttributes(.init(appIdentifier: app, attributes: attributes))
      case .performNotificationAction:
        let uid = try reader.u32("NotificationUID")
        let action = ActionID(rawValue: try reader.u8("ActionID"))
        try reader.expectEnd("PerformNotificationAction")
        return .performNotificationAction(.init(notificationUID: uid, actionID: action))
      default:
        throw ANCSError(field: "CommandID", offset: 0, reason: .unknownCommand(commandID))
      }
    }
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(commandID.rawValue)
    switch self {
    case .getNotificationAttributes(let command):
      writer.u32(command.notificationUID)
      for attribute in command.attributes {
        writer.u8(attribute.id.rawValue)
        if let max = attribute.maxLength { writer.u16(max) }
      }
    case .getAppAttributes(let command):
      writer.cString(command.appIdentifier)
      for attribute in command.attributes { writer.u8(attribute.rawValue) }
    case .performNotificationAction(let command):
      writer.u32(command.notificationUID)
      writer.u8(command.actionID.rawValue)
    }
    return writer.bytes
  }
}
