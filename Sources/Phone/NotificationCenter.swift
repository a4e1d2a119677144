import ANCS
import Wire

/// One notification as the phone holds it.
public struct PhoneNotification: Hashable, Sendable {
  public var uid: UInt32
  public var appIdentifier: String
  public var category: CategoryID
  /// Silent and Important; the action flags follow from the labels below.
  public var flags: EventFlags
  public var title: String
  public var subtitle: String
  public var message: String
  /// yyyyMMdd'T'HHmmSS, or empty.
  public var date: String
  /// Non-nil when the notification offers a positive action (the PositiveAction flag).
  public var positiveAction: String?
  public var negativeAction: String?

  public init(
    uid: UInt32 = 0, appIdentifier: String, category: CategoryID = .other, flags: EventFlags = [], title: String = "",
    subtitle: String = "", message: String = "", date: String = "", positiveAction: String? = nil,
    negativeAction: String? = nil
  ) {
    self.uid = uid
    self.appIdentifier = appIdentifier
    self.category = category
    self.flags = flags
    self.title = title
    self.subtitle = subtitle
    self.message = message
    self.date = date
    self.positiveAction = positiveAction
    self.negativeAction = negativeAction
  }

  /// The EventFlags of its events: Silent and Important as set, the action flags from the labels.
  public var eventFlags: EventFlags {
    var flags = self.flags.intersection([.silent, .important])
    if positiveAction != nil { flags.insert(.positiveAction) }
    if negativeAction != nil { flags.insert(.negativeAction) }
    return flags
  }
}

/// The phone's notifications and apps: a plain value. UIDs are unique for the life of the
/// center (never reused), which makes them unique within every session.
public struct NotificationCenter: Sendable {
  /// Active notifications, oldest first.
  public private(set) var notifications: [PhoneNotification] = []
  /// Active notifications per category (CategoryCount), kept as they change.
  private var counts: [CategoryID: Int] = [:]
  private var wrapped = false
  /// App identifier to display name.
  public private(set) var apps: [String: String] = [:]
  private var nextUID: UInt32 = 1
  /// A new notification takes the UID of the last removed one (set by the fault switch
  /// reuse-uid, which breaks "never reuses a UID while it runs"; never by the rules).
  var reusesRemovedUIDs = false
  private var lastRemoved: UInt32?

  public init() {}

  public mutating func register(app identifier: String, name: String) { apps[identifier] = name }

  /// The display name: registered, or the identifier's last component ("com.example.chat" → "chat").
  public func displayName(of app: String) -> String? {
    if let name = apps[app] { return name }
    guard notifications.contains(where: { $0.appIdentifier == app }) else { return nil }
    return app.split(separator: ".").last.map(String.init) ?? app
  }

  public func notification(_ uid: UInt32) -> PhoneNotification? { index(of: uid).map { notifications[$0] } }

  /// Notifications are appended with increasing UIDs and removed in place, so the array stays
  /// sorted by UID: binary search.
  private func index(of uid: UInt32) -> Int? {
    if wrapped { return notifications.firstIndex { $0.uid == uid } }
    return notifications.binarySearch(uid) { $0.uid }
  }

  public func count(of category: CategoryID) -> Int { counts[category] ?? 0 }

  /// CategoryCount as an event carries it: saturates at 255.
  public func categoryCount(_ category: CategoryID) -> UInt8 { UInt8(min(255, count(of: category))) }

  /// Adds a notification with a fresh UID; returns it.
  public mutating func post(_ notification: PhoneNotification) -> PhoneNotification {
    var posted = notification
    posted.uid = nextUID
    if reusesRemovedUIDs, let reused = lastRemoved {
      // UIDs leave their order: lookups go linear.
      posted.uid = reused
      lastRemoved = nil
      wrapped = true
      notifications.append(posted)
      counts[posted.category, default: 0] += 1
      return posted
    }
    nextUID &+= 1
    if nextUID == 0 || nextUID == 0xFFFF_FFFF {
      // 0xFFFFFFFF is the watch's liveness probe. After four billion posts the order by UID
      // is lost, and lookups fall back to a linear search.
      nextUID = 1
      wrapped = true
    }
    notifications.append(posted)
    counts[posted.category, default: 0] += 1
    return posted
  }

  /// Replaces a notification's content, keeping its UID.
  public mutating func modify(_ uid: UInt32, _ change: (inout PhoneNotification) -> Void) -> PhoneNotification? {
    guard let index = index(of: uid) else { return nil }
    let before = notifications[index].category
    change(&notifications[index])
    notifications[index].uid = uid
    counts[before, default: 0] -= 1
    counts[notifications[index].category, default: 0] += 1
    return notifications[index]
  }

  public mutating func remove(_ uid: UInt32) -> PhoneNotification? {
    guard let index = index(of: uid) else { return nil }
    let removed = notifications.remove(at: index)
    counts[removed.category, default: 0] -= 1
    if reusesRemovedUIDs { lastRemoved = removed.uid }
    return removed
  }

  /// The Notification Source event for `notification` after `event` happened to it.
  public func event(_ event: EventID, for notification: PhoneNotification, extraFlags: EventFlags = [])
    -> NotificationSourceEvent
  {
    NotificationSourceEvent(
      eventID: event, eventFlags: notification.eventFlags.union(extraFlags), categoryID: notification.category,
      categoryCount: categoryCount(notification.category), notificationUID: notification.uid)
  }
}
