import ANCS

/// How the watch treats notifications that were already on the phone when a session began.
public enum PreExistingPolicy: Hashable, Sendable {
  /// Fetch every one (new notifications are always fetched first).
  case fetchAll
  /// Fetch only the newest N; the rest are listed without text.
  case fetchNewest(Int)
  /// List them without fetching anything.
  case listOnly
}

/// Settings of the watch engine; the defaults suit the terminal watch.
public struct WatchOptions: Sendable {
  /// Subscribe to Data Source before Notification Source (several firmwares do), or after.
  public var dataSourceFirst = true
  /// Time allowed for one Control Point command's answer before the watch moves on.
  public var commandTimeout: Duration = .seconds(10)
  /// An answer that stopped on a tuple boundary with only optional attributes missing, in a
  /// notification as full as the phone's others, is taken as whole after this long without
  /// more (a later continuation is still taken in).
  public var answerSettle: Duration = .seconds(1)
  /// Byte maxima asked for Title, Subtitle and Message (65535: whole texts).
  public var titleMaximum: UInt16 = 65535
  public var subtitleMaximum: UInt16 = 65535
  public var messageMaximum: UInt16 = 65535
  /// The notification attributes asked for (a small firmware may want fewer). Labels are
  /// asked only when the notification has that action.
  public var attributes: Set<NotificationAttributeID> = [
    .appIdentifier, .title, .subtitle, .message, .messageSize, .date, .positiveActionLabel, .negativeActionLabel,
  ]
  public var preExisting: PreExistingPolicy = .fetchAll
  /// PreExisting flags count only this long after subscribing; later ones are new
  /// notifications whatever the flag says (one iOS release flagged new Mail PreExisting).
  public var preExistingWindow: Duration = .seconds(3)
  /// After this long without a word from the phone, check that the subscriptions still hold.
  public var livenessInterval: Duration = .seconds(30)
  /// After this long without a Notification Source event the watch writes its CCCDs again: a
  /// phone can keep answering the Control Point, its CCCD still reading enabled, while its
  /// Notification Source has gone silent, and only a CCCD write revives it
  /// (coredevices/PebbleOS#1348, which chose 6 hours). nil: never.
  public var resubscribeAfterSilence: Duration? = .seconds(6 * 3600)
  /// Incoming calls are re-checked this often, so a lost Removed event cannot leave a call
  /// ringing forever.
  public var callRecheckInterval: Duration = .seconds(20)
  /// A session with no event this long after subscribing is checked: a Control Point write
  /// for a UID no phone has (Write Not Permitted means the phone does not share its
  /// notifications with this watch; 0xA2 that it does and has none).
  public var sharingCheckDelay: Duration = .seconds(2)
  /// While the phone does not share, the check is made again this often.
  public var sharingRecheckInterval: Duration = .seconds(10)
  /// Security level asked for before touching ANCS.
  public var security: SecurityLevelRequest = .encrypted
  /// The GAP Device Name the watch publishes (a phone reads it and shows it).
  public var deviceName = "ancs-sim watch"
  /// Receive MTU offered in Exchange MTU.
  public var mtu: UInt16 = 517
  /// Reconnect back-off: first delay, doubled per attempt up to the maximum.
  public var reconnectDelay: Duration = .milliseconds(500)
  public var maximumReconnectDelay: Duration = .seconds(30)
  /// Reconnect after the link drops (false: stop).
  public var reconnect = true
  /// Uses the phone's Apple Media Service (now playing, remote commands) when it has one.
  public var usesMedia = true
  /// Test-only fault switches (Faults.swift); none by default.
  public var faults = WatchFaults()

  public enum SecurityLevelRequest: Sendable { case encrypted, authenticated }

  public init() {}

  /// The attributes asked for a notification: labels before the text so a phone that omits
  /// a tuple omits an optional one, MessageSize last.
  public func attributeRequests(for flags: EventFlags) -> [AttributeRequest] {
    // Built in one array (this runs for every notification fetched).
    var list: [AttributeRequest] = []
    list.reserveCapacity(8)
    func add(_ request: AttributeRequest) {
      // AppIdentifier is always needed: the app's display name hangs on it.
      if request.id == .appIdentifier || attributes.contains(request.id) { list.append(request) }
    }
    add(AttributeRequest(.appIdentifier))
    if flags.contains(.positiveAction) { add(AttributeRequest(.positiveActionLabel)) }
    if flags.contains(.negativeAction) { add(AttributeRequest(.negativeActionLabel)) }
    add(AttributeRequest(.title, maxLength: titleMaximum))
    add(AttributeRequest(.subtitle, maxLength: subtitleMaximum))
    add(AttributeRequest(.message, maxLength: messageMaximum))
    add(AttributeRequest(.date))
    add(AttributeRequest(.messageSize))
    return list
  }

  /// Attributes a phone may omit: the reassembler does not wait for them past a short notification.
  static let optionalAttributes: Set<UInt8> = [
    NotificationAttributeID.positiveActionLabel.rawValue, NotificationAttributeID.negativeActionLabel.rawValue,
    NotificationAttributeID.messageSize.rawValue,
  ]
}
